// Package schedule makes the plan: every request of a run, decided up front
// from the seed alone.
//
// The plan is the single source of truth for what is sent and when. Build
// decides its shape (phases, request counts) from the profile and seed; its
// entries are generated in order as they are asked for, the same way in
// the controller (inputs.json, the hash) and in every worker (its share),
// so no process holds a million-request plan whole. The same seed and
// flags give a byte-identical plan whatever the worker count and however
// the run goes, and its hash is the run's profile_hash.
//
// A plan has phases (an optional warmup, then profiling). A phase is a closed
// loop (each slot sends its next request when its last one ends) or an open
// loop (each request has an absolute due offset from the phase's start, from
// an arrival process or a fixed schedule, optionally capped by a concurrency
// ceiling). A duration-bound closed loop cannot know its request count up
// front: its entries are a pool reused in order, and everything else about
// request i (payload, cancellation) is still a pure function of (seed, i).
package schedule

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Entry is one planned request.
type Entry struct {
	Index         int             `json:"index"`
	SessionID     string          `json:"session_id"`
	DueNs         int64           `json:"due_ns"` // offset from the phase's start; 0 in a closed loop
	ISL           int             `json:"isl"`
	MaxTokens     int             `json:"max_tokens,omitempty"`
	CancelAfterNs int64           `json:"cancel_after_ns,omitempty"` // cancel this long after sending
	Body          json.RawMessage `json:"body"`
	// FreshAt−1 and FreshLen locate the prompt's first word in Body, in a
	// cycling pool of synthetic prompts (0: none); see Fresh.
	FreshAt  int `json:"fresh_at,omitempty"`
	FreshLen int `json:"fresh_len,omitempty"`
	// FreshID: what FreshAt locates is the first word's token id (a
	// tokens-in body), not its text.
	FreshID bool `json:"fresh_id,omitempty"`
	// A multi-turn session's turn (from 0; every turn of a session has its
	// SessionID and they come in order), and how long after the previous
	// turn's response it is sent. Its Body is the turn as a first message;
	// the worker puts the session's history (the earlier turns and the
	// server's own answers) before it when it sends it.
	Turn    int   `json:"turn,omitempty"`
	DelayNs int64 `json:"turn_delay_ns,omitempty"`
	// Prompt is the turn's own text (a worker threads it into the history),
	// and SystemISL the tokens of the system prompt sent before every turn,
	// which ISL counts once.
	Prompt    string `json:"-"`
	SystemISL int    `json:"-"`
}

// Fresh is the body of the entry's use in cycle c of its pool: from the
// second cycle on, its first word, the o-th of the plan's words v, is
// replaced by the (o+c)-th, so that no request of the first v.Len() cycles
// resends an earlier one's prompt (and hits the server's prefix cache)
// while every length stays: each word is one token.
func (e Entry) Fresh(c int, v *tokenizer.Vocab) json.RawMessage {
	if c == 0 || e.FreshAt == 0 || e.FreshAt-1+e.FreshLen > len(e.Body) {
		return e.Body
	}
	if v == nil {
		v = tokenizer.Builtin().Words()
	}
	at := e.FreshAt - 1
	var w string
	if e.FreshID {
		id, err := strconv.Atoi(string(e.Body[at : at+e.FreshLen]))
		o, spaced, ok := v.OfID(id)
		if err != nil || !ok {
			return e.Body
		}
		w = strconv.Itoa(v.ID(o+c, spaced))
	} else {
		o, ok := v.Index(string(e.Body[at : at+e.FreshLen]))
		if !ok {
			return e.Body
		}
		w = v.Word(o + c)
	}
	out := make([]byte, 0, len(e.Body)-e.FreshLen+len(w))
	out = append(append(append(out, e.Body[:at]...), w...), e.Body[at+e.FreshLen:]...)
	return out
}

// nthID is where the k-th id of a body's "token_ids" list sits (at, and
// its length n; at −1 when it has none).
func nthID(body []byte, k int) (at, n int) {
	key := []byte(`"token_ids":[`)
	i := bytes.Index(body, key)
	if i < 0 {
		return -1, 0
	}
	at = i + len(key)
	for ; k > 0; k-- {
		j := bytes.IndexByte(body[at:], ',')
		if j < 0 {
			return -1, 0
		}
		at += j + 1
	}
	for n = 0; at+n < len(body) && body[at+n] >= '0' && body[at+n] <= '9'; n++ {
	}
	return at, n
}

// Phase names.
const (
	PhaseWarmup    = "warmup"
	PhaseProfiling = "profiling"
)

// Phase is one stage of the run.
type Phase struct {
	Name        string  `json:"name"`
	Open        bool    `json:"open"`         // send at DueNs; otherwise a closed loop
	Ceiling     int     `json:"ceiling"`      // in-flight limit across all workers; 0: none (open loop only)
	Rate        float64 `json:"rate"`         // requested rate, requests/s (open loop from a rate)
	ConcRampNs  int64   `json:"conc_ramp_ns"` // the ceiling rises linearly from 1 over this long
	DurationNs  int64   `json:"duration_ns"`  // stop sending after this long; 0: when entries run out
	GraceNs     int64   `json:"grace_ns"`     // then wait this long for in-flight requests, and cancel the rest
	Cycle       bool    `json:"cycle"`        // Entries are a pool, reused in order until DurationNs
	Seed        uint64  `json:"seed"`         // decides cancellations of pool requests
	CancelPct   float64 `json:"cancel_pct"`
	CancelDelay int64   `json:"cancel_delay_ns"`
	Limit       int     `json:"limit,omitempty"`               // a cycling pool sends at most this many requests (--request-count with a duration); 0: none
	Sessions    bool    `json:"sessions,omitempty"`            // entries are multi-turn sessions' turns, each session's in a row; a slot runs a whole session
	Standalone  bool    `json:"standalone,omitempty"`          // a session's turns are whole prompts (a weka_trace's): no history threaded
	Prefill     int     `json:"prefill_concurrency,omitempty"` // --prefill-concurrency: requests at once between send and first token, all workers together
	UserGapNs   int64   `json:"user_gap_ns,omitempty"`         // --user-centric-rate: a user's (slot's) sends are at least this far apart; user g starts at g·gap/users
	// Entries are a hand-made phase's entries (a worker's shard in tests);
	// a built plan's phases generate theirs (Iter) and leave this nil.
	Entries []Entry `json:"entries"`
	// Count is how many entries a built phase generates.
	Count int  `json:"-"`
	gen   *gen // how a built phase makes its entries
}

