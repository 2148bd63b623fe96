package schedule

import (
	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
)

// gen is how a phase's entries are made. Entry i takes the i-th prompt of
// the phase's source (synthetic, drawn in order; or a file's, cycled), the
// i-th id of the phase's id stream, and its due time from the arrival
// process or the fixed schedule.
type gen struct {
	b                      *builder
	ids                    uint64 // root of the id stream
	lengthsRoot, wordsRoot uint64 // roots of a synthetic prompt stream
	synthetic              bool
	index                  *dataset.Index // an input file's lines, read back as their requests are built
	lines                  []int          // a fixed schedule's lines of index, in order (nil: every line)
	sampling               string         // how a file's prompts are taken: sequential, shuffle or random
	samplingRoot           uint64
	prefixes               []string          // synthetic prompts: the pool one of which starts each (--num-prefix-prompts)
	prefixPicks            uint64            // root of which prefix request i takes
	system                 string            // the shared system prompt, or ""
	dues                   []float64         // a fixed schedule's due offsets, seconds
	arrivals               *dueSpec          // an arrival process's
	ticks                  *dueSpec          // a rate-centric phase's arrival process, endless (Ticks)
	turns                  []int             // multi-turn: each session's turns, in order (the last cut short by --request-count)
	delays                 uint64            // root of the turn delays
	convs                  *dataset.Sessions // a multi_turn file's conversations
	pools                  []dataset.Pool    // a random_pool folder's files: a request takes a line of each
	oslRoot                uint64            // --osl for file lines without an output length: request i's draw
	modelRoot              uint64            // --model-selection-strategy random: request i's draw
}

// prompt is what a source makes of request i: its lengths always, and,
// when its body is kept, its text, media and a rankings request's query
// and passages.
type prompt struct {
	dataset.Prompt
	query    string
	passages []string
	batch    []string // more text inputs after the prompt (--prompt-batch-size)
	images   []string // as URLs
	audios   []endpoint.AudioClip
	videos   []string
	own      string  // a synthetic prompt's own text, after its prefix (where a fresh first word goes)
	delayMs  float64 // a conversation file's delay before this turn
	dag      *DagStep
	ownSys   bool             // a dag_jsonl turn's own system prompt (System, maybe none), not the line's
	think    *dataset.DagTurn // an orchestrator round's think time: a lognormal around delayMs
}

// at is where in the plan's sessions a request is: its session and its
// turn there (0 and 0 for single-turn requests).
type at struct{ sess, turn int }

// A source makes each request's prompt, in order: request i's is a pure
// function of the plan and i (and, for a conversation, where it is),
// whatever came before it. With keep false it makes the same draws but
// only the lengths. An iterator has a source of its own (it may hold open
// files and a pass's order), which close releases.
type source interface {
	prompt(i int, pos at, keep bool) (prompt, error)
	close()
}

// source is the iterator's own source of the phase's prompts.
func (g *gen) source() source {
	switch {
	case g.convs != nil:
		return &conversations{g: g}
	case g.synthetic && g.b.rankings:
		return rankingsSource{g}
	case g.synthetic:
		return &synthetic{g: g, stream: dataset.NewStream(g.b.lengths(), g.b.tok.Words(), seeds.Stream(g.lengthsRoot, seeds.StreamLengths), seeds.Stream(g.wordsRoot, seeds.StreamPayloads))}
	case g.pools != nil:
		return &pools{g: g}
	}
	return &fileLines{g: g}
}
