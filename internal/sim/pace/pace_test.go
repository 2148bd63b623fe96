package pace

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// sink accepts connections on loopback and reads (and drops) what each
// one sends.
type sink struct {
	ln net.Listener
}

func newSink(t testing.TB) *sink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *sink) dial(t testing.TB) (net.Conn, syscall.RawConn) {
	t.Helper()
	c, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return c, rc
}

// stream is n one-byte chunks ("0", "1", …) due on sched, recording when
// each went out.
func stream(rc syscall.RawConn, n int, sched Schedule) (*Stream, *[]time.Time) {
	var sent []time.Time
	return &Stream{Conn: rc, N: n, Sched: sched,
		Chunk: func(k int, b []byte) []byte { return append(b, byte('0'+k%10)) },
		Sent: func(k int, at time.Time) {
			if k != len(sent) {
				panic("chunks out of order")
			}
			sent = append(sent, at)
		}}, &sent
}

func waitDone(t *testing.T, st *Stream) {
	t.Helper()
	select {
	case <-st.Done:
	case <-time.After(5 * time.Second):
		t.Fatalf("stuck before chunk %d of %d", st.K, st.N)
	}
}

// Pacers started and closed one after another each write their stream on
// time: a pacer that has been closed never reaches the timer of the next
// (its descriptor number is soon reused).
func TestPacersInARow(t *testing.T) {
	s := newSink(t)
	for i := 0; i < 200; i++ {
		p := New(false)
		c, rc := s.dial(t)
		start := time.Now()
		st, sent := stream(rc, 3, Exact(func(k int) time.Time { return start.Add(time.Duration(k+1) * time.Millisecond) }))
		p.Add(st)
		waitDone(t, st)
		if st.Err != nil || st.K != 3 || len(*sent) != 3 {
			t.Fatalf("pacer %d: err %v, %d chunks", i, st.Err, st.K)
		}
		p.Close()
		c.Close()
	}
}

// No chunk goes out before its due time, and they go out in due order
// across streams whose schedules interleave.
func TestChunksNotBeforeDue(t *testing.T) {
	s := newSink(t)
	p := New(true)
	defer p.Close()
	start := time.Now().Add(20 * time.Millisecond)
	var sts []*Stream
	var sents []*[]time.Time
	var dues []Exact
	for i := 0; i < 40; i++ { // past preciseBelow: both ways of sleeping
		_, rc := s.dial(t)
		off := time.Duration(i) * 100 * time.Microsecond
		due := Exact(func(k int) time.Time { return start.Add(off + time.Duration(k)*3*time.Millisecond) })
		st, sent := stream(rc, 5, due)
		sts, sents, dues = append(sts, st), append(sents, sent), append(dues, due)
		p.Add(st)
	}
	for i, st := range sts {
		waitDone(t, st)
		if st.Err != nil || st.K != 5 {
			t.Fatalf("stream %d: err %v, %d chunks", i, st.Err, st.K)
		}
		for k, at := range *sents[i] {
			if at.Before(dues[i](k)) {
				t.Fatalf("stream %d chunk %d went out %v before its due time", i, k, dues[i](k).Sub(at))
			}
		}
	}
	chunk, step, ok := p.Lateness()
	if !ok || chunk.N != 200 || step.N == 0 || step.N > chunk.N {
		t.Fatalf("lateness: %+v %+v %v", chunk, step, ok)
	}
	if _, _, ok := New(false).Lateness(); ok {
		t.Fatal("a pacer not asked to keep lateness says it has some")
	}
}

// learned is a Schedule that knows its due times one by one, as the
// engine publishes them.
type learned struct {
	mu   sync.Mutex
	dues []time.Time
}

func (l *learned) Due(k int) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k >= len(l.dues) {
		return time.Time{}, false
	}
	return l.dues[k], true
}

func (l *learned) publish(t time.Time) {
	l.mu.Lock()
	l.dues = append(l.dues, t)
	l.mu.Unlock()
}

