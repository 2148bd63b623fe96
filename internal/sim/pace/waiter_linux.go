package pace

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// waiter sleeps the pacer to a due time with microsecond precision. Go's
// timers sleep in epoll with whole milliseconds, so a timer wake-up could
// come up to a millisecond late; a timerfd's expiry is a readiness event
// that ends that epoll wait at once. It is read through the netpoller, so
// no thread blocks, and re-armed from any goroutine. The descriptor is
// only reached through the file's RawConn, so a late arm after close can
// never touch a descriptor that has since got the same number.
type waiter struct {
	f   *os.File
	rc  syscall.RawConn
	buf [8]byte
}

func newWaiter() *waiter {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "pacer-timer")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	return &waiter{f: f, rc: rc}
}

// arm makes wait return after d; a negative d disarms.
func (w *waiter) arm(d time.Duration) {
	var spec unix.ItimerSpec
	if d >= 0 {
		spec.Value = unix.NsecToTimespec(max(int64(d), 1)) // zero would disarm
	}
	w.rc.Control(func(fd uintptr) { unix.TimerfdSettime(int(fd), 0, &spec, nil) })
}

// wait blocks until the armed time; it fails once the waiter is closed.
func (w *waiter) wait() error {
	_, err := w.f.Read(w.buf[:])
	return err
}

func (w *waiter) close() { w.f.Close() }
