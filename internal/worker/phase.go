package worker

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/client"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// phaseRun is one phase on this worker. Three contexts nest:
//
//	stop   the controller said STOP (or the process is ending)
//	reqs   in-flight requests: cancelled at duration + grace, or on stop
//	sends  new sends: end at the duration, at grace, or on stop
type phaseRun struct {
	w     *worker
	c     *client.Client
	ph    *wire.PhaseShard
	start time.Time
	stop  context.Context
	reqs  context.Context
	sends context.Context
	wg    sync.WaitGroup

	pool  []schedule.Entry      // a cycling pool, whole
	count int                   // this worker's entries, when not cycling
	feed  <-chan schedule.Entry // this worker's entries, in order, made a little ahead

	prefill chan struct{} // --prefill-concurrency: a token per request between its send and its first token

	sessMu sync.Mutex      // multi-turn: one slot at a time takes a whole session from the feed
	peek   *schedule.Entry // the next session's first turn, read past the last one
}

// runPhase runs ph from start until its entries or its duration run out;
// src is where the phase's entries come from.
func (w *worker) runPhase(stop context.Context, c *client.Client, ph *wire.PhaseShard, src *schedule.Phase, start time.Time) {
	r := &phaseRun{w: w, c: c, ph: ph, start: start, stop: stop}
	var cancelReqs, cancelSends context.CancelFunc
	r.reqs, cancelReqs = context.WithCancel(stop)
	r.sends, cancelSends = context.WithCancel(r.reqs)
	defer cancelReqs()
	defer cancelSends()
	if ph.Prefill > 0 {
		r.prefill = make(chan struct{}, ph.Prefill)
		r.rampPrefill()
	}
	if ph.Cycle {
		pool, err := src.All()
		if err != nil {
			fmt.Fprintf(os.Stderr, "the %s phase's pool: %v\n", ph.Name, err)
		}
		r.pool = pool
	} else {
		r.count = ph.Count
		if src.Entries != nil {
			r.count = len(src.Entries) // a hand-made shard's own
		}
		done := make(chan struct{})
		fed := r.startFeed(src, done)
		defer func() { close(done); <-fed }()
	}
	if ph.DurationNs > 0 {
		end := start.Add(time.Duration(ph.DurationNs))
		t1 := time.AfterFunc(time.Until(end), cancelSends)
		t2 := time.AfterFunc(time.Until(end.Add(time.Duration(ph.GraceNs))), cancelReqs)
		defer t1.Stop()
		defer t2.Stop()
	}
	// (Bounded by the in-flight context, as the open loop's sends are: a
	// planned request is never dropped for a late start; see openLoop.)
	if !preciseSleepUntil(r.reqs, start) {
		return
	}
	switch {
	case ph.Open:
		r.openLoop()
	case ph.RateCentric:
		r.rateCentricLoop(src.Ticks(ph.Offset, ph.Stride, ph.Weights))
	case ph.Sessions:
		r.sessionLoop()
	default:
		r.closedLoop()
	}
	r.wg.Wait()
}

// feedAhead is how many entries the feed makes ahead of the sends, at
// least; a phase with more slots gets one per slot.
const feedAhead = 256

// startFeed makes this worker's entries of the phase in order, a little
// ahead of the sends, so that neither this process nor the controller ever
// holds the whole plan; the feed ends when they run out or done closes,
// and the returned channel closes when its goroutine has returned.
func (r *phaseRun) startFeed(src *schedule.Phase, done <-chan struct{}) <-chan struct{} {
	ch := make(chan schedule.Entry, max(1, min(r.count, max(feedAhead, r.slots()))))
	r.feed = ch
	it := src.Share(r.ph.Weights, r.ph.Offset)
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		defer close(ch)
		for it.Next(true) {
			select {
			case ch <- it.Entry():
			case <-done:
				return
			}
		}
		if err := it.Err(); err != nil {
			// (The controller made every entry before the run; the records
			// this leaves out are counted lost there.)
			fmt.Fprintf(os.Stderr, "the %s phase's entries: %v\n", r.ph.Name, err)
		}
	}()
	return fed
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// spinWindow is how long before a due time the scheduler stops sleeping
// and yields in a loop instead. Go's timers wake through epoll with
// millisecond resolution when the process is idle, so a plain sleep lands
// up to ~1 ms late (and a little more on a busy machine); the last stretch
// is spun. Its cost is at most this much
// CPU per request, only on the open loop's single scheduler goroutine.
const spinWindow = 2 * time.Millisecond