// A stream whose next due time is unknown waits, parked, and goes on once
// Known says its schedule has more; Known on a stream not parked (or not
// added yet) changes nothing.
func TestParkedUntilKnown(t *testing.T) {
	s := newSink(t)
	p := New(false)
	defer p.Close()
	_, rc := s.dial(t)
	sch := &learned{}
	var out atomic.Int32
	st := &Stream{Conn: rc, N: 3, Sched: sch, Chunk: func(k int, b []byte) []byte { return append(b, 'x') },
		Sent: func(int, time.Time) { out.Add(1) }}
	p.Known(st) // not added: nothing
	sch.publish(time.Now())
	p.Add(st)
	for k := 1; k < 3; k++ {
		deadline := time.Now().Add(5 * time.Second)
		for int(out.Load()) < k && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		if n := int(out.Load()); n != k {
			t.Fatalf("%d chunks out with %d due times known", n, k)
		}
		p.Known(st) // still unknown: stays parked
		sch.publish(time.Now())
		p.Known(st)
	}
	waitDone(t, st)
	if st.Err != nil || st.K != 3 {
		t.Fatalf("err %v, %d chunks", st.Err, st.K)
	}
}

// Remove takes a waiting stream (queued or parked) back for the caller
// with ErrGone.
func TestRemove(t *testing.T) {
	s := newSink(t)
	p := New(false)
	defer p.Close()
	_, rc := s.dial(t)
	later := time.Now().Add(time.Hour)
	queued, _ := stream(rc, 2, Exact(func(int) time.Time { return later }))
	p.Add(queued)
	if !p.Remove(queued) || queued.Err != ErrGone || queued.K != 0 {
		t.Fatalf("queued: err %v, %d chunks", queued.Err, queued.K)
	}
	parked, _ := stream(rc, 2, &learned{})
	p.Add(parked)
	if !p.Remove(parked) || parked.Err != ErrGone {
		t.Fatalf("parked: err %v", parked.Err)
	}
	p.Known(parked) // removed: not queued again
	p.mu.Lock()
	n := len(p.q)
	p.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d streams still queued", n)
	}
}

// A client that stops reading fills its socket: the pacer hands the stream
// back with what the socket did not take, and Finish writes the rest, all
// of it and in order, once the client reads again.
func TestSlowClientHandedBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := <-accepted // reads nothing until the pacer has handed back
	defer peer.Close()
	rc, _ := c.(syscall.Conn).SyscallConn()
	p := New(false)
	defer p.Close()
	const n, size = 64, 64 << 10
	now := time.Now()
	chunk := func(k int, b []byte) []byte { return append(b, bytes.Repeat([]byte{byte('a' + k%26)}, size)...) }
	var sent int
	st := &Stream{Conn: rc, N: n, Sched: Exact(func(int) time.Time { return now }), Chunk: chunk,
		Sent: func(k int, _ time.Time) {
			if k != sent {
				panic("chunks out of order")
			}
			sent++
		}}
	p.Add(st)
	waitDone(t, st)
	if st.Err != nil || len(st.Rest) == 0 || st.K >= n {
		t.Fatalf("not handed back: err %v, %d chunks, %d bytes left", st.Err, st.K, len(st.Rest))
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	if err := st.Finish(context.Background(), c, func(int) (time.Time, bool) { return now, true }); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	var want []byte
	for k := range n {
		want = chunk(k, want)
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, want) || st.K != n || sent != n {
			t.Fatalf("got %d bytes, want %d; %d chunks, %d sent", len(b), len(want), st.K, sent)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the peer never saw the end")
	}
}

// Finish gives up with ErrGone when the schedule's wait does, and with the
// context's error when it ends before a due time.
func TestFinishGivesUp(t *testing.T) {
	var w bytes.Buffer
	st := &Stream{N: 3, Chunk: func(k int, b []byte) []byte { return append(b, 'x') }, Sent: func(int, time.Time) {}}
	if err := st.Finish(context.Background(), &w, func(k int) (time.Time, bool) { return time.Now(), k < 1 }); err != ErrGone || st.K != 1 || w.Len() != 1 {
		t.Fatalf("err %v, %d chunks, %d bytes", err, st.K, w.Len())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Finish(ctx, &w, func(int) (time.Time, bool) { return time.Now().Add(time.Hour), true }); err != context.Canceled || st.K != 1 {
		t.Fatalf("err %v, %d chunks", err, st.K)
	}
}
