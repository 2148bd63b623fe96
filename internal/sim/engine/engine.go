// Package engine is a discrete-event model of a continuous-batching
// inference engine in the manner of vLLM's scheduler: a running set of at
// most MaxNumSeqs sequences, a per-step token budget (chunked prefill), a
// paged KV cache of KVBlocks blocks that preempts when it is full, and a
// prefix cache keyed by block hash. It has no clock and no I/O: Step takes
// the step's start time and returns its modelled duration and the
// sequences that produced a token at its end, so the model can be tested
// offline and driven in real time by the simulator.
//
// It is a model, not an engine: step times come from a roofline-style cost
// function (a base, a term per decoding sequence, a term per context token
// they read, a term per prefill token), fitted to published figures (see
// Presets), not from running a network.
package engine

import (
	"container/list"
	"fmt"
	"math"
	"math/rand/v2"
)

// Config is an engine's shape and speed.
type Config struct {
	MaxNumSeqs       int  // sequences in the running batch, at most (vLLM max_num_seqs)
	MaxBatchedTokens int  // tokens one step processes, at most (max_num_batched_tokens)
	BlockSize        int  // tokens per KV block
	KVBlocks         int  // KV cache capacity, in blocks
	PrefixCaching    bool // full prompt blocks are shared by hash
	// A step of d decoding sequences reading c context tokens and p prefill
	// tokens takes StepBaseNs + d·PerSeqNs + c·PerCtxTokenNs + p·PerPrefillTokenNs
	// + a·PerPrefillAttnNs, where a sums each prefill chunk's tokens times
	// the context they attend to (the chunk's own and what came before it):
	// prefill attention grows with the square of the prompt.
	StepBaseNs        float64
	PerSeqNs          float64
	PerCtxTokenNs     float64
	PerPrefillTokenNs float64
	PerPrefillAttnNs  float64
	// The front end (the API server: HTTP, tokenization, the hand-off to
	// the engine) runs beside the engine: it adds to TTFT and costs no step
	// time. Each request takes FrontendSerialNs of its one thread, in
	// arrival order, so a burst queues there (a small model's server is
	// often bound by it), and then FrontendNs more before it reaches the
	// engine's queue.
	FrontendNs       float64
	FrontendSerialNs float64
	// Jitter is the relative, lognormal noise of each step's time, drawn
	// from Seed; Speed scales every step (2 = twice as slow).
	Jitter float64
	Speed  float64
	Seed   uint64
}

// Check reports a config that cannot run.
func (c Config) Check() error {
	switch {
	case c.MaxNumSeqs < 1:
		return fmt.Errorf("max-num-seqs %d: want at least 1", c.MaxNumSeqs)
	case c.MaxBatchedTokens < 1:
		return fmt.Errorf("max-num-batched-tokens %d: want at least 1", c.MaxBatchedTokens)
	case c.BlockSize < 1:
		return fmt.Errorf("block-size %d: want at least 1", c.BlockSize)
	case c.KVBlocks < 1:
		return fmt.Errorf("kv-blocks %d: want at least 1", c.KVBlocks)
	case c.StepBaseNs < 0 || c.PerSeqNs < 0 || c.PerCtxTokenNs < 0 || c.PerPrefillTokenNs < 0 || c.PerPrefillAttnNs < 0 || c.FrontendNs < 0 || c.FrontendSerialNs < 0:
		return fmt.Errorf("step costs must not be negative")
	case c.Jitter < 0 || c.Jitter > 1:
		return fmt.Errorf("jitter %g: want 0 to 1", c.Jitter)
	case c.Speed < 0:
		return fmt.Errorf("speed %g: must not be negative", c.Speed)
	}
	return nil
}

// A Frontend is the engine's API server: it gives each request, in
// arrival order, the time it reaches the engine's queue.
type Frontend struct {
	latency, serial int64
	free            int64 // when its thread is next free
}