// preciseSleepUntil waits for t to within a few microseconds.
func preciseSleepUntil(ctx context.Context, t time.Time) bool {
	if d := time.Until(t); d > spinWindow {
		if !sleepUntil(ctx, t.Add(-spinWindow)) {
			return false
		}
	}
	for time.Now().Before(t) {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return ctx.Err() == nil
}

// unlockAt is when this worker's slot j opens under the concurrency ramp:
// the ceiling rises linearly from 1 to Ceiling over ConcRampNs, and global
// slot g opens at ramp·g/(Ceiling−1).
func (r *phaseRun) unlockAt(j int) time.Time {
	ph := r.ph
	if ph.ConcRampNs <= 0 || ph.Ceiling <= 1 {
		return r.start
	}
	g := min(j*max(ph.Stride, 1)+ph.Offset, ph.Ceiling-1)
	return r.start.Add(time.Duration(float64(ph.ConcRampNs) * float64(g) / float64(ph.Ceiling-1)))
}

// rampPrefill holds the worker's prefill slots that the ramp has not yet
// opened: the limit over all workers rises from 1 to Phase.Prefill over
// PrefillRamp, global slot g opening at ramp·g/(Prefill−1). The worker's
// slot j is global slot j·Stride+Offset (its shares are dealt as Split
// deals them, so the slots of all workers are 0..Prefill−1). A held slot
// is a token in the channel that no request put there; its opening takes
// it out, leaving room for a request.
func (r *phaseRun) rampPrefill() {
	ph := r.ph
	total := ph.Phase.Prefill
	if ph.PrefillRamp <= 0 || total <= 1 {
		return
	}
	for j := 0; j < ph.Prefill; j++ {
		g := min(j*max(ph.Stride, 1)+ph.Offset, total-1)
		if g == 0 {
			continue
		}
		r.prefill <- struct{}{} // (held: the channel has room for every slot)
		at := r.start.Add(time.Duration(float64(ph.PrefillRamp) * float64(g) / float64(total-1)))
		go func() {
			if sleepUntil(r.reqs, at) {
				<-r.prefill
			}
		}()
	}
}

// slots is how many of its Concurrency slots this worker can use: no more
// than it has requests, unless it cycles a pool (a concurrency of 10^8 for
// 64 requests is 64 slots, not 10^8 goroutines).
func (r *phaseRun) slots() int {
	if r.ph.Cycle {
		return r.ph.Concurrency
	}
	return min(r.ph.Concurrency, r.count)
}

// closedLoop keeps Concurrency requests in flight: each slot sends its next
// request as soon as its last one ends, until the entries (or, for a
// cycling pool, the duration) run out.
func (r *phaseRun) closedLoop() {
	var next atomic.Int64
	for j := 0; j < r.slots(); j++ {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if !sleepUntil(r.sends, r.unlockAt(j)) {
				return
			}
			for r.sends.Err() == nil {
				e, ok := r.entry(&next)
				if !ok || r.sends.Err() != nil {
					return
				}
				r.do(e, r.clock(), false)
			}
		}()
	}
}

// entry returns this worker's next request: the feed's next, or, in a
// cycling pool, its next request k·Stride+Offset, whose body is fresh in
// every cycle after the first.
func (r *phaseRun) entry(next *atomic.Int64) (schedule.Entry, bool) {
	ph := r.ph
	if !ph.Cycle {
		select {
		case e, ok := <-r.feed:
			return e, ok
		case <-r.sends.Done():
			return schedule.Entry{}, false
		}
	}
	if len(r.pool) == 0 {
		return schedule.Entry{}, false
	}
	k := int(next.Add(1) - 1)
	g := k*max(ph.Stride, 1) + ph.Offset
	if ph.Limit > 0 && g >= ph.Limit {
		return schedule.Entry{}, false // --request-count reached before the duration
	}
	e := r.pool[g%len(r.pool)]
	var words *tokenizer.Vocab // (nil: the builtin's, for a test's bare run)
	if r.w != nil {
		words = r.w.words()
	}
	e.Body = e.Fresh(g/len(r.pool), words)
	e.Index = g
	e.SessionID += "-" + strconv.Itoa(g)
	if schedule.Cancelled(ph.Seed, g, ph.CancelPct) {
		e.CancelAfterNs = ph.CancelDelay
	}
	return e, true
}

