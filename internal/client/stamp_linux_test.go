package client

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/rxtime"
)

// On net/http's path the clock of a response is the kernel's receive time
// of the newest data its connection read, beneath TLS too: a response read
// late is stamped when it arrived, not when it was read.
func TestReadClockUnderTLS(t *testing.T) {
	const late = 50 * time.Millisecond
	release, err := rxtime.Hold()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	wrote := make(chan time.Time, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		brw.Flush()
		conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
		wrote <- time.Now()
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		conn.Read(make([]byte, 1)) // until the client is done
	}))
	defer srv.Close()
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.ServerName = "example.com" // (httptest's certificate)
	raw, err := dialStamped(context.Background(), "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tc := tls.Client(raw, cfg)
	c := &Client{Clock: clock()}
	clk, kernel := c.readClock(tc)
	if !kernel {
		t.Fatal("a stamped connection under TLS was not seen")
	}
	if _, err := tc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	w := <-wrote
	time.Sleep(late)
	buf := make([]byte, 256)
	n := 0
	for n < 43 {
		k, err := tc.Read(buf[n:])
		if err != nil {
			t.Fatalf("read: %v after %q", err, buf[:n])
		}
		n += k
	}
	readAt, at := c.Clock(), clk()
	if d := time.Duration(readAt - at); d < late*3/4 {
		t.Errorf("stamped %v before the read, want about the %v the data waited", d, late)
	}
	if d := time.Since(w) - time.Duration(readAt-at); d > late/2 || d < -late/2 {
		t.Errorf("stamp is %v from the server's write", d)
	}
	if again := clk(); again != at {
		t.Errorf("the same arrival read twice gave %d and %d", at, again)
	}
	if plain, kernel := c.readClock(nil); kernel || plain == nil {
		t.Error("a connection without stamps was taken for one")
	}
}
