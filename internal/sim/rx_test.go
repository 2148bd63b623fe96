package sim

import (
	"bufio"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// A request that waited in its socket before the simulator read it is
// dated by when it arrived, not by when it was read.
func TestArrivalIsReceiveTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("receive stamps are Linux's")
	}
	const waited = 50 * time.Millisecond
	s := New(DefaultConfig)
	defer s.Close()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := s.Listener(raw)
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	read := func() (*http.Request, time.Time) {
		t.Helper()
		req, err := http.ReadRequest(br)
		if err != nil {
			t.Fatal(err)
		}
		req.RemoteAddr = conn.RemoteAddr().String()
		return req, time.Now()
	}
	// Stamping comes on (system-wide) shortly after the first socket asks
	// (the kernel turns it on from a work queue, which a busy machine runs
	// late: a full test run on 2 busy cores once saw none in 200 probes of
	// 1 ms): probe until a request is dated by it, for up to 10 s.
	start := time.Now()
	for i := 0; ; i++ {
		if i == 5000 || time.Since(start) > 10*time.Second {
			t.Fatalf("no receive stamp after %d requests in %v", i, time.Since(start).Round(time.Millisecond))
		}
		client.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
		req, readAt := read()
		if s.arrival(req).Before(readAt.Add(-time.Microsecond)) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	sent := time.Now()
	client.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"))
	time.Sleep(waited)
	req, readAt := read()
	got := s.arrival(req)
	if d := got.Sub(sent); d < 0 || d > waited/2 {
		t.Errorf("arrival %v after the send, want about 0 (read %v after it)", d, readAt.Sub(sent))
	}
	conn.Close()
	if _, ok := s.rx.Load(req.RemoteAddr); ok {
		t.Error("a closed connection is still indexed")
	}
	if got := s.arrival(req); got.Before(time.Now().Add(-time.Millisecond)) {
		t.Errorf("a request of a closed connection dated %v ago", time.Since(got))
	}
}
