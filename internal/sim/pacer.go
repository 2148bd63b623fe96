package sim

import (
	"container/heap"

	"errors"
	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"sync"
	"syscall"
	"time"
)

// A pacer writes its streams' chunks from one goroutine, each at its due
// time, straight to the socket with one non-blocking write. Under
// load this is what keeps the simulator cheap: a chunk costs its write
// syscall and nothing else, where a goroutine per stream paid for a
// timer, a wake-up, net/http's chunk writer and a flush (measured at
// concurrency 512: 16 µs of CPU a chunk before, see the README's
// calibrate section for after). A socket that cannot take a whole chunk
// (a client that stopped reading) is handed back to its own goroutine,
// which finishes the stream with blocking writes, so one slow client
// never holds up the others. There is one pacer for all streams: with one
// per P (tried), the simulator took both cores from the client at
// concurrency 512 and the TTFT p99 error doubled.
type pacer struct {
	mu       sync.Mutex
	q        streamQueue
	w        *waiter // nil: sleep on Go timers, woken through wake
	wake     chan struct{}
	stop     chan struct{}
	once     sync.Once
	late     *hdr.Histogram // engine mode: µs each chunk went out after its due time (guarded by mu)
	stepLate *hdr.Histogram // the same for the first chunk of each step
	lastDue  time.Time
}

// The pacer sleeps on its timerfd while fewer than preciseBelow streams
// are queued, waking at each due time but no sooner than quantum after its
// last wake-up. With more, it sleeps on a Go timer, which wakes up to a
// millisecond late and so writes what fell due meanwhile in one batch:
// under load that batching is worth more than the precision (measured at
// 512 streams: the timerfd cost the simulator 0.03–0.13 of a core more and
// the TTFT p50 error was lower on Go timers in 5 of 8 paired runs).
const (
	preciseBelow = 32
	quantum      = 200 * time.Microsecond
)

// paced is one stream in the pacer.
type paced struct {
	rc   syscall.RawConn
	next time.Time // when chunk k is due
	k, n int
	// chunk appends chunk k's bytes, HTTP chunk framing included (the
	// last one carries the stream's end).
	chunk func(k int, b []byte) []byte
	due   func(k int) time.Time // exact mode: when chunk k is due
	// eng, in engine mode, learns each chunk's due time step by step: a
	// stream whose next due is not known yet is parked (out of the heap)
	// until the engine publishes it.
	eng     *engSeq
	parked  bool // guarded by pacer.mu
	truth   *Truth
	arrival time.Time
	last    time.Time
	buf     []byte
	rest    []byte // what the socket did not take: the stream leaves the pacer
	err     error
	done    chan struct{}
	idx     int  // in the heap; -1 when out of it (guarded by pacer.mu)
	abort   bool // the client went away (guarded by pacer.mu)
}

// errGone is a stream whose client went away.
var errGone = errors.New("the client went away")

