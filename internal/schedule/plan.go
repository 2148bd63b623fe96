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
	"encoding/json"
	"math/rand/v2"

	"github.com/aiperf-action/aiperf-action/internal/seeds"
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
	// Dag places a dag_jsonl turn in its tree (nil for any other input).
	Dag *DagStep `json:"dag,omitempty"`
}

// DagStep is a dag_jsonl turn's place in its tree. A tree (a root and
// every branch it reaches) is one session whose turns are numbered by
// place (Turn); a worker sends a turn after its conversation's earlier
// turns and the turns in Wait have their answers (a branch's parent
// turn, a join's children's last turns), and a FORK child's first turn
// after the history of its conversation to turn Fork−1, answer and all.
type DagStep struct {
	Conv int   `json:"conv"` // the conversation instance (0: the root's)
	Wait []int `json:"wait,omitempty"`
	Fork int   `json:"fork,omitempty"`
	// Before is the turn's user messages before its own text (Prompt):
	// they are in Body, and go into the history with it.
	Before []string `json:"-"`
	// Raw is the turn's messages as its file wrote them (authored
	// history, tool calls and results, media), sent as they are in place
	// of Prompt; they go into the history as they are.
	Raw []json.RawMessage `json:"-"`
	// Alone: the turn is sent as its body is, no history threaded in
	// (context_mode message_array_with_responses).
	Alone bool `json:"alone,omitempty"`
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
	RateCentric bool    `json:"rate_centric,omitempty"`        // sessions on a rate without a ceiling: every turn takes the next tick of the arrival process (Ticks)
	Prefill     int     `json:"prefill_concurrency,omitempty"` // --prefill-concurrency: requests at once between send and first token, all workers together
	PrefillRamp int64   `json:"prefill_ramp_ns,omitempty"`     // the prefill limit rises from 1 to Prefill over this long, one more at even steps
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

// Branches reports a phase whose sessions are dag_jsonl trees (DagStep).
func (ph *Phase) Branches() bool {
	return ph.gen != nil && ph.gen.convs != nil && ph.gen.convs.Dag != nil
}

// Cancelled decides, as a pure function of (seed, i), whether request i is
// one of the pct percent that are cancelled.
func Cancelled(seed uint64, i int, pct float64) bool {
	if pct <= 0 {
		return false
	}
	r := rand.New(seeds.Source(seed, seeds.StreamCancellations, uint64(i)))
	return r.Float64()*100 < pct
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
