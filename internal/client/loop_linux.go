package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/rxtime"
	"github.com/aiperf-action/aiperf-action/internal/sse"
)

// Loop reads every streamed response of a worker from one goroutine, over
// epoll. With a goroutine per stream (net/http), each chunk cost a
// netpoller wake-up, a goroutine switch, a read, and a second read that
// found the socket empty; here it costs one read, with the readiness of
// many sockets collected by one epoll_wait. Only plain-HTTP streaming
// requests take this path; the rest go through net/http.
//
// A read is stamped with the time the kernel received its data
// (SO_TIMESTAMPNS), not the time the read returned: how late the loop got
// to a socket is the tester's delay, not the server's, and it is kept
// apart as the read delay (ReadStats). Where the kernel gives no stamp the
// read's return is used, and counted.
type Loop struct {
	epfd, evfd int
	mu         sync.Mutex
	byFD       []*econn
	idle       []*econn
	closed     bool
	done       chan struct{}
	// Connections whose request is done ([DONE]) but whose body has not
	// ended yet, with when they started draining (loop goroutine only).
	draining map[*econn]time.Time
	stats    ReadStats // loop goroutine only, until done is closed
	release  func()    // lets go of rxtime.Hold
}

// ReadStats returns how the loop's reads were stamped. It waits for the
// loop to have stopped: call it after Close.
func (l *Loop) ReadStats() ReadStats {
	<-l.done
	return l.stats
}

// stamp returns the run-clock time of a read that returned at at: the
// kernel's receive time when oob carries one.
func (l *Loop) stamp(at int64, oob []byte) int64 {
	rx, ok := rxtime.Parse(oob)
	if !ok || noKernelStamps {
		l.stats.OtherReads++
		return at
	}
	d, ok := rxtime.Age(rx, time.Now(), maxReadDelay)
	if !ok {
		l.stats.OtherReads++ // not a delay: the wall clock stepped
		return at
	}
	l.stats.KernelReads++
	_ = l.stats.Delay.RecordValue(d.Microseconds())
	return at - int64(d)
}

// drainFor bounds how long a connection may take to end its body after
// [DONE] before it is closed rather than kept.
const drainFor = time.Second

// econn is one kept-alive connection.
type econn struct {
	fd     int
	req    atomic.Pointer[inflight] // the request it is serving; nil when idle
	idle   bool                     // in the loop's idle list (guarded by Loop.mu)
	mu     sync.Mutex               // orders the sender's writes and a cancelling shutdown with the close
	closed bool
	// Reused by each request on the connection, read only by the loop.
	dec  *sse.Reader
	head bytes.Reader
	br   *bufio.Reader
}

// NewLoop starts the event loop.
func NewLoop() (*Loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	l := &Loop{epfd: epfd, evfd: evfd, done: make(chan struct{}), draining: map[*econn]time.Time{},
		stats: ReadStats{Delay: hdr.New(1, maxReadDelay.Microseconds(), 3)}}
	if release, err := rxtime.Hold(); err == nil {
		l.release = release // stamping is on before the first response
	}
	go l.run()
	return l, nil
}

// Close stops the loop and closes its connections. Requests still in
// flight end as cut.
func (l *Loop) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	var one = [8]byte{1}
	unix.Write(l.evfd, one[:])
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ec := range l.byFD {
		if ec != nil {
			ec.close()
			if in := ec.req.Swap(nil); in != nil {
				in.finish(net.ErrClosed, false)
				in.signal()
			}
		}
	}
	l.byFD, l.idle = nil, nil
	if l.release != nil {
		l.release()
	}
	unix.Close(l.epfd)
	unix.Close(l.evfd)
	return nil
}

