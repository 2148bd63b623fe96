package rxtime

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Parse finds the timestamp among other control messages and refuses a
// truncated one.
func TestRxStamp(t *testing.T) {
	align := func(n int) int { return (n + unix.SizeofPtr - 1) &^ (unix.SizeofPtr - 1) }
	msg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, align(unix.SizeofCmsghdr+len(data)))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.SizeofCmsghdr + len(data))
		copy(b[unix.SizeofCmsghdr:], data)
		return b
	}
	ts := unix.NsecToTimespec(1_700_000_000_123_456_789)
	tsb := unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))
	other := msg(unix.SOL_IP, unix.IP_TTL, []byte{64, 0, 0, 0})
	both := append(append([]byte{}, other...), msg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, tsb)...)
	if got, ok := Parse(both); !ok || got != 1_700_000_000_123_456_789 {
		t.Errorf("Parse = %d, %v", got, ok)
	}
	if _, ok := Parse(other); ok {
		t.Error("found a stamp where there is none")
	}
	if _, ok := Parse(both[:len(both)-8]); ok {
		t.Error("accepted a truncated timestamp")
	}
	if _, ok := Parse(nil); ok {
		t.Error("found a stamp in nothing")
	}
}

// pair returns both ends of a loopback TCP connection; the accepted end
// is wrapped.
func pair(t testing.TB) (client net.Conn, server *Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	server, ok := Wrap(c.(*net.TCPConn))
	if !ok {
		t.Fatal("no receive stamps on loopback TCP")
	}
	return client, server
}

// Data read late carries the time it arrived, not the time of the read;
// the end of the stream and a deadline read as net.Conn's do.
func TestConnReceiveTime(t *testing.T) {
	const late = 50 * time.Millisecond
	client, server := pair(t)
	if server.Received() != 0 {
		t.Fatal("a receive time before any read")
	}
	// Stamping comes on (system-wide) shortly after the first socket asks.
	buf := make([]byte, 64)
	for i := 0; server.Received() == 0; i++ {
		if i == 200 {
			t.Fatal("no receive stamp after 200 probes")
		}
		client.Write([]byte("x"))
		if _, err := server.Read(buf); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	before := time.Now().UnixNano()
	if _, err := client.Write([]byte("POST / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixNano()
	time.Sleep(late)
	n, err := server.Read(buf)
	if err != nil || string(buf[:n]) != "POST / HTTP/1.1\r\n\r\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	readAt := time.Now().UnixNano()
	rx := server.Received()
	if rx < before || rx > after+int64(time.Millisecond) {
		t.Errorf("received at %+.3f ms from the write, want within it", float64(rx-before)/1e6)
	}
	if d := time.Duration(readAt - rx); d < late {
		t.Errorf("read %v after the receive time, want at least the %v the data waited", d, late)
	}

	server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err = server.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("read past the deadline: %v, want a timeout", err)
	}
	server.SetReadDeadline(time.Time{})
	client.Close()
	if _, err := server.Read(buf); err != io.EOF {
		t.Errorf("read after the peer closed: %v, want EOF", err)
	}
}

// Once Hold returns, a new connection's first data is stamped.
func TestHoldTurnsStampingOn(t *testing.T) {
	release, err := Hold()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	client, server := pair(t)
	client.Write([]byte("x"))
	buf := make([]byte, 8)
	if _, err := server.Read(buf); err != nil {
		t.Fatal(err)
	}
	if server.Received() == 0 {
		t.Error("the first read after Hold carried no stamp")
	}
}

// One chunk-sized write and its stamped read over loopback: the read takes
// no allocation.
func BenchmarkConnRead(b *testing.B) {
	client, server := pair(b)
	msg := make([]byte, 170)
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		client.Write(msg)
		if _, err := server.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// io.Copy from the connection goes through its stamped Read.
func TestConnCopyIsStamped(t *testing.T) {
	release, err := Hold()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	client, server := pair(t)
	client.Write([]byte("abc"))
	client.Close()
	var got strings.Builder
	if _, err := io.Copy(&got, server); err != nil || got.String() != "abc" {
		t.Fatalf("copied %q, %v", got.String(), err)
	}
	if server.Received() == 0 {
		t.Error("data copied out of the connection left no receive time")
	}
}
