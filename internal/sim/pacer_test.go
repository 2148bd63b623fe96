package sim

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// Pacers started and closed one after another each write their stream on
// time: a pacer that has been closed never reaches the timer of the next
// (its descriptor number is soon reused).
func TestPacersInARow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	for i := 0; i < 200; i++ {
		p := newPacer()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		rc, _ := c.(syscall.Conn).SyscallConn()
		arrival := time.Now()
		st := &paced{rc: rc, n: 3, idx: -1, done: make(chan struct{}), truth: &Truth{}, arrival: arrival,
			chunk: func(k int, b []byte) []byte { return append(b, "x"...) },
			due:   func(k int) time.Time { return arrival.Add(time.Duration(k+1) * time.Millisecond) }}
		p.add(st)
		select {
		case <-st.done:
		case <-time.After(2 * time.Second):
			t.Fatalf("pacer %d: stuck before chunk %d", i, st.k)
		}
		if st.err != nil || st.k != 3 || len(st.truth.Gaps) != 2 {
			t.Fatalf("pacer %d: err %v, %d chunks", i, st.err, st.k)
		}
		p.close()
		c.Close()
	}
}