func (l *Loop) run() {
	defer close(l.done)
	events := make([]unix.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	oob := make([]byte, rxtime.OOBSize)
	for {
		timeout := -1
		if len(l.draining) > 0 {
			timeout = int(drainFor / 4 / time.Millisecond)
		}
		n, err := unix.EpollWait(l.epfd, events, timeout)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		for ec, since := range l.draining {
			if time.Since(since) > drainFor {
				if in := ec.req.Load(); in != nil {
					in.finish(nil, false)
					l.complete(ec, in)
				}
			}
		}
		for i := 0; i < n; i++ {
			fd := int(events[i].Fd)
			if fd == l.evfd {
				return
			}
			l.mu.Lock()
			var ec *econn
			if fd < len(l.byFD) {
				ec = l.byFD[fd]
			}
			l.mu.Unlock()
			if ec != nil {
				l.readable(ec, buf, oob)
			}
		}
	}
}

// readable handles one ready connection: one read, fed to its request.
func (l *Loop) readable(ec *econn, buf, oob []byte) {
	in := ec.req.Load()
	if in == nil {
		// An idle connection said something (the server closed it): drop it.
		l.mu.Lock()
		gone := ec.idle
		if gone {
			ec.idle = false
			l.removeIdle(ec)
		}
		l.mu.Unlock()
		if gone {
			l.forget(ec)
		}
		return
	}
	in.ec = ec
	n, oobn, err := rxtime.Recv(ec.fd, buf, oob)
	if err == unix.EAGAIN || err == unix.EINTR {
		return
	}
	if n > 0 {
		in.feed(buf[:n], l.stamp(in.c.Clock(), oob[:oobn]))
	} else {
		if err == nil {
			err = io.EOF
		}
		in.eof(err)
	}
	switch {
	case in.over:
		l.complete(ec, in) // the connection is back in the pool before the sender goes on
	case in.recorded && !in.signaled:
		in.signal() // at [DONE]: the body's end may come in a later read
		l.draining[ec] = time.Now()
	}
}

// complete hands a finished request back to its sender, and the connection
// to the idle list or to the bin.
func (l *Loop) complete(ec *econn, in *inflight) {
	delete(l.draining, ec)
	ec.req.Store(nil)
	if in.keep {
		l.mu.Lock()
		if l.closed {
			in.keep = false
		} else {
			ec.idle = true
			l.idle = append(l.idle, ec)
		}
		l.mu.Unlock()
	}
	if !in.keep {
		l.forget(ec)
	}
	in.signal()
}

// forget removes ec from the loop and closes it.
func (l *Loop) forget(ec *econn) {
	l.mu.Lock()
	if ec.fd < len(l.byFD) && l.byFD[ec.fd] == ec {
		l.byFD[ec.fd] = nil
	}
	l.mu.Unlock()
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ec.fd, nil)
	ec.close()
}

func (ec *econn) close() {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if !ec.closed {
		ec.closed = true
		unix.Close(ec.fd)
	}
}

// shutdown ends in's request early (a cancellation): the loop then reads
// the end of the connection and completes it.
func (ec *econn) shutdown(in *inflight) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if !ec.closed && ec.req.Load() == in {
		unix.Shutdown(ec.fd, unix.SHUT_RDWR)
	}
}

func (l *Loop) removeIdle(ec *econn) {
	for i, x := range l.idle {
		if x == ec {
			l.idle[i] = l.idle[len(l.idle)-1]
			l.idle[len(l.idle)-1] = nil
			l.idle = l.idle[:len(l.idle)-1]
			return
		}
	}
}

// get returns a kept-alive connection (reused) or a new one, already
// serving in.
func (l *Loop) get(ctx context.Context, addr string, in *inflight) (ec *econn, reused bool, err error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, false, net.ErrClosed
	}
	if k := len(l.idle); k > 0 {
		ec = l.idle[k-1]
		l.idle[k-1] = nil
		l.idle = l.idle[:k-1]
		ec.idle = false
		ec.req.Store(in)
		l.mu.Unlock()
		return ec, true, nil
	}
	l.mu.Unlock()
	fd, err := dialFD(ctx, addr)
	if err != nil {
		return nil, false, err
	}
	ec = &econn{fd: fd}
	ec.req.Store(in)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		unix.Close(fd)
		return nil, false, net.ErrClosed
	}
	for len(l.byFD) <= fd {
		l.byFD = append(l.byFD, nil)
	}
	l.byFD[fd] = ec
	l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.forget(ec)
		return nil, false, err
	}
	return ec, false, nil
}

// dialFD connects with net's dialer and keeps a non-blocking descriptor of
// its own, outside Go's netpoller.
func dialFD(ctx context.Context, addr string) (int, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	rc, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	// Best effort: without it the reads are stamped when they return (and
	// counted so in ReadStats).
	_ = rxtime.Enable(fd)
	return fd, nil
}