// Warmup reports whether the phase is a warmup.
func (ph *Phase) Warmup() bool { return ph.Name == PhaseWarmup }

// Plan is the whole run.
type Plan struct {
	Seed   uint64  `json:"seed"`
	Phases []Phase `json:"phases"`
	// InputDigest is the sha256 of --input-file, which a worker generating
	// the same plan checks it reads too.
	InputDigest string `json:"-"`
	// Tokenizer counts the plan's lengths and makes its synthetic words.
	Tokenizer *tokenizer.Tokenizer `json:"-"`
}

// Words is the plan's vocabulary of single-token words (the builtin
// tokenizer's for a hand-made plan).
func (pl *Plan) Words() *tokenizer.Vocab {
	if pl.Tokenizer == nil {
		return tokenizer.Builtin().Words()
	}
	return pl.Tokenizer.Words()
}

// Profiling is the measured phase (the last).
func (pl *Plan) Profiling() *Phase { return &pl.Phases[len(pl.Phases)-1] }

// Cancelled decides, as a pure function of (seed, i), whether request i is
// one of the pct percent that are cancelled.
func Cancelled(seed uint64, i int, pct float64) bool {
	if pct <= 0 {
		return false
	}
	r := rand.New(Source(seed, StreamCancellations, uint64(i)))
	return r.Float64()*100 < pct
}

// builder carries what every phase's entries need.
type builder struct {
	p          *config.Profile
	kind       endpoint.Kind
	extra      map[string]json.RawMessage
	tok        *tokenizer.Tokenizer
	rankings   bool // a rankings endpoint: each request a query and passages
	imagesOnly bool // an image_retrieval endpoint: each request its images, no text
	audioOnly  bool // an audio_transcription endpoint: each request a clip, no text
}

// Build makes the plan for p with seed. It decides every phase's shape and
// request count; the entries themselves are generated when they are asked
// for (Phase.Iter), the same way in the controller and in every worker, so
// a plan of a million requests is never held whole.
func Build(p *config.Profile, seed uint64) (*Plan, error) {
	extra, err := config.ParseExtraInputs(p.ExtraInputs)
	if err != nil {
		return nil, err
	}
	kind, err := endpoint.Make(p.EndpointType, p.RequestTemplate, p.ResponseField)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(p.Tokenizer, p.TokenizerRevision)
	if err != nil {
		return nil, err
	}
	_, ranking := kind.(endpoint.Ranking)
	_, imagesOnly := kind.(endpoint.ImageRetrieval)
	_, audioOnly := kind.(endpoint.AudioTranscription)
	b := &builder{p: p, kind: kind, extra: extra, tok: tok, rankings: ranking, imagesOnly: imagesOnly, audioOnly: audioOnly}
	plan := &Plan{Seed: seed, Tokenizer: tok}
	if p.WarmupRequestCount > 0 || p.WarmupDuration > 0 {
		// Warmup draws from its own seed, so adding a warmup never changes
		// the profiling plan.
		plan.Phases = append(plan.Phases, *b.warmup(Root(seed, StreamWarmup)))
	}
	prof, digest, err := b.profiling(seed)
	if err != nil {
		return nil, err
	}
	plan.Phases = append(plan.Phases, *prof)
	plan.InputDigest = digest
	for i := range plan.Phases {
		// A request body that can't be built fails now, not in a worker.
		if it := plan.Phases[i].Iter(); !it.Next(true) && it.Err() != nil {
			return nil, it.Err()
		}
	}
	return plan, nil
}

func seconds(s float64) int64 { return int64(math.Round(s * float64(time.Second))) }

func (b *builder) lengths() dataset.Lengths {
	p := b.p
	mix, _ := config.ParseSeqDist(p.SeqDist) // (checked by Validate)
	return dataset.Lengths{ISLMean: p.ISLMean, ISLStddev: p.ISLStddev, OSLMean: p.OSLMean, OSLStddev: p.OSLStddev, Mix: mix}
}

func (b *builder) warmup(seed uint64) *Phase {
	p := b.p
	ph := &Phase{Name: PhaseWarmup, Seed: seed, GraceNs: seconds(p.GracePeriod), DurationNs: seconds(p.WarmupDuration)}
	rate := p.WarmupRequestRate
	if rate == 0 {
		rate = p.RequestRate
	}
	conc := p.WarmupConcurrency
	if conc == 0 {
		conc = p.Concurrency
	}
	ph.Ceiling = conc
	g := &gen{b: b, ids: seed, lengthsRoot: seed, wordsRoot: PayloadSeed(seed, p.Repeat), synthetic: true}
	ph.Count = p.WarmupRequestCount
	if rate > 0 {
		ph.Open, ph.Rate = true, rate
		if p.WarmupConcurrency == 0 && !p.ConcurrencySet {
			ph.Ceiling = 0
		}
		g.arrivals = &dueSpec{a: Poisson{}, seed: seed, rate: rate, n: p.WarmupRequestCount, limit: p.WarmupDuration}
		ph.Count = g.arrivals.count()
	} else if ph.Count == 0 {
		ph.Cycle, ph.Count = true, p.NumDatasetEntries
	}
	ph.gen = g
	return ph
}

