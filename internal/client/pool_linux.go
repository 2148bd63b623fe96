package client

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/rxtime"
)

// The connection pool: kept-alive connections, dialled outside Go's
// netpoller and read by the reactor, and the sender's side of a request.

// econn is one kept-alive connection.
type econn struct {
	fd      int
	addr    string                   // the server it is connected to
	req     atomic.Pointer[inflight] // the request it is serving; nil when idle
	idle    bool                     // in the loop's idle list (guarded by Loop.mu)
	mu      sync.Mutex               // orders the sender's writes and a cancelling shutdown with the close
	closed  bool
	scratch // reused by each request on the connection, read only by the loop
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
	// The newest idle connection to addr (with one server, the last).
	for k := len(l.idle) - 1; k >= 0; k-- {
		if ec = l.idle[k]; ec.addr != addr {
			continue
		}
		last := len(l.idle) - 1
		l.idle[k] = l.idle[last]
		l.idle[last] = nil
		l.idle = l.idle[:last]
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
	ec = &econn{fd: fd, addr: addr}
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

// doLoop is Do for a streaming request over plain HTTP, read by the loop.
func (c *Client) doLoop(ctx context.Context, f *fastConf, cl *call) {
	req, rec := f.request(cl.body, cl.requestID), cl.rec
	rec.Sent = c.Clock()
	if cl.cancelAfter > 0 {
		t := time.AfterFunc(cl.cancelAfter, cl.cancel)
		defer t.Stop()
	}
	for n := 0; ; n++ {
		in := &inflight{c: c, rec: rec, maxTokens: cl.maxTokens, onFirst: cl.onFirst, done: make(chan struct{})}
		ec, reused, err := c.Loop.get(ctx, f.addr, in)
		if err != nil {
			c.fail(rec, classify(ctx, err), err.Error())
			return
		}
		// Written is stamped as the request goes onto the socket (one write
		// for any usual body): stamped after, a preempted sender would make
		// it late, and a kernel-stamped first token could come before it.
		rec.Connected, rec.NewConn = c.Clock(), !reused
		rec.Written = rec.Connected
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