// NewFrontend is the front end of cfg, speed applied.
func NewFrontend(cfg Config) *Frontend {
	sp := cfg.Speed
	if sp == 0 {
		sp = 1
	}
	return &Frontend{latency: int64(cfg.FrontendNs * sp), serial: int64(cfg.FrontendSerialNs * sp)}
}

// Ready takes a request that arrived at arrival (ns; no earlier than the
// last one's) and returns when it reaches the engine.
func (f *Frontend) Ready(arrival int64) int64 {
	f.free = max(f.free, arrival) + f.serial
	return f.free + f.latency
}

// Seq is one request in the engine.
type Seq struct {
	ISL, OSL int      // prompt tokens; tokens to generate (at least 1)
	Hashes   []uint64 // chained hashes of the prompt's full blocks (see BlockHashes)
	Arrival  int64    // ns; the engine admits in arrival order
	Ref      any      // the caller's

	// What happened, readable after each Step.
	Generated   int // tokens produced so far
	Cached      int // prompt tokens found in the prefix cache at its (last) admission
	Preemptions int

	target   int // tokens whose KV must be computed before it decodes: ISL, or ISL+generated after a preemption
	computed int // of target, computed (or found cached)
	shared   []*block
	private  int // blocks held that no other sequence can share
	state    int
	elem     *list.Element // in waiting
}

const (
	stWaiting = iota
	stRunning
	stDone
)

type block struct {
	hash uint64
	refs int
	lru  *list.Element // in the evictable list while refs == 0
}

// Stats are the engine's counters and gauges, as a vLLM server exports them.
type Stats struct {
	Running, Waiting  int
	KVUsage           float64 // used blocks / KVBlocks
	PromptTokens      int64   // prompt tokens of admitted requests
	GenerationTokens  int64
	PrefixQueries     int64 // prompt tokens looked up in the prefix cache
	PrefixHits        int64 // of those, found
	Preemptions       int64
	Steps             int64
	BusyNs            float64 // modelled time spent in steps
	FinishedRequests  int64
	PrefillTokens     int64 // tokens prefilled (recomputation after preemption included)
	MaxRunningReached int
}

// Engine is the model's state.
type Engine struct {
	cfg     Config
	rng     *rand.Rand
	waiting *list.List // of *Seq, FCFS; a preempted sequence goes back to the front
	running []*Seq     // in admission order: the newest is preempted first
	free    int        // blocks without a hash
	lru     *list.List // of *block with refs 0, oldest first: evicted first
	byHash  map[uint64]*block
	stats   Stats
}

// New returns an idle engine; cfg must pass Check.
func New(cfg Config) *Engine {
	if cfg.Speed == 0 {
		cfg.Speed = 1
	}
	return &Engine{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), waiting: list.New(),
		free: cfg.KVBlocks, lru: list.New(), byHash: map[uint64]*block{}}
}

// Config is the engine's config.
func (e *Engine) Config() Config { return e.cfg }

// BlockHashes chains the hashes of a prompt's full blocks of size bs:
// block j's hash covers tokens 0..(j+1)·bs, as vLLM's prefix cache does, so
// two prompts share block j only if they share everything before it.
func BlockHashes(tokens []uint64, bs int) []uint64 {
	var out []uint64
	h := uint64(0xcbf29ce484222325)
	for i, t := range tokens {
		h ^= t + 0x9e3779b97f4a7c15 + h<<6 + h>>2
		h *= 0x100000001b3
		if (i+1)%bs == 0 {
			out = append(out, h)
		}
	}
	return out
}

// Add queues s at the back of the waiting queue.
func (e *Engine) Add(s *Seq) {
	s.OSL = max(s.OSL, 1)
	s.target, s.state = s.ISL, stWaiting
	s.elem = e.waiting.PushBack(s)
}

// Abort takes s out (the client went away) and frees what it held.
func (e *Engine) Abort(s *Seq) {
	switch s.state {
	case stWaiting:
		e.waiting.Remove(s.elem)
	case stRunning:
		for i, r := range e.running {
			if r == s {
				e.running = append(e.running[:i], e.running[i+1:]...)
				break
			}
		}
		e.release(s)
	}
	s.state = stDone
}

