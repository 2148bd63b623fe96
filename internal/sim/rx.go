package sim

import (
	"net"
	"net/http"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/rxtime"
)

// A request's arrival is when the kernel received it, where the listener
// came through Server.Listener: the simulator's own delay in getting to a
// new request (its goroutines waiting for a CPU) then counts neither in
// its truth nor in its timing, as the first token is due TTFT after that
// arrival. Elsewhere (httptest, other systems) the handler's start is used.

// maxArrivalAge bounds how old a receive stamp may be and still date a
// request; older, something is off and the handler's start is used.
const maxArrivalAge = 10 * time.Second

// Listener returns ln with its TCP connections read through recvmsg, so
// that each request can be dated by the kernel's receive time.
func (s *Server) Listener(ln net.Listener) net.Listener {
	s.rxOnce.Do(func() {
		if release, err := rxtime.Hold(); err == nil {
			s.rxRelease = release
		}
	})
	return &rxListener{Listener: ln, s: s}
}

type rxListener struct {
	net.Listener
	s *Server
}

func (l *rxListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	rc, ok := rxtime.Wrap(tc)
	if !ok {
		return c, nil
	}
	sc := &stampedConn{Conn: rc, s: l.s, key: c.RemoteAddr().String()}
	l.s.rx.Store(sc.key, rc)
	return sc, nil
}

// stampedConn leaves the server's index of receive-stamped connections
// when it closes.
type stampedConn struct {
	*rxtime.Conn
	s   *Server
	key string
}

func (c *stampedConn) Close() error {
	c.s.rx.CompareAndDelete(c.key, c.Conn)
	return c.Conn.Close()
}

// arrival dates r: the kernel's receive time of the newest data read on
// its connection (its own bytes, read just before the handler runs), or
// now.
func (s *Server) arrival(r *http.Request) time.Time {
	now := time.Now()
	v, ok := s.rx.Load(r.RemoteAddr)
	if !ok {
		return now
	}
	rx := v.(*rxtime.Conn).Received()
	if rx == 0 {
		return now
	}
	d, ok := rxtime.Age(rx, now, maxArrivalAge)
	if !ok {
		return now
	}
	return now.Add(-d) // keeps the monotonic reading
}
