package client

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/aiperf-action/aiperf-action/internal/rxtime"
)

// The reactor: one goroutine, one epoll set, every streamed response of a
// worker. pool_linux.go holds the connections, inflight.go each request's
// parse, http1.go the wire format.

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
	in.sc = &ec.scratch
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