// Fits reports whether a request of isl prompt and osl output tokens can
// ever run: its whole context must fit in the KV cache (a server refuses
// longer ones, as vLLM refuses prompts past max_model_len).
func (e *Engine) Fits(isl, osl int) bool {
	return e.blocksFor(isl+max(osl, 1)) <= e.cfg.KVBlocks
}

// Idle reports whether there is nothing to step.
func (e *Engine) Idle() bool { return len(e.running) == 0 && e.waiting.Len() == 0 }

// Stats returns the counters and gauges now.
func (e *Engine) Stats() Stats {
	st := e.stats
	st.Running, st.Waiting = len(e.running), e.waiting.Len()
	st.KVUsage = float64(e.cfg.KVBlocks-e.free-e.lru.Len()) / float64(e.cfg.KVBlocks)
	return st
}

// ResetPrefixCache forgets every cached block (POST /reset_prefix_cache):
// blocks no sequence holds become free, and blocks in use stop being
// shareable.
func (e *Engine) ResetPrefixCache() {
	e.free += e.lru.Len()
	e.lru.Init()
	for _, b := range e.byHash {
		b.hash = 0
	}
	clear(e.byHash)
}

func (e *Engine) blocksFor(tokens int) int { return (tokens + e.cfg.BlockSize - 1) / e.cfg.BlockSize }

func (s *Seq) held() int { return len(s.shared) + s.private }

// alloc takes n blocks for s: free ones first, then the least recently
// used cached ones.
func (e *Engine) alloc(s *Seq, n int) bool {
	if n <= 0 {
		return true
	}
	if e.free+e.lru.Len() < n {
		return false
	}
	for ; n > 0; n-- {
		if e.free > 0 {
			e.free--
		} else {
			b := e.lru.Remove(e.lru.Front()).(*block)
			delete(e.byHash, b.hash)
		}
		s.private++
	}
	return true
}

// release gives back what s holds; its shared blocks stay cached.
func (e *Engine) release(s *Seq) {
	e.free += s.private
	s.private = 0
	for _, b := range s.shared {
		b.refs--
		if b.refs == 0 {
			if b.hash != 0 {
				b.lru = e.lru.PushBack(b)
			} else {
				e.free++
			}
		}
	}
	s.shared = s.shared[:0]
}

// preempt sends s back to the front of the waiting queue, freeing its KV:
// it will recompute its prompt and what it generated so far.
func (e *Engine) preempt(s *Seq) {
	e.release(s)
	s.state, s.computed, s.target = stWaiting, 0, s.ISL+s.Generated
	s.Preemptions++
	e.stats.Preemptions++
	s.elem = e.waiting.PushFront(s)
}

// share turns s's computed full prompt blocks into cached ones.
func (e *Engine) share(s *Seq) {
	if !e.cfg.PrefixCaching {
		return
	}
	full := min(s.computed/e.cfg.BlockSize, len(s.Hashes))
	for j := len(s.shared); j < full && s.private > 0; j++ {
		h := s.Hashes[j]
		if h == 0 {
			return
		}
		if _, ok := e.byHash[h]; ok {
			return // another sequence computed it first: keep ours private
		}
		b := &block{hash: h, refs: 1}
		e.byHash[h] = b
		s.shared = append(s.shared, b)
		s.private--
	}
}

// admitPrefix looks s's prompt up in the prefix cache: the longest run of
// cached leading blocks, leaving at least one token to compute.
func (e *Engine) admitPrefix(s *Seq) {
	s.Cached = 0
	if !e.cfg.PrefixCaching || s.computed > 0 {
		return
	}
	for j, h := range s.Hashes {
		if (j+1)*e.cfg.BlockSize >= s.target {
			break
		}
		b, ok := e.byHash[h]
		if !ok {
			break
		}
		if b.refs == 0 {
			e.lru.Remove(b.lru)
			b.lru = nil
		}
		b.refs++
		s.shared = append(s.shared, b)
		s.computed += e.cfg.BlockSize
	}
	s.Cached = s.computed
}