func (b *builder) profiling(seed uint64) (*Phase, string, error) {
	p := b.p
	ph := &Phase{Name: PhaseProfiling, Seed: seed, Ceiling: p.Ceiling(), Prefill: p.PrefillConcurrency, ConcRampNs: seconds(p.ConcurrencyRampDuration),
		DurationNs: seconds(p.BenchmarkDuration), GraceNs: seconds(p.GracePeriod),
		CancelPct: p.CancellationRate, CancelDelay: seconds(p.CancellationDelay)}
	g := &gen{b: b, ids: seed, lengthsRoot: seed, wordsRoot: PayloadSeed(seed, p.Repeat), synthetic: p.InputFile == ""}
	g.shapes(p, seed)
	var digest string
	if p.InputFile != "" {
		var err error
		var blocks dataset.Blocks
		if p.CustomDatasetType == config.MooncakeTrace || p.CustomDatasetType == config.BailianTrace {
			// Each repeat its own blocks (none served from another's cache);
			// within a run, shared hash ids share their words.
			blocks = dataset.Blocks{Size: p.BlockSize(), Root: Root(g.wordsRoot, StreamBlocks)}
		}
		if p.CustomDatasetType == config.MultiTurnFile {
			if g.convs, err = dataset.IndexSessions(p.InputFile, b.tok); err != nil {
				return nil, "", err
			}
		} else if p.CustomDatasetType == config.WekaTrace {
			// Each repeat its own blocks, as a Mooncake trace's.
			if g.convs, err = dataset.IndexWeka(p.InputFile, b.tok, Root(g.wordsRoot, StreamBlocks)); err != nil {
				return nil, "", err
			}
		} else if p.PublicDataset == config.ShareGPT {
			if g.index, err = dataset.IndexShareGPT(p.InputFile, b.tok, Root(g.wordsRoot, StreamPayloads)); err != nil {
				return nil, "", err
			}
		} else if p.CustomDatasetType == config.BailianTrace {
			if g.index, err = dataset.IndexBailian(p.InputFile, b.tok, Root(g.wordsRoot, StreamPayloads), blocks); err != nil {
				return nil, "", err
			}
		} else if p.CustomDatasetType == config.BasetenTrace {
			if g.index, err = dataset.IndexBaseten(p.InputFile, b.tok, Root(g.wordsRoot, StreamPayloads)); err != nil {
				return nil, "", err
			}
		} else if p.CustomDatasetType == config.BurstGPTTrace {
			if g.index, err = dataset.IndexBurstGPT(p.InputFile, b.tok, Root(g.wordsRoot, StreamPayloads)); err != nil {
				return nil, "", err
			}
		} else if p.CustomDatasetType == config.RawPayload {
			if g.index, err = dataset.IndexRawPayload(p.InputFile, b.tok, p.Streaming); err != nil {
				return nil, "", err
			}
		} else if p.CustomDatasetType == config.InputsJSON {
			if g.index, err = dataset.IndexInputsJSON(p.InputFile, b.tok, p.Streaming); err != nil {
				return nil, "", err
			}
		} else if st, serr := os.Stat(p.InputFile); serr == nil && st.IsDir() && p.CustomDatasetType == config.RandomPool {
			if g.pools, digest, err = dataset.IndexPools(p.InputFile, b.tok, Root(g.wordsRoot, StreamPayloads)); err != nil {
				return nil, "", err
			}
		} else if g.index, err = dataset.IndexFile(p.InputFile, b.tok, Root(g.wordsRoot, StreamPayloads), blocks); err != nil {
			return nil, "", err
		}
		if b.audioOnly && g.index != nil {
			for j, m := range g.index.Lines {
				if !m.Audio {
					return nil, "", fmt.Errorf("%s line %d: --endpoint-type audio_transcription uploads each line's audio: it has no \"audio\" or \"audios\"", p.InputFile, j+1)
				}
			}
		}
		if _, edit := b.kind.(endpoint.ImageEdit); (edit || b.imagesOnly) && g.index != nil {
			for j, m := range g.index.Lines {
				if !m.Images {
					return nil, "", fmt.Errorf("%s line %d: --endpoint-type %s sends each line's images: it has no \"image\" or \"images\"", p.InputFile, j+1, p.EndpointType)
				}
			}
		}
		if b.rankings && g.index != nil {
			// Every line must have a query, before any load is sent.
			var missing []string
			for j, m := range g.index.Lines {
				if !m.Query && len(missing) < 5 {
					missing = append(missing, strconv.Itoa(j+1))
				}
			}
			if len(missing) > 0 {
				return nil, "", fmt.Errorf("%s: --endpoint-type %s needs each line's query and passages, as \"texts\": [{\"name\": \"query\", \"contents\": [...]}, {\"name\": \"passages\", \"contents\": [...]}]; line %s has none", p.InputFile, p.EndpointType, strings.Join(missing, ", "))
			}
		}
		if b.rankings && g.pools != nil && !slices.ContainsFunc(g.pools, dataset.Pool.Queries) {
			return nil, "", fmt.Errorf("%s: --endpoint-type %s needs a query from one of the folder's pools: a file named queries.jsonl (or query.jsonl), or lines with \"texts\": [{\"name\": \"query\", ...}]", p.InputFile, p.EndpointType)
		}
		if g.index != nil {
			digest = g.index.Digest // (taken as it was read)
		} else if g.convs != nil {
			digest = g.convs.Digest
		} else if g.pools != nil {
			// (taken as they were read)
		} else if digest, err = fileDigest(p.InputFile); err != nil {
			return nil, "", err
		}
		g.sampling, g.samplingRoot = p.DatasetSampling, Root(seed, StreamSampling)
		g.oslRoot = Root(seed, StreamFileOSL)
		if p.CustomDatasetType == config.RandomPool && g.sampling == "" {
			g.sampling = config.SamplingRandom // (AIPerf's random_pool: with replacement)
		}
	}
	switch {
	case p.Replays():
		ph.Open = true
		lines, d, err := fixedSchedule(p, g.index)
		if err != nil {
			return nil, "", err
		}
		g.lines, g.dues, ph.Count = lines, d, len(lines)
	case p.MultiTurn() && p.RequestRate > 0:
		// AIPerf's conversation-centric rate (with --concurrency): each
		// session starts on the arrival process, holds its slot for all
		// its turns, and sends each after the previous answer and delay.
		g.sessions(p, seed)
		ph.Sessions, ph.Rate = true, p.RequestRate
		ph.Standalone = g.convs != nil && g.convs.Standalone()
		arr, err := NewArrival(p.ArrivalPattern, p.ArrivalSmoothness)
		if err != nil {
			return nil, "", err
		}
		g.arrivals = &dueSpec{a: arr, seed: seed, rate: p.RequestRate, n: len(g.turns), limit: p.BenchmarkDuration, ramp: p.RateRampDuration}
		if n := g.arrivals.count(); n < len(g.turns) {
			g.turns = g.turns[:n] // (the sessions due inside --benchmark-duration)
		}
		for _, n := range g.turns {
			ph.Count += n
		}
	case p.RequestRate > 0:
		ph.Open, ph.Rate = true, p.RequestRate
		arr, err := NewArrival(p.ArrivalPattern, p.ArrivalSmoothness)
		if err != nil {
			return nil, "", err
		}
		// Both stop conditions: whichever comes first, as AIPerf does.
		n := p.RequestCount
		if p.BenchmarkDuration > 0 && !p.RequestCountSet {
			n = 0
		}
		g.arrivals = &dueSpec{a: arr, seed: seed, rate: p.RequestRate, n: n, limit: p.BenchmarkDuration, ramp: p.RateRampDuration}
		ph.Count = g.arrivals.count()
	case p.MultiTurn():
		g.sessions(p, seed)
		ph.Sessions = true
		ph.Standalone = g.convs != nil && g.convs.Standalone()
		if p.UserCentricRate > 0 {
			ph.UserGapNs = seconds(float64(p.NumUsers) / p.UserCentricRate)
		}
		for _, n := range g.turns {
			ph.Count += n
		}
	case p.BenchmarkDuration > 0:
		ph.Cycle, ph.Count = true, p.NumDatasetEntries
		if p.RequestCountSet {
			ph.Limit = p.RequestCount // and at most this many: whichever comes first
		}
	default:
		ph.Count = p.RequestCount
	}
	ph.gen = g
	if ph.Count == 0 {
		return nil, "", fmt.Errorf("the profile plans no requests (check --benchmark-duration, --request-rate and the fixed-schedule offsets)")
	}
	return ph, digest, nil
}