func newPacer() *pacer {
	return &pacer{w: newWaiter(), wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// add queues st and returns at once; st.done closes when the pacer is
// finished with it.
func (p *pacer) add(st *paced) {
	p.once.Do(func() { go p.run() })
	p.mu.Lock()
	if st.eng != nil {
		st.eng.st = st
	}
	first := p.scheduleLocked(st)
	p.mu.Unlock()
	p.kick(first)
}

// scheduleLocked queues st at its next chunk's due time, or parks it when
// the engine has not said it yet; true when st is now first in the heap.
func (p *pacer) scheduleLocked(st *paced) bool {
	if st.eng != nil {
		if st.k >= len(st.eng.dues) {
			st.parked = true
			return false
		}
		st.next = st.eng.dueAt(st.k)
	} else {
		st.next = st.due(st.k)
	}
	heap.Push(&p.q, st)
	first := p.q[0] == st
	if first && p.w != nil {
		p.w.arm(max(time.Until(st.next), 0)) // (negative would disarm)
	}
	return first
}

// kick wakes the pacer when a stream became first (whichever way it
// sleeps; a stale wake-up is harmless).
func (p *pacer) kick(first bool) {
	if first {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// remove takes st out when its client went away: true if it was waiting
// in the heap (and is now the caller's), false if the pacer holds it now
// (it closes st.done soon, without writing again).
func (p *pacer) remove(st *paced) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st.abort = true
	if st.parked {
		st.parked, st.err = false, errGone
		return true
	}
	if st.idx < 0 {
		return false
	}
	heap.Remove(&p.q, st.idx)
	st.err = errGone
	return true
}

func (p *pacer) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
		if p.w != nil {
			p.w.close()
		}
	}
}

func (p *pacer) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []*paced
	var woke time.Time
	for {
		p.mu.Lock()
		now := time.Now()
		wait := time.Duration(-1) // nothing queued
		for len(p.q) > 0 {
			if d := p.q[0].next.Sub(now); d > 0 {
				wait = d
				break
			}
			due = append(due, heap.Pop(&p.q).(*paced))
		}
		precise := p.w != nil && len(p.q) < preciseBelow
		if len(due) == 0 && precise {
			if wait >= 0 {
				wait = max(wait, quantum-now.Sub(woke))
			}
			p.w.arm(wait)
		}
		p.mu.Unlock()
		if len(due) == 0 && precise {
			if p.w.wait() != nil {
				return // closed
			}
			woke = time.Now()
			continue
		}
		if len(due) == 0 {
			if wait < 0 {
				wait = time.Hour
			}
			t.Reset(wait)
			select {
			case <-t.C:
			case <-p.wake:
			case <-p.stop:
				return
			}
			continue
		}
		for i, st := range due {
			due[i] = nil
			k := st.k
			more := p.write(st)
			p.mu.Lock()
			if st.eng != nil && st.k > k && p.late != nil {
				// How far behind its modelled due time the chunk went out,
				// and, for the first chunk of each engine step (a step's
				// tokens share one due time), how far behind the step's end.
				late := max(st.last.Sub(st.next).Microseconds(), 0)
				p.late.RecordValue(late)
				if !st.next.Equal(p.lastDue) {
					p.stepLate.RecordValue(late)
					p.lastDue = st.next
				}
			}
			if more && st.abort {
				more, st.err = false, errGone
			}
			if more {
				p.scheduleLocked(st)
			}
			p.mu.Unlock()
			if !more {
				close(st.done)
			}
		}
		due = due[:0]
	}
}

// write sends st's chunk k and reports whether st stays in the pacer.
func (p *pacer) write(st *paced) bool {
	st.buf = st.chunk(st.k, st.buf[:0])
	b := st.buf
	for len(b) > 0 {
		var n int
		var werr error
		err := st.rc.Write(func(fd uintptr) bool {
			for {
				n, werr = syscall.Write(int(fd), b)
				if werr != syscall.EINTR {
					return true
				}
			}
		})
		if err == nil {
			err = werr
		}
		if n > 0 {
			b = b[n:]
		}
		if errors.Is(err, syscall.EAGAIN) {
			st.rest = b
			return false
		}
		if err != nil {
			st.err = err
			return false
		}
	}
	st.stamp(time.Now())
	st.k++
	return st.k < st.n
}

// stamp records that chunk k has been handed to the kernel at now.
func (st *paced) stamp(now time.Time) {
	st.truth.chunk(st.k, st.arrival, st.last, now)
	st.last = now
}

// streamQueue is a min-heap of streams by next due time.
type streamQueue []*paced

func (q streamQueue) Len() int           { return len(q) }
func (q streamQueue) Less(i, j int) bool { return q[i].next.Before(q[j].next) }
func (q streamQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}

func (q *streamQueue) Push(x any) {
	st := x.(*paced)
	st.idx = len(*q)
	*q = append(*q, st)
}

func (q *streamQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	x.idx = -1
	return x
}