// openLoop sends each entry at its due time, from one scheduler goroutine.
// A due request waits for a free slot when there is a ceiling (and says so
// in its record); it never moves a later request's due time, which is an
// absolute offset from the phase's start.
func (r *phaseRun) openLoop() {
	var slots chan struct{}
	if r.ph.Concurrency > 0 {
		slots = make(chan struct{}, r.slots())
		r.wg.Add(1)
		go func() { // the ceiling's slots open on the ramp's schedule
			defer r.wg.Done()
			for j := 0; j < r.slots(); j++ {
				if !sleepUntil(r.reqs, r.unlockAt(j)) {
					return
				}
				slots <- struct{}{}
			}
		}()
	}
	// Every entry is in the plan (its due time is before the duration's
	// end), so each one ends as a record: sent, however late the scheduler
	// got to it on a busy machine (its lag shows that), or, when it never
	// could be, cancelled as unsent. (Tied to the duration, a late wake-up
	// once dropped the last due entries without a record.)
	for e := range r.feed {
		due := r.start.Add(time.Duration(e.DueNs))
		if !preciseSleepUntil(r.reqs, due) {
			r.unsent(e, true, "the run stopped before it was due")
			return
		}
		waited := false
		if slots != nil {
			select {
			case <-slots:
			default:
				waited = true
				select {
				case <-slots:
				case <-r.sends.Done():
					r.unsent(e, true, "still waiting for a concurrency slot when sending stopped")
					return
				}
			}
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.do(e, e.DueNs, waited)
			if slots != nil {
				slots <- struct{}{}
			}
		}()
	}
}

func (r *phaseRun) clock() int64 { return int64(time.Since(r.start)) }

// unsent records e (when has) and every entry left in the feed as
// planned and never sent: cancelled.
func (r *phaseRun) unsent(e schedule.Entry, has bool, why string) {
	mark := func(e schedule.Entry) {
		r.w.add(record.Record{Worker: r.w.opt.ID, Index: e.Index, SessionID: e.SessionID, ISL: e.ISL, MaxTokens: e.MaxTokens,
			Due: e.DueNs, Warmup: r.ph.Warmup(), ErrKind: record.ErrCancelled, CancelCause: record.CancelUnsent, ErrMsg: "not sent: " + why})
	}
	if has {
		mark(e)
	}
	for e := range r.feed {
		mark(e)
	}
}

// sessionLoop runs multi-turn sessions in a closed loop: each slot takes
// a whole session and sends its turns in order, each after the previous
// turn's answer and the turn's delay, with the session's history (every
// earlier turn and the server's own answer to it) before it; then the
// next session.
//
// With --user-centric-rate each slot is a user: user g (numbered across
// workers) starts at g·gap/users and sends each turn at least gap after
// its previous send (and after its answer), so the users together send
// at the rate.
func (r *phaseRun) sessionLoop() {
	gap := time.Duration(r.ph.UserGapNs)
	for j := 0; j < r.slots(); j++ {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			start := r.unlockAt(j)
			if gap > 0 && r.ph.Ceiling > 0 {
				g := j*max(r.ph.Stride, 1) + r.ph.Offset
				start = r.start.Add(gap * time.Duration(g) / time.Duration(r.ph.Ceiling))
			}
			if !preciseSleepUntil(r.sends, start) {
				return
			}
			var lastSent time.Time
			for r.sends.Err() == nil {
				turns, ok := r.session()
				if !ok {
					return
				}
				if turns[0].Dag != nil {
					if r.ph.Rate > 0 && !preciseSleepUntil(r.sends, r.start.Add(time.Duration(turns[0].DueNs))) {
						return
					}
					r.tree(turns)
					continue
				}
				var h history
				for _, e := range turns {
					switch {
					case gap > 0 && !lastSent.IsZero():
						// On the user's grid, gap after its previous send, or
						// at once when the answer came later than that.
						lastSent = lastSent.Add(gap)
						if now := time.Now(); now.After(lastSent) {
							lastSent = now
						}
						if d := r.ph.DurationNs; d > 0 && !lastSent.Before(r.start.Add(time.Duration(d))) {
							return // (due at or past the duration: not sent, as an open loop's)
						}
						if !preciseSleepUntil(r.sends, lastSent) {
							return
						}
					case gap > 0:
						lastSent = start
					case e.Turn == 0 && r.ph.Rate > 0:
						// A rate's session starts at its due time (or as
						// soon as a slot is free after it: no catch-up).
						if !preciseSleepUntil(r.sends, r.start.Add(time.Duration(e.DueNs))) {
							return
						}
					case e.DelayNs > 0:
						if !sleepUntil(r.sends, time.Now().Add(time.Duration(e.DelayNs))) {
							return
						}
					}
					if r.sends.Err() != nil {
						return
					}
					due := r.clock()
					if e.Turn == 0 && r.ph.Rate > 0 {
						due = e.DueNs // (its place on the arrival process: the lag is a full slot's wait)
					}
					if gap > 0 {
						due = int64(lastSent.Sub(r.start)) // (its place on the user's grid: the lag is what came after)
					}
					if !r.turn(e, due, &h) {
						return
					}
				}
			}
		}()
	}
}