// fileDigest is the sha256 of a file, which a worker checks before it
// generates entries from the same file.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--input-file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("--input-file: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// fixedSchedule selects the file's timestamped lines inside the offsets,
// in timestamp order, and turns their timestamps into due offsets.
func fixedSchedule(p *config.Profile, x *dataset.Index) ([]int, []float64, error) {
	if x == nil {
		return nil, nil, fmt.Errorf("--fixed-schedule needs an --input-file of timestamped lines")
	}
	type ts struct {
		t float64
		i int
	}
	var sel []ts
	for i, l := range x.Lines {
		if !l.HasTime {
			return nil, nil, fmt.Errorf("--fixed-schedule: %s line %d has no \"timestamp\"", p.InputFile, i+1)
		}
		if l.TimestampMs < float64(p.FixedScheduleStartOffset) {
			continue
		}
		if p.FixedScheduleEndOffset > 0 && l.TimestampMs > float64(p.FixedScheduleEndOffset) {
			continue
		}
		if p.SynthesisMaxISL > 0 && int(l.ISL) > p.SynthesisMaxISL {
			continue // --synthesis-max-isl leaves it out
		}
		sel = append(sel, ts{l.TimestampMs, i})
	}
	sort.SliceStable(sel, func(a, b int) bool { return sel[a].t < sel[b].t })
	// The replay starts at --fixed-schedule-start-offset (AIPerf's meaning:
	// a request stamped at the offset is sent at once, not that long after
	// the start), or at the first timestamp with auto-offset.
	base := float64(p.FixedScheduleStartOffset)
	// (A Baseten trace's timestamps are Unix ms: its replay always starts
	// at its first.)
	if (p.FixedScheduleAutoOffset || p.CustomDatasetType == config.BasetenTrace) && len(sel) > 0 {
		base = sel[0].t
	}
	speedup := p.SynthesisSpeedupRatio
	if speedup <= 0 {
		speedup = 1
	}
	lines := make([]int, len(sel))
	dues := make([]float64, len(sel))
	for k, s := range sel {
		lines[k] = s.i
		dues[k] = (s.t - base) / 1000 / speedup // --synthesis-speedup-ratio
	}
	return lines, dues, nil
}

// gen is how a phase's entries are made. Entry i takes the i-th prompt
// (synthetic, drawn in order; or a file's, cycled), the i-th id of the
// phase's id stream, and its due time from the arrival process or the
// fixed schedule.
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
	turns                  []int             // multi-turn: each session's turns, in order (the last cut short by --request-count)
	delays                 uint64            // root of the turn delays
	convs                  *dataset.Sessions // a multi_turn file's conversations
	pools                  []dataset.Pool    // a random_pool folder's files: a request takes a line of each
	oslRoot                uint64            // --osl for file lines without an output length: request i's draw
}

// rankingsRequest is synthetic rankings request i: a query and passages
// of the --rankings-* lengths (normal, rounded, at least 1), words and
// lengths from the request's own source; n is their tokens together.
func (g *gen) rankingsRequest(i int, keep bool) (n int, query string, passages []string) {
	p := g.b.p
	r := rand.New(Source(g.lengthsRoot, StreamRankings, uint64(i))) // (lengths shared by repeats, words not)
	draw := func(mean, sd int) int {
		if sd <= 0 {
			return mean
		}
		return max(1, int(math.Round(float64(mean)+float64(sd)*r.NormFloat64())))
	}
	k := draw(p.RankingsPassagesMean, p.RankingsPassagesStddev)
	q := draw(p.RankingsQueryTokensMean, p.RankingsQueryTokensStddev)
	lens := make([]int, k)
	n = q
	for j := range lens {
		lens[j] = draw(p.RankingsPassageTokensMean, p.RankingsPassageTokensStddev)
		n += lens[j]
	}
	if !keep {
		return n, "", nil
	}
	v := g.b.tok.Words()
	r = rand.New(Source(g.wordsRoot, StreamRankings, uint64(i)))
	query = v.Text(q, r)
	for _, l := range lens {
		passages = append(passages, v.Text(l, r))
	}
	return n, query, passages
}

// userContext is session s's own context of n tokens
// (--user-context-prompt-length), from its own source.
func (g *gen) userContext(n, s int) string {
	return g.b.tok.Words().Text(n, rand.New(rand.NewPCG(Root(g.wordsRoot, StreamUserContexts), uint64(s))))
}

