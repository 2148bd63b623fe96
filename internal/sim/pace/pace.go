// Package pace writes the simulator's streamed responses: every stream's
// chunks from one goroutine, each at its due time, straight to the socket.
// What a chunk's due time is comes from the stream's Schedule: the exact
// model's formula, or the engine's steps as they are run. The pacer knows
// sockets, a heap of due times and how late it wrote; it knows nothing of
// HTTP bodies or of the engine.
package pace

import (
	"container/heap"
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// A Schedule says when a stream's chunks are due. Due is chunk k's due
// time; ok is false while that is not known yet (engine mode: the step
// that makes the token has not run). A stream whose next due is unknown is
// parked, out of the heap, until Known is called for it. Due is called
// with the pacer's lock held and must not call back into the pacer.
type Schedule interface {
	Due(k int) (t time.Time, ok bool)
}

// Exact is a Schedule known in full from the start.
type Exact func(k int) time.Time

// Due is chunk k's due time, always known.
func (f Exact) Due(k int) (time.Time, bool) { return f(k), true }

// Stream is one streamed response. The caller fills Conn, N, Chunk, Sched
// and Sent and hands it to Add; Done closes when the pacer is finished
// with it. Then K is the chunks written, Err why it stopped early (ErrGone:
// the client went away), and Rest what the socket would not take of
// chunk K: the caller finishes the stream with Finish, blocking.
type Stream struct {
	Conn syscall.RawConn
	N    int
	// Chunk appends chunk k's bytes, framing included.
	Chunk func(k int, b []byte) []byte
	Sched Schedule
	// Sent is told that chunk k was handed to the kernel at at.
	Sent func(k int, at time.Time)

	K    int
	Rest []byte
	Err  error
	Done chan struct{}

	next   time.Time // when chunk K is due
	buf    []byte
	wb     []byte             // what write has yet to send of buf
	werr   error              // writeFD's last error
	wfn    func(uintptr) bool // st.writeFD, made once
	parked bool               // guarded by Pacer.mu
	idx    int                // in the heap; -1 when out of it (guarded by Pacer.mu)
	abort  bool               // the client went away (guarded by Pacer.mu)
}

// A Pacer writes its streams' chunks from one goroutine, each at its due
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
type Pacer struct {
	mu       sync.Mutex
	q        streamQueue
	w        *waiter // nil: sleep on Go timers, woken through wake
	wake     chan struct{}
	stop     chan struct{}
	once     sync.Once
	late     *hdr.Histogram // µs each chunk went out after its due time (guarded by mu; nil: not kept)
	stepLate *hdr.Histogram // the same for the first chunk of each due time (a step's tokens share one)
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

// ErrGone is a stream whose client went away.
var ErrGone = errors.New("the client went away")

// New returns a pacer; with lateness, it keeps how late it wrote each
// chunk after its due time (see Lateness). Its goroutine starts with the
// first stream.
func New(lateness bool) *Pacer {
	p := &Pacer{w: newWaiter(), wake: make(chan struct{}, 1), stop: make(chan struct{})}
	if lateness {
		p.late, p.stepLate = hdr.New(1, 60_000_000, 3), hdr.New(1, 60_000_000, 3)
	}
	return p
}

// Add queues st and returns at once; st.Done closes when the pacer is
// finished with it.
func (p *Pacer) Add(st *Stream) {
	p.once.Do(func() { go p.run() })
	if st.Done == nil {
		st.Done = make(chan struct{})
	}
	if st.buf == nil {
		st.buf = make([]byte, 0, 512)
	}
	p.mu.Lock()
	st.idx = -1
	first := p.scheduleLocked(st)
	p.mu.Unlock()
	p.kick(first)
}

// Known tells the pacer that its Schedule may know more due times for
// these streams: those parked on one are queued again. A stream not added
// yet, or not parked, is left as it is.
func (p *Pacer) Known(sts ...*Stream) {
	first := false
	p.mu.Lock()
	for _, st := range sts {
		if st.parked {
			st.parked = false
			first = p.scheduleLocked(st) || first
		}
	}
	p.mu.Unlock()
	p.kick(first)
}

// scheduleLocked queues st at its next chunk's due time, or parks it when
// its schedule does not know that yet; true when st is now first in the
// heap.
func (p *Pacer) scheduleLocked(st *Stream) bool {
	next, ok := st.Sched.Due(st.K)
	if !ok {
		st.parked = true
		return false
	}
	st.next = next
	heap.Push(&p.q, st)
	first := p.q[0] == st
	if first && p.w != nil {
		p.w.arm(max(time.Until(st.next), 0)) // (negative would disarm)
	}
	return first
}

// kick wakes the pacer when a stream became first (whichever way it
// sleeps; a stale wake-up is harmless).
func (p *Pacer) kick(first bool) {
	if first {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// Remove takes st out when its client went away: true if it was waiting
// (and is now the caller's, with Err ErrGone), false if the pacer holds it
// now (it closes st.Done soon, without writing again).
func (p *Pacer) Remove(st *Stream) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st.abort = true
	if st.parked {
		st.parked, st.Err = false, ErrGone
		return true
	}
	if st.idx < 0 {
		return false
	}
	heap.Remove(&p.q, st.idx)
	st.Err = ErrGone
	return true
}

// Close stops the pacer's goroutine; streams still queued stay so.
func (p *Pacer) Close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
		if p.w != nil {
			p.w.close()
		}
	}
}

// Lag is a summary of how late chunks went out, in µs.
type Lag struct {
	P50, P99, Max float64
	N             int64
}

// Lateness is how late the pacer wrote each chunk after its due time, and
// the first chunk of each distinct due time (an engine step's end); ok is
// false unless New was asked to keep it.
func (p *Pacer) Lateness() (chunk, step Lag, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.late == nil {
		return Lag{}, Lag{}, false
	}
	q := func(h *hdr.Histogram) Lag {
		return Lag{P50: float64(h.ValueAtQuantile(50)), P99: float64(h.ValueAtQuantile(99)), Max: float64(h.Max()), N: h.TotalCount()}
	}
	return q(p.late), q(p.stepLate), true
}

func (p *Pacer) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []*Stream
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
			due = append(due, heap.Pop(&p.q).(*Stream))
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
			k := st.K
			more, at := p.write(st)
			p.mu.Lock()
			if p.late != nil && st.K > k {
				late := max(at.Sub(st.next).Microseconds(), 0)
				p.late.RecordValue(late)
				if !st.next.Equal(p.lastDue) {
					p.stepLate.RecordValue(late)
					p.lastDue = st.next
				}
			}
			if more && st.abort {
				more, st.Err = false, ErrGone
			}
			if more {
				p.scheduleLocked(st)
			}
			p.mu.Unlock()
			if !more {
				close(st.Done)
			}
		}
		due = due[:0]
	}
}