// rateCentricLoop is AIPerf's rate-centric multi-turn mode (a rate, no
// --concurrency): every turn takes the next of this worker's ticks
// (schedule.Phase.Ticks), a session whose next turn is ready (its answer
// and delay have come) first, else a new session's first turn; a tick
// with neither is skipped, as AIPerf skips it. A turn's due time is its
// tick. It ends when every session has, or when the ticks (the duration)
// or the sends do; the turns left then were never part of the run, as a
// closed loop's after its duration.
func (r *phaseRun) rateCentricLoop(next func() (int64, bool)) {
	var (
		mu     sync.Mutex
		ready  []chan int64 // sessions waiting for a tick, in the order their turns became ready
		active atomic.Int64
		ended  = make(chan struct{})
	)
	defer close(ended)
	run := func(turns []schedule.Entry, due int64) {
		defer r.wg.Done()
		defer active.Add(-1)
		var h history
		for k, e := range turns {
			if k > 0 {
				if e.DelayNs > 0 && !sleepUntil(r.sends, time.Now().Add(time.Duration(e.DelayNs))) {
					return
				}
				c := make(chan int64, 1)
				mu.Lock()
				ready = append(ready, c)
				mu.Unlock()
				select {
				case due = <-c:
				case <-ended:
					return
				}
			}
			if r.sends.Err() != nil || !r.turn(e, due, &h) {
				return
			}
		}
	}
	fed := true
	for r.sends.Err() == nil {
		t, ok := next()
		if !ok || !preciseSleepUntil(r.sends, r.start.Add(time.Duration(t))) {
			return
		}
		mu.Lock()
		var c chan int64
		if len(ready) > 0 {
			c, ready = ready[0], ready[1:]
		}
		mu.Unlock()
		if c != nil {
			c <- t
			continue
		}
		if fed {
			if turns, ok := r.session(); ok {
				active.Add(1)
				r.wg.Add(1)
				go run(turns, t)
				continue
			}
			fed = false
		}
		if active.Load() == 0 {
			return // every session has ended
		}
	}
}

// session takes the feed's next whole session (its turns in order).
func (r *phaseRun) session() ([]schedule.Entry, bool) {
	r.sessMu.Lock()
	defer r.sessMu.Unlock()
	var turns []schedule.Entry
	if r.peek != nil {
		turns, r.peek = append(turns, *r.peek), nil
	}
	for {
		var e schedule.Entry
		var ok bool
		select {
		case e, ok = <-r.feed:
		case <-r.sends.Done():
			return nil, false
		}
		if !ok {
			return turns, len(turns) > 0
		}
		if e.Turn == 0 && len(turns) > 0 {
			r.peek = &e
			return turns, true
		}
		turns = append(turns, e)
	}
}

// do sends one request, hands its record to the worker's buffer and
// returns it.
func (r *phaseRun) do(e schedule.Entry, due int64, waited bool) record.Record {
	rec := record.Record{Worker: r.w.opt.ID, Index: e.Index, SessionID: e.SessionID, ISL: e.ISL, MaxTokens: e.MaxTokens,
		Due: due, SlotWait: waited, Warmup: r.ph.Warmup()}
	r.w.sent.Add(1)
	id := e.SessionID
	if e.Turn > 0 {
		id += "-turn" + strconv.Itoa(e.Turn) // (a request id of its own; the session id is the records')
	}
	ctx := r.reqs
	if r.prefill != nil {
		// In prefill from its send to its first token (or its end): wait
		// for room before sending, give it back at the first token.
		select {
		case r.prefill <- struct{}{}:
			var once sync.Once
			release := func() { once.Do(func() { <-r.prefill }) }
			defer release()
			ctx = client.WithFirstToken(ctx, release)
		case <-r.reqs.Done(): // (sent into a cancelled context: it ends at once, recorded as cancelled)
		}
	}
	if r.ph.Sessions {
		ctx = client.WithSession(ctx, e.SessionID) // (every turn to one server)
	}
	r.c.Do(ctx, e.Body, id, time.Duration(e.CancelAfterNs), e.MaxTokens, &rec)
	if rec.ErrKind == record.ErrCancelled {
		switch {
		case r.stop.Err() != nil:
			rec.CancelCause = record.CancelStop
		case r.reqs.Err() != nil:
			rec.CancelCause = record.CancelGrace
		default:
			rec.CancelCause = record.CancelPlanned
		}
	}
	rec.Turn = e.Turn
	r.w.add(rec)
	return rec
}
