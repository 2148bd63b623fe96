package sim

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/sim/pace"
)

// A streamed completion takes its connection over from net/http
// (http.Hijacker), writes the response itself through the pacer, and then
// serves that connection's later requests in serveConn, so a kept-alive
// connection stays on the fast path for every stream after the first.
// Requests that are not streams are served there too, through the same
// mux, with connWriter buffering the whole response.

// takeover is one connection the simulator took from net/http.
type takeover struct {
	conn      net.Conn
	brw       *bufio.ReadWriter
	closeNow  bool // the client asked for Connection: close, or a write failed
	closeNext bool // --close-after-stream: close when the next request arrives
}

type takeoverKey struct{}

// ServeHTTP serves the OpenAI routes, /health, /metrics and /sim/truth.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tk := &takeover{}
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), takeoverKey{}, tk)))
	if tk.conn != nil {
		s.serveConn(tk)
	}
}

// take returns the connection under w for a stream to write on itself, or
// nil where that cannot be done (not HTTP/1.1, not a net/http server).
func (s *Server) take(w http.ResponseWriter, r *http.Request) *takeover {
	if cw, ok := w.(*connWriter); ok {
		cw.taken = true
		return cw.tk
	}
	tk, _ := r.Context().Value(takeoverKey{}).(*takeover)
	hj, ok := w.(http.Hijacker)
	if tk == nil || !ok || !r.ProtoAtLeast(1, 1) {
		return nil
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil
	}
	tk.conn, tk.brw = conn, brw
	s.track(conn, true)
	return tk
}

func (s *Server) track(c net.Conn, on bool) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	if on {
		s.conns[c] = struct{}{}
	} else {
		delete(s.conns, c)
	}
}

// Close ends the connections the simulator took over and stops its pacer.
// (net/http's Shutdown does not know them.)
func (s *Server) Close() error {
	s.cancel()
	s.pace.Close()
	s.rxOnce.Do(func() {}) // (a Listener call after this holds nothing)
	if s.rxRelease != nil {
		s.rxRelease()
		s.rxRelease = nil
	}
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for c := range s.conns {
		c.Close()
	}
	return nil
}

// idleTimeout is how long a taken-over connection waits for its next
// request.
const idleTimeout = 2 * time.Minute

// serveConn serves tk's connection until the client closes it.
func (s *Server) serveConn(tk *takeover) {
	conn, brw := tk.conn, tk.brw
	defer func() {
		conn.Close()
		s.track(conn, false)
	}()
	for s.ctx.Err() == nil && !tk.closeNow {
		if tk.closeNext {
			// The quirk: the next request is read, and answered by a close.
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			brw.Reader.Peek(1)
			return
		}
		conn.SetReadDeadline(time.Now().Add(idleTimeout))
		req, err := http.ReadRequest(brw.Reader)
		if err != nil {
			return
		}
		conn.SetReadDeadline(time.Time{})
		req.RemoteAddr = conn.RemoteAddr().String()
		cw := &connWriter{brw: brw, tk: tk, header: http.Header{}}
		s.mux.ServeHTTP(cw, req.WithContext(s.ctx))
		if cw.taken {
			continue // the stream wrote its whole response
		}
		io.Copy(io.Discard, io.LimitReader(req.Body, 64<<20))
		req.Body.Close()
		if err := cw.send(req); err != nil || req.Close {
			return
		}
	}
}

// connWriter is the ResponseWriter of a request served by serveConn: the
// response is kept whole and sent with its Content-Length.
type connWriter struct {
	brw    *bufio.ReadWriter
	tk     *takeover
	header http.Header
	code   int
	body   bytes.Buffer
	taken  bool
}

func (c *connWriter) Header() http.Header { return c.header }

func (c *connWriter) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}

func (c *connWriter) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(b)
}

func (c *connWriter) send(req *http.Request) error {
	c.WriteHeader(http.StatusOK)
	h := c.header
	if c.code != http.StatusNoContent && c.code != http.StatusNotModified {
		if h.Get("Content-Type") == "" && c.body.Len() > 0 {
			h.Set("Content-Type", http.DetectContentType(c.body.Bytes()))
		}
		h.Set("Content-Length", strconv.Itoa(c.body.Len()))
	}
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if req.Close {
		h.Set("Connection", "close")
	}
	w := c.brw.Writer
	w.WriteString("HTTP/1.1 " + strconv.Itoa(c.code) + " " + http.StatusText(c.code) + "\r\n")
	h.Write(w)
	w.WriteString("\r\n")
	if req.Method != http.MethodHead {
		w.Write(c.body.Bytes())
	}
	return w.Flush()
}

// streamConn writes a streamed response on a taken-over connection: the
// headers at once, then each chunk at its due time from the pacer.
func (s *Server) streamConn(tk *takeover, r *http.Request, rp *reply, chunk func(k int, b []byte) []byte) {
	n, arrival, truth := rp.sent, rp.arrival, rp.truth
	hdr := "HTTP/1.1 200 OK\r\nCache-Control: no-cache\r\nContent-Type: " + rp.sh.streamType() + "\r\nDate: " +
		time.Now().UTC().Format(http.TimeFormat) + "\r\nTransfer-Encoding: chunked\r\n"
	if r.Close {
		hdr += "Connection: close\r\n"
		tk.closeNow = true
	}
	if _, err := io.WriteString(tk.conn, hdr+"\r\n"); err != nil {
		truth.Aborted, tk.closeNow = true, true
		return
	}
	truth.Gaps = make([]int64, 0, n)
	last := time.Time{}
	st := &pace.Stream{N: n, Chunk: chunk, Sched: rp.sched, Sent: func(k int, at time.Time) {
		truth.chunk(k, arrival, last, at)
		last = at
	}}
	defer func() {
		if rp.sent < rp.n && !truth.Aborted { // faultDisconnect: reset the connection mid-stream
			if tc, ok := tk.conn.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			truth.Aborted, tk.closeNow = true, true
		}
	}()
	if n == 0 {
		return
	}
	if sc, ok := tk.conn.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			st.Conn = rc
			if rp.eng != nil {
				rp.eng.paced(st)
			}
			gone, stop := watchGone(tk)
			s.pace.Add(st)
			select {
			case <-st.Done:
			case <-gone:
				if !s.pace.Remove(st) {
					<-st.Done
				}
			}
			stop()
		}
	}
	if st.Err != nil {
		truth.Aborted, tk.closeNow = true, true
		return
	}
	// What the pacer could not write (or all of it, on a connection
	// without a file descriptor) goes out from here, blocking.
	if st.Finish(s.ctx, tk.conn, func(k int) (time.Time, bool) { return s.dueOf(rp, k, nil) }) != nil {
		truth.Aborted, tk.closeNow = true, true
		return
	}
	if s.cfg.CloseAfterStream {
		tk.closeNext = true
	}
}

// watchGone reads ahead on tk's connection while the pacer streams, as
// net/http's server does, so a client that goes away is seen at once
// rather than at the next chunk's write: gone closes then. stop ends the
// watch; what a client sent meanwhile (its next request) stays buffered.
func watchGone(tk *takeover) (gone <-chan struct{}, stop func()) {
	g, exited := make(chan struct{}), make(chan struct{})
	var stopping atomic.Bool
	go func() {
		defer close(exited)
		if _, err := tk.brw.Reader.Peek(1); err != nil && !stopping.Load() {
			close(g)
		}
	}()
	return g, func() {
		stopping.Store(true)
		tk.conn.SetReadDeadline(time.Unix(1, 0))
		<-exited
		tk.conn.SetReadDeadline(time.Time{})
	}
}