// send writes b on ec, waiting (bounded by ctx) while the socket is full.
// Each write holds ec.mu: the loop may close the connection meanwhile (the
// server went away), and its descriptor number may at once be another
// connection's.
func (ec *econn) send(ctx context.Context, b []byte) error {
	for len(b) > 0 {
		ec.mu.Lock()
		if ec.closed {
			ec.mu.Unlock()
			return net.ErrClosed
		}
		n, err := unix.Write(ec.fd, b)
		ec.mu.Unlock()
		if n > 0 {
			b = b[n:]
		}
		switch {
		case err == nil, err == unix.EINTR:
		case err == unix.EAGAIN:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(100 * time.Microsecond) // the socket is full: a large body
		default:
			return err
		}
	}
	return nil
}

// inflight is one request's response as the loop parses it.
type inflight struct {
	c         *Client
	ec        *econn
	rec       *record.Record
	maxTokens int
	done      chan struct{}

	head     []byte // the response head, until complete
	headDone bool
	any      bool  // a byte of the response arrived
	last     int64 // the latest read's stamp
	status   int
	sse      bool
	framing  int   // body framing: byLength, byChunks or byClose
	left     int64 // byLength: bytes still to come
	ch       chunks
	dec      *sse.Reader
	st       streamState
	body     []byte // a whole (non-streamed) body, or an error body
	sawDone  bool

	over     bool  // nothing more to read for this request
	keep     bool  // the connection may serve another request
	err      error // how the connection failed, if it did
	early    bool  // it failed before a byte of the response came
	recorded bool  // rec holds the request's outcome
	// What the sender reads once done is closed: after a [DONE] the loop
	// goes on reading to the body's end (to keep the connection), so the
	// fields above are not for the sender.
	out      outcome
	signaled bool
}

type outcome struct {
	recorded, early bool
	err             error
}

// signal hands the outcome to the sender, once. From here on the loop no
// longer touches rec.
func (in *inflight) signal() {
	if !in.signaled {
		in.signaled = true
		in.out = outcome{in.recorded, in.early, in.err}
		close(in.done)
	}
}

const (
	byLength = iota
	byChunks
	byClose
)

// maxHead bounds a response head; maxBody a whole body kept for parsing.
const (
	maxHead = 64 << 10
	maxBody = 64 << 20
)

func (in *inflight) finish(err error, keep bool) {
	if in.over {
		return
	}
	in.over, in.keep = true, keep
	if err != nil {
		in.err = err
	}
}

func (in *inflight) feed(b []byte, at int64) {
	at = max(at, in.last) // (two readings of two clocks jitter; arrivals don't go back)
	in.last = at
	if !in.any {
		in.any = true
		in.rec.FirstByte = at
	}
	if !in.headDone {
		in.head = append(in.head, b...)
		i := bytes.Index(in.head, []byte("\r\n\r\n"))
		if i < 0 {
			if len(in.head) > maxHead {
				in.finish(fmt.Errorf("response head over %d bytes", maxHead), false)
			}
			return
		}
		rest := in.head[i+4:]
		if !in.parseHead(in.head[:i+4]) {
			return
		}
		if in.over || len(rest) == 0 {
			return
		}
		b = rest
	}
	switch in.framing {
	case byLength:
		if int64(len(b)) > in.left {
			b = b[:in.left]
		}
		in.left -= int64(len(b))
		in.payload(b, at)
		if in.left == 0 {
			in.bodyEnd(at)
		}
	case byChunks:
		end, err := in.ch.decode(b, func(p []byte) { in.payload(p, at) })
		if err != nil {
			in.finish(err, false)
			return
		}
		if end {
			in.bodyEnd(at)
		}
	default:
		in.payload(b, at)
	}
}

