package rxtime

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OOBSize holds one SCM_TIMESTAMPNS message (a header and a timespec) with
// room to spare.
const OOBSize = 64

// Enable asks the kernel to stamp what fd receives.
func Enable(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
}

// Recv is recvmsg(2) into p with the control messages in oob, without the
// allocation of unix.Recvmsg's source address. n is 0 with a nil error at
// the end of the stream.
func Recv(fd int, p, oob []byte) (n, oobn int, err error) {
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: &oob[0]}
	msg.SetControllen(len(oob))
	r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	if e != 0 {
		return 0, 0, e
	}
	return int(r), int(msg.Controllen), nil
}

// Parse finds the SCM_TIMESTAMPNS message in oob: the wall-clock time,
// in unix ns, at which the kernel received the newest data the read
// returned. (Segments that queue up on a socket are merged and carry the
// newest time, so a chunk the loop reaches only after the next one came is
// stamped with the next one's arrival: later than its own, never later
// than the read.)
func Parse(oob []byte) (int64, bool) {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return 0, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.SizeofCmsghdr+int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&oob[unix.SizeofCmsghdr]))
			return ts.Nano(), true
		}
		step := (l + unix.SizeofPtr - 1) &^ (unix.SizeofPtr - 1)
		if step >= len(oob) {
			break
		}
		oob = oob[step:]
	}
	return 0, false
}

// Conn is a TCP connection whose reads note the kernel's receive time of
// the newest data read.
type Conn struct {
	*net.TCPConn
	rc   syscall.RawConn
	last atomic.Int64

	mu  sync.Mutex // one Read at a time: the fields below are its
	p   []byte
	n   int
	ob  int
	er  error
	oob [OOBSize]byte
	fn  func(fd uintptr) bool // c.recv, bound once (no allocation per read)
}

// Wrap asks for receive stamps on c; ok is false where they cannot be had
// (then use c as it is).
func Wrap(c *net.TCPConn) (conn *Conn, ok bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, false
	}
	var eerr error
	if err := rc.Control(func(fd uintptr) { eerr = Enable(int(fd)) }); err != nil || eerr != nil {
		return nil, false
	}
	conn = &Conn{TCPConn: c, rc: rc}
	conn.fn = conn.recv
	return conn, true
}

func (c *Conn) recv(fd uintptr) bool {
	for {
		c.n, c.ob, c.er = Recv(int(fd), c.p, c.oob[:])
		if c.er != unix.EINTR {
			return c.er != unix.EAGAIN
		}
	}
}

// Read is net.Conn's Read, through recvmsg: it waits in the netpoller and
// honours the read deadline the same way.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p = p
	err := c.rc.Read(c.fn)
	c.p = nil
	if err == nil && c.er != nil {
		err = os.NewSyscallError("recvmsg", c.er)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	rx, _ := Parse(c.oob[:c.ob])
	c.last.Store(rx) // 0 when this read had no stamp: the newest data's time is then unknown
	return c.n, nil
}

// WriteTo copies through Read, so every read is stamped (the embedded
// TCPConn's WriteTo would read beneath it, and leave Received stale).
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}

// Received is the unix-ns receive time of the newest data read so far; 0
// before any, or when the latest read carried no stamp.
func (c *Conn) Received() int64 { return c.last.Load() }

// Hold switches the kernel's receive stamping on until release is called,
// through a socket of its own, and waits (up to about 200 ms) until it is
// on. The kernel turns stamping on for the whole system when the first
// socket asks, but through deferred work: data that arrives in between
// carries no stamp. A process that holds one from its start has them on
// by the time its traffic flows.
func Hold() (release func(), err error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	release = func() { unix.Close(fd) }
	if err := Enable(fd); err != nil {
		release()
		return nil, err
	}
	// Probe: a datagram to itself on loopback comes back stamped once
	// stamping is on.
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return release, nil // held, but not probed
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		return release, nil
	}
	var b [1]byte
	var oob [OOBSize]byte
	for range 200 {
		if unix.Sendto(fd, b[:], 0, self) != nil {
			break
		}
		time.Sleep(time.Millisecond / 4)
		for {
			n, oobn, err := Recv(fd, b[:], oob[:])
			if err != nil || n == 0 {
				break
			}
			if _, ok := Parse(oob[:oobn]); ok {
				return release, nil
			}
		}
		time.Sleep(time.Millisecond)
	}
	return release, nil
}