// Step runs one scheduler step and returns its
// modelled duration, the sequences that produced a token at its end (their
// Generated already counts it) and those that finished. An idle engine
// returns 0 and nothing.
func (e *Engine) Step() (dur int64, emitted, finished []*Seq) {
	budget := e.cfg.MaxBatchedTokens
	var decodes []*Seq
	ctx := 0
	// Decodes first, each one token; a sequence that cannot get a block for
	// its next token preempts the newest running one (itself, last).
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		if s.computed < s.target {
			continue
		}
		need := e.blocksFor(s.ISL+s.Generated+1) - s.held()
		for !e.alloc(s, need) {
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			if victim == s {
				break
			}
		}
		if s.state != stRunning {
			break // it preempted itself: everything after it is gone too
		}
		decodes = append(decodes, s)
		ctx += s.ISL + s.Generated
		budget--
	}
	// Then prefill chunks: running sequences still prefilling, then new
	// ones from the waiting queue while the batch and the budget allow.
	prefill, attn := 0, 0.0
	var chunked []*Seq
	chunk := func(s *Seq) bool {
		n := min(s.target-s.computed, budget)
		if n <= 0 || !e.alloc(s, e.blocksFor(s.computed+n)-s.held()) {
			return false
		}
		attn += float64(n) * float64(s.computed+n)
		s.computed += n
		budget -= n
		prefill += n
		chunked = append(chunked, s)
		return true
	}
	for _, s := range e.running {
		if s.computed < s.target && budget > 0 {
			chunk(s)
		}
	}
	for budget > 0 && len(e.running) < e.cfg.MaxNumSeqs && e.waiting.Len() > 0 {
		s := e.waiting.Front().Value.(*Seq)
		e.admitPrefix(s)
		if !chunk(s) {
			e.release(s)
			s.computed, s.Cached = 0, 0
			break // the head of the queue waits for room
		}
		e.waiting.Remove(s.elem)
		s.state = stRunning
		if s.Preemptions == 0 {
			e.stats.PromptTokens += int64(s.ISL)
		}
		if e.cfg.PrefixCaching {
			e.stats.PrefixQueries += int64(s.target)
			e.stats.PrefixHits += int64(s.Cached)
		}
		e.running = append(e.running, s)
	}
	e.stats.MaxRunningReached = max(e.stats.MaxRunningReached, len(e.running))
	if len(decodes) == 0 && prefill == 0 {
		return 0, nil, nil
	}
	c := e.cfg
	d := c.StepBaseNs + float64(len(decodes))*c.PerSeqNs + float64(ctx)*c.PerCtxTokenNs + float64(prefill)*c.PerPrefillTokenNs + attn*c.PerPrefillAttnNs
	if c.Jitter > 0 {
		d *= math.Exp(c.Jitter * e.rng.NormFloat64())
	}
	d *= c.Speed
	dur = max(int64(d), 1)
	e.stats.Steps++
	e.stats.BusyNs += float64(dur)
	e.stats.PrefillTokens += int64(prefill)
	// At the step's end every decode and every finished prefill has a token.
	for _, s := range decodes {
		s.Generated++
		emitted = append(emitted, s)
	}
	for _, s := range chunked {
		e.share(s)
		if s.computed == s.target {
			s.Generated++
			emitted = append(emitted, s)
		}
	}
	e.stats.GenerationTokens += int64(len(emitted))
	kept := e.running[:0]
	for _, s := range e.running {
		if s.Generated >= s.OSL {
			e.release(s)
			s.state = stDone
			finished = append(finished, s)
			e.stats.FinishedRequests++
			continue
		}
		kept = append(kept, s)
	}
	clear(e.running[len(kept):])
	e.running = kept
	return dur, emitted, finished
}
