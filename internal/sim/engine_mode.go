package sim

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
	"github.com/aiperf-action/aiperf-action/internal/sim/pace"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// engSeq is one request in engine mode: the model's sequence, and the due
// times of its tokens as the engine publishes them, step by step.
// It is the stream's pace.Schedule.
type engSeq struct {
	seq     engine.Seq
	arrival time.Time
	mu      sync.Mutex
	dues    []time.Time   // guarded by mu
	st      *pace.Stream  // its stream in the pacer, once it has one (guarded by mu)
	notify  chan struct{} // poked at each new due, for the blocking writers
	cached  atomic.Int64  // prompt tokens found in the prefix cache
	stallAt int           // faultStall: tokens from this one on go out stall later (−1: none)
	stall   time.Duration
}

// Due is token k's due time, stall applied, once the engine has run the
// step that makes it.
func (es *engSeq) Due(k int) (time.Time, bool) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if k >= len(es.dues) {
		return time.Time{}, false
	}
	if es.stallAt >= 0 && k >= es.stallAt {
		return es.dues[k].Add(es.stall), true
	}
	return es.dues[k], true
}

// paced gives es its stream in the pacer, for publish to wake.
func (es *engSeq) paced(st *pace.Stream) {
	es.mu.Lock()
	es.st = st
	es.mu.Unlock()
}

// wait blocks until token k's due time is known, or gone or done closes.
func (es *engSeq) wait(k int, gone, done <-chan struct{}) (time.Time, bool) {
	for {
		if t, ok := es.Due(k); ok {
			return t, true
		}
		select {
		case <-es.notify:
		case <-gone:
			return time.Time{}, false
		case <-done:
			return time.Time{}, false
		}
	}
}

// engineRun drives an engine.Engine in real time. One goroutine runs its
// steps back to back: at each step's (modelled) start it admits the
// requests that have arrived by then, asks the model for the step's
// duration, and publishes a due time of start + duration for every token
// the step produced; then it sleeps until that end, which starts the next
// step. The due times are the model's own schedule, so a late wake-up
// delays nothing that is written, as long as it is shorter than a step;
// how late the engine woke is kept (GET /sim/engine) to show that.
type engineRun struct {
	mu    sync.Mutex // guards eng, fe, inbox, gone, lag
	eng   *engine.Engine
	fe    *engine.Frontend
	inbox []*engSeq
	gone  []*engSeq
	kick  chan struct{}
	pace  *pace.Pacer
	woken []*pace.Stream // publish's, reused
	lag   *hdr.Histogram // µs the engine woke after each step's end
}

func newEngineRun(cfg engine.Config, p *pace.Pacer) *engineRun {
	return &engineRun{eng: engine.New(cfg), fe: engine.NewFrontend(cfg), kick: make(chan struct{}, 1), pace: p, lag: hdr.New(1, 60_000_000, 3)}
}

func (r *engineRun) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// queued is when a request that arrived at arrival reaches the engine's
// queue, through the front end.
func (r *engineRun) queued(arrival time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Unix(0, r.fe.Ready(arrival.UnixNano()))
}

// add submits a request (its arrival already stamped).
func (r *engineRun) add(es *engSeq) {
	r.mu.Lock()
	r.inbox = append(r.inbox, es)
	r.mu.Unlock()
	r.poke()
}

// abort takes a request out when its client went away.
func (r *engineRun) abort(es *engSeq) {
	r.mu.Lock()
	r.gone = append(r.gone, es)
	r.mu.Unlock()
	r.poke()
}

func (r *engineRun) fits(isl, osl int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.eng.Fits(isl, osl)
}

func (r *engineRun) stats() engine.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.eng.Stats()
}

func (r *engineRun) resetPrefixCache() {
	r.mu.Lock()
	r.eng.ResetPrefixCache()
	r.mu.Unlock()
}