// parseHead reads the status line and headers; false while a 1xx head was
// skipped and the real one is still to come.
func (in *inflight) parseHead(h []byte) bool {
	ec := in.ec
	ec.head.Reset(h)
	if ec.br == nil {
		ec.br = bufio.NewReaderSize(&ec.head, 1024)
	} else {
		ec.br.Reset(&ec.head)
	}
	resp, err := http.ReadResponse(ec.br, nil)
	if err != nil {
		in.finish(err, false)
		return true
	}
	if resp.StatusCode >= 100 && resp.StatusCode < 200 {
		in.head = append(in.head[:0], in.head[len(h):]...)
		return false
	}
	in.headDone = true
	in.status = resp.StatusCode
	in.rec.Status = resp.StatusCode
	in.keep = !resp.Close
	in.sse = in.status == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	switch {
	case len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked":
		in.framing = byChunks
	case resp.ContentLength >= 0:
		in.framing, in.left = byLength, resp.ContentLength
	default:
		in.framing, in.keep = byClose, false
	}
	if in.sse {
		if ec.dec == nil {
			ec.dec = sse.NewDecoder()
		} else {
			ec.dec.Reset()
		}
		in.dec = ec.dec
		in.st.start(in.rec, in.maxTokens)
	}
	if in.framing == byLength && in.left == 0 {
		in.bodyEnd(in.rec.FirstByte)
	}
	return true
}

// payload takes body bytes.
func (in *inflight) payload(p []byte, at int64) {
	if in.over || in.sawDone {
		return
	}
	if !in.sse {
		room := maxBody
		if in.status != http.StatusOK {
			room = 4 << 10
		}
		in.body = append(in.body, p[:min(len(p), max(room-len(in.body), 0))]...)
		return
	}
	in.dec.Feed(p, at)
	for {
		ev, ok := in.dec.Scan()
		if !ok {
			return
		}
		if in.event(ev) {
			return
		}
	}
}

// event takes one SSE event; true when the stream is over.
func (in *inflight) event(ev sse.Event) bool {
	over, failed := in.c.onEvent(ev, in.rec, &in.st)
	switch {
	case failed:
		in.recorded = true
		in.finish(nil, false)
	case over:
		in.sawDone, in.recorded = true, true
		in.c.endStream(in.rec, &in.st, ev.At)
	}
	return over
}

// bodyEnd is the end of the response body at a clean framing boundary.
func (in *inflight) bodyEnd(at int64) {
	if in.over {
		return
	}
	keep := in.keep
	switch {
	case in.status != http.StatusOK:
		in.recorded = true
		in.c.fail(in.rec, fmt.Sprintf("http_%d", in.status), snippet(in.body))
	case in.sse:
		if !in.sawDone {
			in.endEvents(at)
		}
	default:
		in.rec.End = at
		in.recorded = true
		in.c.parseWhole(in.body, in.rec)
	}
	in.finish(nil, keep)
}

// endEvents reads the events left when a stream ends without [DONE].
func (in *inflight) endEvents(at int64) {
	for !in.recorded {
		ev, err := in.dec.End()
		if err == io.EOF {
			in.c.endStream(in.rec, &in.st, at)
			in.sawDone, in.recorded = true, true
			return
		}
		if err != nil {
			in.recorded = true
			in.c.fail(in.rec, record.ErrStreamCut, err.Error())
			return
		}
		in.event(ev)
	}
}

// eof is the connection's end (or failure) while in was reading.
func (in *inflight) eof(err error) {
	switch {
	case in.over:
	case !in.any:
		in.early = true
		in.finish(err, false)
	case in.sawDone:
		in.finish(nil, false)
	case in.headDone && in.framing == byClose && err == io.EOF:
		in.bodyEnd(in.last) // the last data's arrival: a FIN carries no stamp
		in.keep = false
	case err == io.EOF:
		in.finish(io.ErrUnexpectedEOF, false)
	default:
		in.finish(err, false)
	}
}

// chunks decodes a chunked body as it arrives.
type chunks struct {
	state int // 0: size line, 1: data, 2: the CRLF after data, 3: trailer, 4: done
	left  int64
	line  []byte
}

var errChunk = errors.New("malformed chunked encoding")