// write sends st's chunk K and reports whether st stays in the pacer, and
// when the chunk went out.
func (p *Pacer) write(st *Stream) (more bool, at time.Time) {
	st.buf = st.Chunk(st.K, st.buf[:0])
	st.wb = st.buf
	if st.wfn == nil {
		st.wfn = st.writeFD // once a stream: a method value allocates
	}
	for len(st.wb) > 0 {
		err := st.Conn.Write(st.wfn)
		if err == nil {
			err = st.werr
		}
		if errors.Is(err, syscall.EAGAIN) {
			st.Rest = st.wb
			return false, at
		}
		if err != nil {
			st.Err = err
			return false, at
		}
	}
	at = time.Now()
	st.Sent(st.K, at)
	st.K++
	return st.K < st.N, at
}

// writeFD is one write(2) of st.wb to fd, for RawConn.Write: what was
// written is cut from st.wb, the error (EAGAIN too) left in st.werr. It
// returns true always: the pacer never waits on the poller, a socket that
// cannot take more is handed back.
func (st *Stream) writeFD(fd uintptr) bool {
	for {
		n, err := syscall.Write(int(fd), st.wb)
		if err == syscall.EINTR {
			continue
		}
		if n > 0 {
			st.wb = st.wb[n:]
		}
		st.werr = err
		return true
	}
}

// Finish writes what the pacer left of st (st.Rest, then the chunks from
// st.K on) to w, each chunk at its due time, blocking. wait is chunk k's
// due time, waiting until it is known; false gives up (the stream ends
// with ErrGone). ctx ends it early too.
func (st *Stream) Finish(ctx context.Context, w io.Writer, wait func(k int) (time.Time, bool)) error {
	if len(st.Rest) > 0 {
		if _, err := w.Write(st.Rest); err != nil {
			return err
		}
		st.Rest = nil
		st.Sent(st.K, time.Now())
		st.K++
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ; st.K < st.N; st.K++ {
		due, ok := wait(st.K)
		if !ok {
			return ErrGone
		}
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		st.buf = st.Chunk(st.K, st.buf[:0])
		if _, err := w.Write(st.buf); err != nil {
			return err
		}
		st.Sent(st.K, time.Now())
	}
	return nil
}

// streamQueue is a min-heap of streams by next due time.
type streamQueue []*Stream

func (q streamQueue) Len() int           { return len(q) }
func (q streamQueue) Less(i, j int) bool { return q[i].next.Before(q[j].next) }
func (q streamQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}

func (q *streamQueue) Push(x any) {
	st := x.(*Stream)
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