func (r *engineRun) loop(ctx context.Context) {
	var start time.Time // the next step's modelled start
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		for _, es := range r.gone {
			r.eng.Abort(&es.seq)
		}
		r.gone = r.gone[:0]
		if r.eng.Idle() {
			if len(r.inbox) == 0 {
				r.mu.Unlock()
				select {
				case <-r.kick:
				case <-ctx.Done():
					return
				}
				continue
			}
			// An idle engine starts its next step when the first request arrived.
			earliest := r.inbox[0].arrival
			for _, es := range r.inbox {
				if es.arrival.Before(earliest) {
					earliest = es.arrival
				}
			}
			if earliest.After(start) {
				start = earliest
			}
		}
		sort.SliceStable(r.inbox, func(i, j int) bool { return r.inbox[i].arrival.Before(r.inbox[j].arrival) })
		keep := r.inbox[:0]
		for _, es := range r.inbox {
			if es.arrival.After(start) {
				keep = append(keep, es)
				continue
			}
			r.eng.Add(&es.seq)
		}
		clear(r.inbox[len(keep):])
		r.inbox = keep
		dur, emitted, _ := r.eng.Step()
		for _, s := range emitted {
			if s.Generated == 1 {
				s.Ref.(*engSeq).cached.Store(int64(s.Cached))
			}
		}
		r.mu.Unlock()
		if dur == 0 {
			// Nothing could run (only requests arriving later): wait for one.
			select {
			case <-r.kick:
			case <-time.After(time.Millisecond):
			case <-ctx.Done():
				return
			}
			continue
		}
		end := start.Add(time.Duration(dur))
		r.publish(emitted, end)
		if d := time.Until(end); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		late := time.Since(end)
		r.mu.Lock()
		r.lag.RecordValue(max(late.Microseconds(), 0))
		r.mu.Unlock()
		start = end
	}
}

// publish gives each emitted sequence its next token's due time, and puts
// a stream parked for it back into the pacer.
func (r *engineRun) publish(emitted []*engine.Seq, due time.Time) {
	woken := r.woken[:0]
	for _, s := range emitted {
		es := s.Ref.(*engSeq)
		es.mu.Lock()
		es.dues = append(es.dues, due)
		if es.st != nil {
			woken = append(woken, es.st)
		}
		es.mu.Unlock()
		select {
		case es.notify <- struct{}{}:
		default:
		}
	}
	r.pace.Known(woken...)
	clear(woken)
	r.woken = woken[:0]
}

// promptHashes are the chained block hashes of a request's prompt words,
// for the engine's prefix cache; n is how many words.
func promptHashes(req *request, bs int) (hashes []uint64, n int) {
	var toks []uint64
	for _, id := range req.TokenIDs { // (a tokens-in prompt: its ids)
		toks = append(toks, uint64(id)*0x9e3779b97f4a7c15+1)
	}
	promptTexts(req, func(text string) {
		for _, w := range strings.FieldsFunc(text, tokenizer.IsSpace) {
			h := fnv.New64a()
			h.Write([]byte(w))
			toks = append(toks, h.Sum64())
		}
	})
	return engine.BlockHashes(toks, bs), len(toks)
}

// engineHandler serves GET /sim/engine: the engine's counters, how late it
// woke for its steps (harmless while shorter than a step: due times are
// the model's), and how late the pacer wrote each chunk after its modelled
// due time (the schedule as kept).
func (s *Server) engineHandler(w http.ResponseWriter, r *http.Request) {
	st := s.engine.stats()
	s.engine.mu.Lock()
	lag := map[string]float64{"p50_us": float64(s.engine.lag.ValueAtQuantile(50)), "p99_us": float64(s.engine.lag.ValueAtQuantile(99)),
		"max_us": float64(s.engine.lag.Max()), "steps": float64(s.engine.lag.TotalCount())}
	s.engine.mu.Unlock()
	chunk, step, _ := s.pace.Lateness()
	q := func(l pace.Lag) map[string]float64 {
		return map[string]float64{"p50_us": l.P50, "p99_us": l.P99, "max_us": l.Max, "n": float64(l.N)}
	}
	late, stepLate := q(chunk), q(step)
	b, _ := json.Marshal(map[string]any{"stats": st, "wake_lag": lag, "write_lag": late, "step_write_lag": stepLate, "config": s.cfg.Engine})
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