// decode feeds b; out gets the payload. It reports the body's end.
func (d *chunks) decode(b []byte, out func([]byte)) (bool, error) {
	for len(b) > 0 && d.state != 4 {
		if d.state == 1 {
			n := min(int64(len(b)), d.left)
			out(b[:n])
			b, d.left = b[n:], d.left-n
			if d.left == 0 {
				d.state = 2
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(d.line)+len(b) > 4096 {
				return false, errChunk
			}
			d.line = append(d.line, b...)
			return false, nil
		}
		line := append(d.line, b[:i]...)
		d.line = line[:0]
		b = b[i+1:]
		line = bytes.TrimRight(line, "\r")
		switch d.state {
		case 0:
			if j := bytes.IndexByte(line, ';'); j >= 0 {
				line = line[:j]
			}
			line = bytes.TrimSpace(line)
			if len(line) == 0 || len(line) > 15 {
				return false, errChunk
			}
			var n int64
			for _, c := range line {
				switch {
				case '0' <= c && c <= '9':
					n = n<<4 | int64(c-'0')
				case 'a' <= c && c <= 'f':
					n = n<<4 | int64(c-'a'+10)
				case 'A' <= c && c <= 'F':
					n = n<<4 | int64(c-'A'+10)
				default:
					return false, errChunk
				}
			}
			if n == 0 {
				d.state = 3
			} else {
				d.state, d.left = 1, n
			}
		case 2:
			if len(line) != 0 {
				return false, errChunk
			}
			d.state = 0
		case 3:
			if len(line) == 0 {
				d.state = 4
			}
		}
	}
	return d.state == 4, nil
}

// doLoop is Do for a streaming request over plain HTTP, read by the loop.
func (c *Client) doLoop(ctx context.Context, f *fastConf, body []byte, requestID string, cancelAfter time.Duration, cancel context.CancelFunc, maxTokens int, rec *record.Record) {
	req := f.request(body, requestID)
	rec.Sent = c.Clock()
	if cancelAfter > 0 {
		t := time.AfterFunc(cancelAfter, cancel)
		defer t.Stop()
	}
	for n := 0; ; n++ {
		in := &inflight{c: c, rec: rec, maxTokens: maxTokens, done: make(chan struct{})}
		ec, reused, err := c.Loop.get(ctx, f.addr, in)
		if err != nil {
			c.fail(rec, classify(ctx, err), err.Error())
			return
		}
		if err := ec.send(ctx, req); err != nil {
			// The loop may be completing in already (the server closed).
			ec.shutdown(in)
			<-in.done
			if in.out.early && reused && n < maxResends && ctx.Err() == nil {
				rec.Retried = true
				continue
			}
			if !in.out.recorded { // (a server may answer, say 413, and close)
				c.fail(rec, classify(ctx, err), err.Error())
			}
			return
		}
		select {
		case <-in.done:
		case <-ctx.Done():
			ec.shutdown(in)
			<-in.done
		}
		out := in.out
		if out.early && reused && n < maxResends && ctx.Err() == nil {
			rec.Retried = true
			continue
		}
		if out.recorded {
			return
		}
		err = out.err
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		if ctx.Err() != nil {
			c.fail(rec, classify(ctx, ctx.Err()), ctx.Err().Error())
			return
		}
		kind := classify(ctx, err)
		if errors.Is(err, errChunk) {
			kind = record.ErrMalformed
		}
		c.fail(rec, kind, err.Error())
		return
	}
}

// headerValue keeps a value on its header line.
var headerValue = strings.NewReplacer("\r", " ", "\n", " ")

// fastConf is what the loop's requests share: the address and the request
// head up to the per-request headers.
type fastConf struct {
	addr string
	head []byte
}

// newFastConf prepares the loop's requests, or returns nil where the URL
// is not plain HTTP (TLS and the rest stay with net/http).
func newFastConf(c *Client) *fastConf {
	u, err := url.Parse(c.URL)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Host == "" {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	h := http.Header{}
	c.setHeaders(h, "")
	host := u.Host
	if v := h.Get("Host"); v != "" { // a --header Host: wins, once, as with net/http's req.Host
		host = v
		h.Del("Host")
	}
	var b bytes.Buffer
	b.WriteString("POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + userAgent + "\r\n")
	h.Write(&b)
	return &fastConf{addr: addr, head: b.Bytes()}
}

// request is the whole request: head, id, length and body.
func (f *fastConf) request(body []byte, requestID string) []byte {
	b := make([]byte, 0, len(f.head)+len(body)+96)
	b = append(b, f.head...)
	if requestID != "" {
		b = append(b, "X-Request-Id: "...)
		b = append(b, headerValue.Replace(requestID)...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}
