package worker

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/client"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
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
}

// runPhase runs ph from start until its entries or its duration run out.
func (w *worker) runPhase(stop context.Context, c *client.Client, ph *wire.PhaseShard, start time.Time) {
	r := &phaseRun{w: w, c: c, ph: ph, start: start, stop: stop}
	var cancelReqs, cancelSends context.CancelFunc
	r.reqs, cancelReqs = context.WithCancel(stop)
	r.sends, cancelSends = context.WithCancel(r.reqs)
	defer cancelReqs()
	defer cancelSends()
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
	if ph.Open {
		r.openLoop()
	} else {
		r.closedLoop()
	}
	r.wg.Wait()
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

// slots is how many of its Concurrency slots this worker can use: no more
// than it has requests, unless it cycles a pool (a concurrency of 10^8 for
// 64 requests is 64 slots, not 10^8 goroutines).
func (r *phaseRun) slots() int {
	if r.ph.Cycle {
		return r.ph.Concurrency
	}
	return min(r.ph.Concurrency, len(r.ph.Entries))
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
				k := int(next.Add(1) - 1)
				e, ok := r.entry(k)
				if !ok {
					return
				}
				r.do(e, r.clock(), false)
			}
		}()
	}
}

// entry returns this worker's k-th request.
func (r *phaseRun) entry(k int) (schedule.Entry, bool) {
	ph := r.ph
	if !ph.Cycle {
		if k >= len(ph.Entries) {
			return schedule.Entry{}, false
		}
		return ph.Entries[k], true
	}
	if len(ph.Entries) == 0 {
		return schedule.Entry{}, false
	}
	g := k*max(ph.Stride, 1) + ph.Offset
	e := ph.Entries[g%len(ph.Entries)]
	e.Body = e.Fresh(g / len(ph.Entries))
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
	for i, e := range r.ph.Entries {
		due := r.start.Add(time.Duration(e.DueNs))
		if !preciseSleepUntil(r.reqs, due) {
			r.unsent(r.ph.Entries[i:], "the run stopped before it was due")
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
					r.unsent(r.ph.Entries[i:], "still waiting for a concurrency slot when sending stopped")
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

// unsent records planned entries that were never sent, as cancelled.
func (r *phaseRun) unsent(es []schedule.Entry, why string) {
	for _, e := range es {
		r.w.add(record.Record{Worker: r.w.opt.ID, Index: e.Index, SessionID: e.SessionID, ISL: e.ISL, MaxTokens: e.MaxTokens,
			Due: e.DueNs, Warmup: r.ph.Warmup(), ErrKind: record.ErrCancelled, CancelCause: record.CancelUnsent, ErrMsg: "not sent: " + why})
	}
}

// do sends one request and hands its record to the worker's buffer.
func (r *phaseRun) do(e schedule.Entry, due int64, waited bool) {
	rec := record.Record{Worker: r.w.opt.ID, Index: e.Index, SessionID: e.SessionID, ISL: e.ISL, MaxTokens: e.MaxTokens,
		Due: due, SlotWait: waited, Warmup: r.ph.Warmup()}
	r.w.sent.Add(1)
	r.c.Do(r.reqs, e.Body, e.SessionID, time.Duration(e.CancelAfterNs), e.MaxTokens, &rec)
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
	r.w.add(rec)
}
