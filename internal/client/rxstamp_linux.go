package client

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StampEnv set to "read" stamps every read when it returns, as net/http's
// path does, instead of with the kernel's receive time (for comparison).
const StampEnv = "AIPERF_ACTION_STAMP"

var noKernelStamps = os.Getenv(StampEnv) == "read"

// oobSize holds one SCM_TIMESTAMPNS message (a header and a timespec) with
// room to spare.
const oobSize = 64

// recvStamped is recvmsg(2) into p with the control messages in oob,
// without the allocation of unix.Recvmsg's source address.
func recvStamped(fd int, p, oob []byte) (n, oobn int, err error) {
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

// rxStamp finds the SCM_TIMESTAMPNS message in oob: the wall-clock time,
// in unix ns, at which the kernel received the newest data the read
// returned. (Segments that queue up on a socket are merged and carry the
// newest time, so a chunk the loop reaches only after the next one came is
// stamped with the next one's arrival: later than its own, never later
// than the read.)
func rxStamp(oob []byte) (int64, bool) {
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