// imagesOf is synthetic request i's images (--image-*): their sizes from
// the request's own source (shared by repeats), their pixels from the
// repeat's (each repeat its own images).
func (g *gen) imagesOf(i int, keep bool) ([]string, error) {
	p := g.b.p
	r := rand.New(Source(g.lengthsRoot, StreamImages, uint64(i)))
	px := rand.New(Source(g.wordsRoot, StreamImages, uint64(i)))
	side := func(mean, sd float64) int {
		return max(1, int(math.Round(mean+sd*r.NormFloat64())))
	}
	var out []string
	for range p.ImageBatchSize {
		w, h := side(p.ImageWidthMean, p.ImageWidthStddev), side(p.ImageHeightMean, p.ImageHeightStddev)
		format := p.ImageFormat
		if format == "random" {
			format = [2]string{"png", "jpeg"}[r.IntN(2)]
		}
		if !keep {
			continue
		}
		u, err := dataset.SyntheticImage(w, h, format, px)
		if err != nil {
			return nil, fmt.Errorf("synthetic image %d of request %d: %w", len(out)+1, i, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// audioOf is synthetic request i's audio clips (--audio-*): lengths,
// rates and depths from the request's own source (shared by repeats),
// samples from the repeat's.
func (g *gen) audioOf(i int, keep bool) ([]endpoint.AudioClip, error) {
	p := g.b.p
	r := rand.New(Source(g.lengthsRoot, StreamAudio, uint64(i)))
	smp := rand.New(Source(g.wordsRoot, StreamAudio, uint64(i)))
	var out []endpoint.AudioClip
	for range p.AudioBatchSize {
		secs := max(0.1, p.AudioLengthMean+p.AudioLengthStddev*r.NormFloat64())
		rate := int(math.Round(p.AudioSampleRates[r.IntN(len(p.AudioSampleRates))] * 1000))
		depth := p.AudioDepths[r.IntN(len(p.AudioDepths))]
		if !keep {
			continue
		}
		a, err := dataset.SyntheticWAV(min(secs, dataset.MaxAudioSeconds), rate, depth, p.AudioChannels, smp)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		out = append(out, endpoint.AudioClip{Data: a.Data, Format: a.Format})
	}
	return out, nil
}

// drawOSL draws an output length from --osl and its stddev.
func drawOSL(p *config.Profile, r *rand.Rand) int {
	if p.OSLStddev <= 0 {
		return p.OSLMean
	}
	return max(1, int(math.Round(float64(p.OSLMean)+p.OSLStddev*r.NormFloat64())))
}

// shapes sets up the prefix shapes of synthetic prompts: a pool of
// --num-prefix-prompts prefixes and a shared system prompt, their words
// from the repeat's own root (each repeat its own, none served from
// another's cache; within a run they are shared, as they are meant to be).
func (g *gen) shapes(p *config.Profile, seed uint64) {
	words := func(n int, index uint64) string {
		return g.b.tok.Words().Text(n, rand.New(rand.NewPCG(Root(g.wordsRoot, StreamPrefixes), index)))
	}
	for k := 0; k < p.NumPrefixPrompts; k++ {
		g.prefixes = append(g.prefixes, words(p.PrefixPromptLength, uint64(k)))
	}
	g.prefixPicks = Root(seed, StreamPrefixPicks)
	if p.SharedSystemPromptLength > 0 {
		g.system = words(p.SharedSystemPromptLength, math.MaxUint64)
	}
}

// sessions lays out --conversation-num sessions, each of round(N(turn
// mean, turn stddev)) turns (at least 1; session s's count from its own
// source), stopping at --request-count turns when it was given.
func (g *gen) sessions(p *config.Profile, seed uint64) {
	g.delays = Root(seed, StreamTurnDelays)
	total := 0
	take := func(k int) bool { // (false: --request-count reached)
		if p.RequestCountSet && total+k > p.RequestCount {
			k = p.RequestCount - total
		}
		if k <= 0 {
			return false
		}
		g.turns = append(g.turns, k)
		total += k
		return true
	}
	if g.convs != nil { // a multi_turn file's, in file order
		for _, l := range g.convs.Lines {
			if !take(int(l.Count)) {
				break
			}
		}
		return
	}
	n := p.ConversationNum
	switch {
	case n > 0:
	case p.BenchmarkDuration > 0:
		n = p.NumDatasetEntries // (AIPerf's dataset of conversations; the duration stops the run)
	default:
		n = p.RequestCount // (one session per --request-count; that many turns at most)
	}
	mean := max(p.ConversationTurnMean, 1)
	for s := 0; s < n; s++ {
		k := int(math.Round(mean))
		if p.ConversationTurnStddev > 0 {
			k = int(math.Round(mean + p.ConversationTurnStddev*rand.New(Source(seed, StreamTurns, uint64(s))).NormFloat64()))
		}
		if !take(max(k, 1)) {
			break
		}
	}
}

// turnDelay is request i's delay after the previous turn's answer: its
// file's "delay" (ms), or N(mean, stddev) ms, not negative; times the
// ratio.
func (g *gen) turnDelay(p *config.Profile, i int, fileMs float64) int64 {
	d := p.TurnDelayMean
	if g.convs != nil {
		d = fileMs
	} else if p.TurnDelayStddev > 0 {
		d += p.TurnDelayStddev * rand.New(rand.NewPCG(g.delays, uint64(i))).NormFloat64()
	}
	ratio := p.TurnDelayRatio
	if ratio == 0 {
		ratio = 1
	}
	return int64(math.Round(max(d, 0) * ratio * float64(time.Millisecond)))
}

// Counts is how many of the phase's entries a RoundRobin of weights deals
// each worker (Share's shares): one by one, or a multi-turn session whole.
func (ph *Phase) Counts(weights []int) []int {
	counts := make([]int, len(weights))
	rr := NewRoundRobin(weights)
	if ph.gen != nil && ph.gen.turns != nil {
		for _, n := range ph.gen.turns {
			counts[rr.Next()] += n
		}
		return counts
	}
	for range ph.Len() {
		counts[rr.Next()]++
	}
	return counts
}

// dueSpec is an open loop's arrival process, laid out as Dues says, one
// due offset at a time.
type dueSpec struct {
	a           Arrival
	seed        uint64
	rate        float64
	n           int
	limit, ramp float64
	i           int
	tau         float64
	done        bool
}

// next is the next due offset, in seconds.
func (d *dueSpec) next() (float64, bool) {
	if d.done || (d.n > 0 && d.i >= d.n) || (d.n <= 0 && d.limit <= 0 && d.i > 0) {
		return 0, false // (neither a count nor a limit: one, not a loop forever)
	}
	if d.i > 0 {
		d.tau += d.a.Gap(d.seed, d.i-1) / d.rate
	}
	t := warp(d.tau, d.ramp)
	if d.limit > 0 && t >= d.limit {
		d.done = true
		return 0, false
	}
	d.i++
	return t, true
}

// count is how many due offsets the process lays out (a pass over its
// gaps, none kept).
func (d dueSpec) count() int {
	n := 0
	for _, ok := d.next(); ok; _, ok = d.next() {
		n++
	}
	return n
}

// Iter yields a phase's entries in order, each made when it is asked for.
// It is not safe for concurrent use.
type Iter struct {
	ph      *Phase
	share   *RoundRobin // when set, only the entries it deals to me
	me      int
	i       int
	prompts *dataset.Stream
	ids     *rand.Rand
	dues    *dueSpec
	f       *os.File   // the input file, open while its lines are read back
	pf      []*os.File // a random_pool folder's files, likewise
	perm    []int      // shuffle: this pass's order of a file's prompts
	epoch   int
	sess    int // multi-turn: the next entry's session and its turn there
	turn    int
	sessID  string // the session's id (its first turn's)
	mine    bool   // the session is this worker's share
	e       Entry
	err     error
}

// Iter returns an iterator over the phase's entries from the first: those
// of a hand-made phase (Entries), or those its plan generates.
func (ph *Phase) Iter() *Iter {
	it := &Iter{ph: ph}
	if g := ph.gen; ph.generated() {
		it.ids = Stream(g.ids, StreamIDs)
		if g.synthetic {
			it.prompts = dataset.NewStream(g.b.lengths(), g.b.tok.Words(), Stream(g.lengthsRoot, StreamLengths), Stream(g.wordsRoot, StreamPayloads))
		}
		if g.arrivals != nil {
			d := *g.arrivals
			it.dues = &d
		}
	}
	return it
}

// Next makes the next entry, which Entry then returns; false when the
// entries have run out or one could not be made (see Err). With keep false
// it makes the same draws but not the request body (Entry has the index
// and lengths only), for a worker passing over another worker's share.
func (it *Iter) Next(keep bool) bool {
	if it.share == nil {
		return it.next(keep)
	}
	for {
		// A multi-turn session is dealt whole, at its first turn.
		if g := it.ph.gen; g == nil || g.turns == nil || it.turn == 0 {
			it.mine = it.share.Next() == it.me
		}
		mine := it.mine
		if !it.next(keep && mine) {
			return false
		}
		if mine {
			return true
		}
	}
}

func (it *Iter) next(keep bool) bool {
	ph := it.ph
	if it.err != nil {
		return false
	}
	if !ph.generated() {
		if it.i >= len(ph.Entries) {
			return false
		}
		it.e = ph.Entries[it.i]
		it.i++
		return true
	}
	if it.i >= ph.Count {
		if it.f != nil {
			it.f.Close()
			it.f = nil
		}
		for k, f := range it.pf {
			if f != nil {
				f.Close()
				it.pf[k] = nil
			}
		}
		return false
	}
	g, i := ph.gen, it.i
	it.i++
	b := g.b
	var pr dataset.Prompt
	var query string // a rankings request's query and passages
	var passages []string
	var images []string // the request's images, as URLs
	var audios []endpoint.AudioClip
	var videos []string
	body := "" // a synthetic prompt's own text, after its prefix
	var fileDelay float64
	switch {
	case g.convs != nil:
		j, k := it.sess, it.turn
		line := g.convs.Lines[j]
		tm := g.convs.Turns[int(line.First)+k]
		pr.ISL, pr.MaxTokens, pr.SystemISL = int(tm.ISL+line.SystemISL), int(tm.MaxTokens), int(line.SystemISL)
		fileDelay = float64(tm.DelayMs)
		if keep {
			if !it.open(g.convs.Path) {
				return false
			}
			text, system, extra, err := g.convs.Turn(j, k, it.f)
			if err != nil {
				it.err = err
				return false
			}
			pr.Text, pr.System, pr.Extra = text, system, extra
		}
		if n := b.p.UserContextPromptLength; n > 0 && k == 0 {
			// The conversation's own context before its first turn (and so
			// in its history), as for a synthetic session.
			pr.ISL += n
			if keep {
				pr.Text = g.userContext(n, j) + " " + pr.Text
			}
		}
	case b.rankings && g.synthetic:
		pr.ISL, query, passages = g.rankingsRequest(i, keep)
	case it.prompts != nil:
		pr = it.prompts.Next(keep)
		body = pr.Text
		if b.p.Images() {
			if images, it.err = g.imagesOf(i, keep); it.err != nil {
				return false
			}
		}
		if b.p.Audio() {
			if audios, it.err = g.audioOf(i, keep); it.err != nil {
				return false
			}
		}

		if len(g.prefixes) > 0 {
			pre := g.prefixes[rand.New(rand.NewPCG(g.prefixPicks, uint64(i))).IntN(len(g.prefixes))]
			pr.ISL += b.p.PrefixPromptLength
			if keep {
				pr.Text = pre + " " + pr.Text
			}
		}
		if g.system != "" {
			pr.ISL += b.p.SharedSystemPromptLength
			pr.SystemISL = b.p.SharedSystemPromptLength
		}
		if n := b.p.UserContextPromptLength; n > 0 && g.turns != nil && it.turn == 0 {
			// The session's own context, before its first turn (and so in
			// its history): words from the session's own source.
			pr.ISL += n
			if keep {
				pr.Text = g.userContext(n, it.sess) + " " + pr.Text
			}
		}
	case g.pools != nil:
		// One line of each pool, drawn with replacement (AIPerf's random_pool
		// folder), sent as one request: texts joined, named texts together.
		var texts []string
		var named []dataset.NamedText
		for k, pool := range g.pools {
			j := rand.New(rand.NewPCG(g.samplingRoot^uint64(k+1)*phi, uint64(i))).IntN(len(pool.Lines))
			m := pool.Lines[j]
			pr.ISL += int(m.ISL)
			pr.MaxTokens = max(pr.MaxTokens, int(m.MaxTokens))
			if !keep {
				continue
			}
			if it.pf == nil {
				it.pf = make([]*os.File, len(g.pools))
			}
			if it.pf[k] == nil {
				f, err := os.Open(pool.Path)
				if err != nil {
					it.err = fmt.Errorf("--input-file: %w", err)
					return false
				}
				it.pf[k] = f
			}
			d, err := pool.ReadNamed(j, it.pf[k])
			if err != nil {
				it.err = err
				return false
			}
			text, extra, nt := d.Text, d.Extra, d.Named
			texts, named, images, videos = append(texts, text), append(named, nt...), append(images, d.Images...), append(videos, d.Videos...)
			for _, a := range d.Audios {
				audios = append(audios, endpoint.AudioClip{Data: a.Data, Format: a.Format})
			}
			if len(extra) > 0 {
				if pr.Extra == nil {
					pr.Extra = map[string]json.RawMessage{}
				}
				maps.Copy(pr.Extra, extra)
			}
		}
		pr.Text = strings.Join(texts, "\n")
		if b.rankings && keep {
			var ok bool
			if query, passages, ok = dataset.Query(named); !ok {
				it.err = fmt.Errorf("%s: request %d drew no query from the folder's pools", b.p.InputFile, i)
				return false
			}
		}
	case g.index != nil:
		j := it.order(i)
		if g.lines != nil {
			j = g.lines[i]
		}
		m := g.index.Lines[j]
		pr.ISL, pr.MaxTokens = int(m.ISL), int(m.MaxTokens)
		if mx := b.p.SynthesisMaxOSL; mx > 0 && pr.MaxTokens > mx {
			pr.MaxTokens = mx // --synthesis-max-osl
		}
		if keep {
			if !it.open(g.index.Path) {
				return false
			}
			d, err := g.index.Read(j, it.f)
			if err != nil {
				it.err = err
				return false
			}
			text, extra, named := d.Text, d.Extra, d.Named
			pr.Text, pr.Extra, images, videos = text, extra, d.Images, d.Videos
			for _, a := range d.Audios {
				audios = append(audios, endpoint.AudioClip{Data: a.Data, Format: a.Format})
			}
			if b.rankings {
				var ok bool
				if query, passages, ok = dataset.Query(named); !ok {
					it.err = fmt.Errorf("%s line %d: --endpoint-type %s needs a query: \"texts\": [{\"name\": \"query\", \"contents\": [...]}, {\"name\": \"passages\", \"contents\": [...]}]", g.index.Path, j+1, b.p.EndpointType)
					return false
				}
			}
		}
	}
	if b.imagesOnly || b.audioOnly {
		pr.Text, pr.ISL, pr.MaxTokens, body = "", 0, 0, "" // (its media alone)
	}
	raw := g.index != nil && g.index.Raw()
	if pr.MaxTokens == 0 && (g.index != nil || g.convs != nil || g.pools != nil) && b.p.OSLMean > 0 && !b.imagesOnly && !b.audioOnly && !raw {
		// A file's line without an output length takes --osl's (AIPerf's
		// precedence), drawn for request i from its own source.
		pr.MaxTokens = drawOSL(b.p, rand.New(rand.NewPCG(g.oslRoot, uint64(i))))
	}
	var id string
	turn := 0
	if g.turns != nil {
		// A session's turns share its first turn's id (drawn once a session).
		turn = it.turn
		if turn == 0 {
			it.sessID = uuid(it.ids)
		}
		id = it.sessID
		if it.turn++; it.turn == g.turns[it.sess] {
			it.sess, it.turn = it.sess+1, 0
		}
	} else if keep {
		id = uuid(it.ids)
	} else {
		it.ids.Uint64()
		it.ids.Uint64()
	}
	e := Entry{Index: i, SessionID: id, ISL: pr.ISL, MaxTokens: pr.MaxTokens, Turn: turn}
	if turn > 0 {
		e.DelayNs = g.turnDelay(b.p, i, fileDelay)
	}
	if g.turns != nil {
		e.SystemISL = pr.SystemISL
		if keep {
			e.Prompt = pr.Text
		}
	}
	switch {
	case g.dues != nil:
		e.DueNs = seconds(g.dues[i])
	case it.dues != nil && (g.turns == nil || turn == 0): // (a session's start, not its later turns)
		t, ok := it.dues.next()
		if !ok {
			it.err = fmt.Errorf("%s phase: the arrival process ended after %d of %d requests", ph.Name, i, ph.Count)
			return false
		}
		e.DueNs = seconds(t)
	}
	if !ph.Cycle && Cancelled(ph.Seed, i, ph.CancelPct) {
		e.CancelAfterNs = ph.CancelDelay
	}
	if keep {
		extra := b.extra
		if len(pr.Extra) > 0 { // a line's own "extra" wins over --extra-inputs, as in AIPerf
			extra = maps.Clone(b.extra)
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			maps.Copy(extra, pr.Extra)
		}
		system := g.system
		if pr.System != "" {
			system = pr.System
		}
		build := b.kind.Build
		if g.index != nil && g.index.Raw() {
			build = func(endpoint.Input) ([]byte, error) { return []byte(pr.Text), nil } // (the line is the body)
		}
		var ids []int
		if _, tokIn := b.kind.(endpoint.TokenIn); tokIn && (g.index == nil || !g.index.Raw()) {
			// The system prompt's ids, then the prompt's, each encoded on
			// its own as the client counts them.
			for _, text := range []string{system, pr.Text} {
				more, err := b.tok.Encode(text)
				if err != nil {
					it.err = fmt.Errorf("build request %d: tokenize its prompt: %w", i, err)
					return false
				}
				ids = append(ids, more...)
			}
		}
		req, err := build(endpoint.Input{Model: b.p.Model, Prompt: pr.Text, System: system, MaxTokens: pr.MaxTokens, Stream: b.p.Streaming,
			Usage: b.p.UseServerTokenCount, Extra: extra, Query: query, Passages: passages, Images: images, Audios: audios, Videos: videos, TokenIDs: ids})
		if err != nil {
			it.err = fmt.Errorf("build request %d: %w", i, err)
			return false
		}
		e.Body = req
		// In a cycling pool of synthetic prompts, each entry says where its
		// prompt's first word sits in the body (FreshAt, FreshLen), so that
		// the worker can give every cycle after the first its own first
		// word: a prompt sent again would otherwise be served from the
		// server's prefix cache.
		// (The first word of its own text, after any prefix, which is
		// meant to be served from the cache.)
		if ph.Cycle && g.synthetic && ids != nil {
			// A tokens-in body: the first word's id, the k-th of the
			// list (the words of body are its last ids, one each).
			if k := len(ids) - (strings.Count(body, " ") + 1); k >= 0 && k < len(ids) {
				if _, _, word := b.tok.Words().OfID(ids[k]); word {
					if at, n := nthID(req, k); at >= 0 && string(req[at:at+n]) == strconv.Itoa(ids[k]) {
						e.FreshAt, e.FreshLen, e.FreshID = at+1, n, true
					}
				}
			}
		} else if ph.Cycle && g.synthetic {
			first, _, _ := strings.Cut(body, " ")
			if _, word := b.tok.Words().Index(first); word {
				if at := bytes.Index(req, []byte(pr.Text)); at >= 0 {
					at += len(pr.Text) - len(body)
					e.FreshAt, e.FreshLen = at+1, len(first)
				}
			}
		}
	}
	it.e = e
	return true
}

// Share returns an iterator over worker me's share of a built phase: the
// entries a RoundRobin of weights deals to me, so each worker's share is
// spread over the whole phase. The others' are passed over (their draws
// made, their bodies not). A hand-made phase's entries are all its own.
func (ph *Phase) Share(weights []int, me int) *Iter {
	it := ph.Iter()
	if ph.generated() && len(weights) > 1 {
		it.share, it.me = NewRoundRobin(weights), me
	}
	return it
}

// RoundRobin deals requests to workers in proportion to their weights,
// interleaved (smooth weighted round robin): with weights 3:2 it deals
// 0,1,0,1,0 and again.
type RoundRobin struct {
	weights, cur []int
	total        int
}

// NewRoundRobin returns a dealer over weights.
func NewRoundRobin(weights []int) *RoundRobin {
	r := &RoundRobin{weights: weights, cur: make([]int, len(weights))}
	for _, w := range weights {
		r.total += w
	}
	return r
}

// Next is the worker the next request goes to.
func (r *RoundRobin) Next() int {
	best := 0
	for j, w := range r.weights {
		r.cur[j] += w
		if r.cur[j] > r.cur[best] {
			best = j
		}
	}
	r.cur[best] -= r.total
	return best
}

// order is which of a file's prompts entry i sends: in file order
// (sequential, the default), each pass over the file in its own seeded
// order (shuffle), or drawn with replacement (random).
func (it *Iter) order(i int) int {
	g := it.ph.gen
	n := len(g.index.Lines)
	switch g.sampling {
	case config.SamplingRandom:
		return rand.New(rand.NewPCG(g.samplingRoot, uint64(i))).IntN(n)
	case config.SamplingShuffle:
		if epoch := i / n; it.perm == nil || it.epoch != epoch {
			it.perm, it.epoch = rand.New(rand.NewPCG(g.samplingRoot, uint64(epoch))).Perm(n), epoch
		}
		return it.perm[i%n]
	}
	return i % n
}

// open opens the input file its lines are read back from, once (false,
// with Err set, when it can't).
func (it *Iter) open(path string) bool {
	if it.f != nil {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		it.err = fmt.Errorf("--input-file: %w", err)
		return false
	}
	it.f = f
	return true
}

// Entry is the entry the last Next made.
func (it *Iter) Entry() Entry { return it.e }

// Err is why Next stopped early, or nil.
func (it *Iter) Err() error { return it.err }

// All makes every entry of the phase: for a cycling pool (small), and
// tests.
func (ph *Phase) All() ([]Entry, error) {
	it := ph.Iter()
	out := make([]Entry, 0, ph.Len())
	for it.Next(true) {
		out = append(out, it.Entry())
	}
	return out, it.Err()
}

// generated reports whether the phase makes its entries (a built plan's)
// rather than holding them (a hand-made shard's).
func (ph *Phase) generated() bool { return ph.gen != nil && ph.Entries == nil }

// Len is how many entries the phase has: its requests, or the size of its
// cycling pool.
func (ph *Phase) Len() int {
	if !ph.generated() {
		return len(ph.Entries)
	}
	return ph.Count
}

// uuid draws a version-4-shaped UUID from r.
func uuid(r *rand.Rand) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// inputsFile is AIPerf's inputs.json shape.
type inputsFile struct {
	Data []inputSession `json:"data"`
}

type inputSession struct {
	SessionID string            `json:"session_id"`
	Phase     string            `json:"phase,omitempty"` // "warmup" for warmup sessions
	Payloads  []json.RawMessage `json:"payloads"`
}

// InputsJSON renders every phase's payloads as AIPerf's inputs.json.
func (pl *Plan) InputsJSON() ([]byte, error) {
	var b bytes.Buffer
	err := pl.WriteInputsJSON(&b)
	return b.Bytes(), err
}

// WriteInputsJSON writes inputs.json to w one session at a time, so a plan
// of a million requests is not rendered whole in memory. The bytes are
// json.MarshalIndent's of the whole file, indent two spaces.
func (pl *Plan) WriteInputsJSON(w io.Writer) error {
	n := 0
	for i := range pl.Phases {
		n += pl.Phases[i].Len()
	}
	if n == 0 {
		b, err := json.MarshalIndent(inputsFile{}, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.WriteString("{\n  \"data\": [\n")
	i := 0
	for k := range pl.Phases {
		ph := &pl.Phases[k]
		it := ph.Iter()
		for it.Next(true) {
			e := it.Entry()
			s := inputSession{SessionID: e.SessionID, Payloads: []json.RawMessage{e.Body}}
			if ph.Warmup() {
				s.Phase = PhaseWarmup
			}
			b, err := json.MarshalIndent(s, "    ", "  ")
			if err != nil {
				return err
			}
			bw.WriteString("    ")
			bw.Write(b)
			if i++; i < n {
				bw.WriteString(",\n")
			} else {
				bw.WriteString("\n")
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	bw.WriteString("  ]\n}\n")
	return bw.Flush()
}

// Hash is the profile_hash: sha256 over the model, endpoint shape and the
// whole plan (every phase's parameters and entries). What doesn't change the
// load (URL, headers, worker count, artifact folder) is left out, so a run
// against a new server build stays comparable with its baseline.
//
// A gate repeat (p.Repeat > 0) is hashed as the lone run's plan (repeat 0)
// marked "payloads per repeat": every repeat of a profile has one hash,
// whatever its own prompts, and it differs from the hash of runs that sent
// the same prompts each time (those were served from the server's cache).
func (pl *Plan) Hash(p *config.Profile) string {
	if p.Repeat != 0 {
		q := *p
		q.Repeat = 0
		if canon, err := Build(&q, pl.Seed); err == nil {
			pl = canon
		}
	}
	h := sha256.New()
	norm := struct {
		Model        string `json:"model"`
		EndpointType string `json:"endpoint_type"`
		Streaming    bool   `json:"streaming"`
		Payloads     string `json:"payloads,omitempty"`
		Tokenizer    string `json:"tokenizer"`
	}{p.Model, p.EndpointType, p.Streaming, "", ""}
	if pl.Tokenizer != nil {
		norm.Tokenizer = pl.Tokenizer.Digest()
	}
	if p.Repeat != 0 {
		norm.Payloads = "per-repeat"
	}
	enc := json.NewEncoder(h)
	enc.Encode(norm)
	if err := pl.writeJSON(h); err != nil {
		// (Build made the first entry of every phase; a later one failing
		// is not a plan.)
		return "sha256:unhashable: " + err.Error()
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// writeJSON writes the plan, entries and all, as json.Encoder's Encode
// would write the Plan struct with every phase's Entries filled in (the
// bytes every profile_hash so far was made of), one entry at a time.
func (pl *Plan) writeJSON(w io.Writer) error {
	head, _ := json.Marshal(&Plan{Seed: pl.Seed, Phases: []Phase{}})
	w.Write(head[:len(head)-2]) // {"seed":…,"phases":[
	for k := range pl.Phases {
		if k > 0 {
			w.Write([]byte{','})
		}
		ph := pl.Phases[k]
		ph.Entries = []Entry{}
		b, err := json.Marshal(&ph)
		if err != nil {
			return err
		}
		w.Write(b[:len(b)-2]) // {…,"entries":[
		it := pl.Phases[k].Iter()
		for n := 0; it.Next(true); n++ {
			if n > 0 {
				w.Write([]byte{','})
			}
			b, err := json.Marshal(it.Entry())
			if err != nil {
				return err
			}
			w.Write(b)
		}
		if err := it.Err(); err != nil {
			return err
		}
		w.Write([]byte("]}"))
	}
	_, err := w.Write([]byte("]}\n"))
	return err
}
