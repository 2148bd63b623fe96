package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// sseBody is n content events, a usage event and, if done, [DONE].
func sseBody(n int, done bool) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(sseEvent(" " + tokenizer.Word(i))) // one token each
	}
	b.WriteString(`data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":` + fmt.Sprint(n) + `,"total_tokens":9}}` + "\n\n")
	if done {
		b.WriteString("data: [DONE]\n\n")
	}
	return b.String()
}

// raw answers with bytes written straight on the connection, in pieces
// of at most piece bytes (0: at once), then closes it when close is set.
func raw(resp string, piece int, close bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer func() {
			if close {
				conn.Close()
			}
		}()
		brw.Flush()
		for rest := resp; len(rest) > 0; {
			n := len(rest)
			if piece > 0 {
				n = min(n, piece)
			}
			conn.Write([]byte(rest[:n]))
			rest = rest[n:]
			if piece > 0 {
				time.Sleep(200 * time.Microsecond)
			}
		}
		if !close {
			// Keep the connection for the client's next request.
			go func() {
				defer conn.Close()
				conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				bufio.NewReader(conn).Peek(1)
			}()
		}
	}
}

func chunked(body string, size int) string {
	var b strings.Builder
	for len(body) > 0 {
		n := min(len(body), size)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// Every response shape gives the loop the same record as net/http.
func TestLoopMatchesNetHTTP(t *testing.T) {
	sseHead := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	cases := []struct {
		name    string
		h       http.Handler
		kind    string
		osl     int
		chunks  int
		status  int
		usedOSL int // the server's count, when it sent usage
	}{
		{name: "flushed chunks", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range strings.SplitAfter(sseBody(5, true), "\n\n") {
				w.Write([]byte(ev))
				w.(http.Flusher).Flush()
			}
		}), osl: 5, chunks: 5, status: 200, usedOSL: 5},
		// A stream that just stops, with neither [DONE] nor a finish_reason,
		// was cut short, whatever the transport's end looked like.
		{name: "no DONE", h: raw(sseHead+"Transfer-Encoding: chunked\r\n\r\n"+chunked(sseBody(4, false), 100), 0, false), kind: record.ErrStreamCut, osl: 4, chunks: 4, status: 200, usedOSL: 4},
		{name: "finish reason without DONE", h: raw(sseHead+"Transfer-Encoding: chunked\r\n\r\n"+chunked(sseBody(4, false)+chunkPrefix+`{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n", 100), 0, false), osl: 4, chunks: 4, status: 200, usedOSL: 4},
		{name: "interim heads in the same write", h: raw("HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"+sseHead+"Transfer-Encoding: chunked\r\n\r\n"+chunked(sseBody(3, true), 100), 0, false), osl: 3, chunks: 3, status: 200, usedOSL: 3},
		{name: "byte by byte", h: raw(sseHead+"Transfer-Encoding: chunked\r\n\r\n"+chunked(sseBody(3, true), 37), 7, false), osl: 3, chunks: 3, status: 200, usedOSL: 3},
		{name: "content length", h: raw(sseHead+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(sseBody(6, true)))+sseBody(6, true), 0, false), osl: 6, chunks: 6, status: 200, usedOSL: 6},
		{name: "until close", h: raw(sseHead+"Connection: close\r\n\r\n"+sseBody(2, false), 0, true), kind: record.ErrStreamCut, osl: 2, chunks: 2, status: 200, usedOSL: 2},
		{name: "until close with DONE", h: raw(sseHead+"Connection: close\r\n\r\n"+sseBody(2, true), 0, true), osl: 2, chunks: 2, status: 200, usedOSL: 2},
		{name: "last event without blank line", h: raw(sseHead+"Connection: close\r\n\r\n"+strings.TrimSuffix(sseBody(2, true), "\n"), 0, true), osl: 2, chunks: 2, status: 200, usedOSL: 2},
		{name: "cut inside an event", h: raw(sseHead+"Connection: close\r\n\r\n"+sseBody(2, false)[:len(sseEvent(" w0"))+20], 0, true), kind: record.ErrStreamCut, chunks: 1, status: 200},
		{name: "cut inside the chunked body", h: raw(sseHead+"Transfer-Encoding: chunked\r\n\r\n"+chunked(sseBody(3, true), 64)[:300], 0, true), kind: record.ErrStreamCut, chunks: 1, status: 200},
		{name: "endless line", h: raw(sseHead+"Connection: close\r\n\r\n"+sseEvent(" a")+"data: "+strings.Repeat("x", 3<<20), 0, true), kind: record.ErrMalformed, chunks: 1, status: 200}, // held to 1 MiB, not to the client's memory
		// A multi-byte character split across chunks (servers do that) is
		// not an error: the bytes are counted as they come.
		// (" a", the U+FFFD the decoder makes of the cut sequence, and a word: 3 o200k tokens.)
		{name: "invalid UTF-8 in content", h: raw(sseHead+"Connection: close\r\n\r\n"+chunkPrefix+"{\"index\":0,\"delta\":{\"content\":\" a\xe2\x82\"},\"finish_reason\":null}]}\n\n"+sseBody(1, true), 0, true), osl: 3, chunks: 2, status: 200, usedOSL: 1},
		{name: "a non-SSE 200", h: raw("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nhello", 0, true), kind: record.ErrMalformed, status: 200},
		{name: "malformed chunk", h: raw(sseHead+"Connection: close\r\n\r\ndata: {\"choices\":[\n\n", 0, true), kind: record.ErrMalformed, status: 200},
		{name: "error in stream", h: raw(sseHead+"Connection: close\r\n\r\n"+sseEvent(" a")+`data: {"error":{"message":"out of memory"}}`+"\n\n", 0, true), kind: record.ErrServer, chunks: 1, status: 200},
		{name: "http 500", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
		}), kind: "http_500", status: 500},
		{name: "whole JSON", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"one two three"}}],"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`)
		}), kind: record.ErrNotStreamed, osl: 3, status: 200, usedOSL: 3}, // a whole answer to a streaming request has no first token
		{name: "empty stream", h: raw(sseHead+"Connection: close\r\n\r\ndata: [DONE]\n\n", 0, true), kind: record.ErrEmpty, status: 200},
		{name: "closed without answer", h: raw("", 0, true), kind: record.ErrStreamCut},
	}
	loop := newLoop(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			for _, l := range []*Loop{nil, loop} {
				name := "net/http"
				if l != nil {
					name = "loop"
				}
				c := &Client{HTTP: &http.Client{Transport: NewTransport(4)}, URL: srv.URL + "/v1/chat/completions",
					Kind: endpoint.Chat{}, Streaming: true, Clock: clock(), Loop: l}
				var rec record.Record
				c.Do(context.Background(), []byte(`{}`), "id-1", 0, 8, &rec)
				if rec.ErrKind != tc.kind || rec.OSL != tc.osl || len(rec.Chunks) != tc.chunks || rec.Status != tc.status || rec.ServerOSL != tc.usedOSL {
					t.Errorf("%s: kind %q osl %d chunks %d status %d server osl %d (%s); want %q %d %d %d %d",
						name, rec.ErrKind, rec.OSL, len(rec.Chunks), rec.Status, rec.ServerOSL, rec.ErrMsg, tc.kind, tc.osl, tc.chunks, tc.status, tc.usedOSL)
				}
				if rec.Sent <= 0 || rec.End < rec.Sent || (tc.chunks > 0 && (rec.FirstByte < rec.Sent || rec.Chunks[0] < rec.FirstByte)) {
					t.Errorf("%s: times out of order: sent %d first byte %d chunks %v end %d", name, rec.Sent, rec.FirstByte, rec.Chunks, rec.End)
				}
			}
		})
	}
}

// countConns counts the connections srv accepts into n.
func countConns(srv *httptest.Server, n *atomic.Int32) {
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
}

// newLoop starts a loop for the test's lifetime.
func newLoop(t *testing.T) *Loop {
	t.Helper()
	loop, err := NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loop.Close() })
	return loop
}

// loopClient is a streaming chat client on its own loop.
func loopClient(t *testing.T, url string) *Client {
	return &Client{URL: url, Kind: endpoint.Chat{}, Streaming: true, Clock: clock(), Loop: newLoop(t)}
}

func clock() func() int64 {
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) + 1 }
}

// Kept-alive connections are reused, and one the server closed while idle
// is replaced without an error.
func TestLoopKeepAliveAndResend(t *testing.T) {
	var conns atomic.Int32
	var closeNext atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(sseBody(2, true)))
		if closeNext.Load() {
			// The response ends; the connection looks reusable, and is
			// closed once the client has it back in its pool.
			w.(http.Flusher).Flush()
			conn, brw, _ := w.(http.Hijacker).Hijack()
			brw.WriteString("0\r\n\r\n")
			brw.Flush()
			go func() { time.Sleep(20 * time.Millisecond); conn.Close() }()
		}
	}))
	countConns(srv, &conns)
	srv.Start()
	defer srv.Close()
	c := loopClient(t, srv.URL)
	for i := range 5 {
		var rec record.Record
		c.Do(context.Background(), []byte(`{}`), "", 0, 2, &rec)
		if !rec.OK() || rec.OSL != 2 {
			t.Fatalf("request %d: %+v", i, rec)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 sequential requests used %d connections, want 1", n)
	}
	closeNext.Store(true)
	var rec record.Record
	c.Do(context.Background(), []byte(`{}`), "", 0, 2, &rec)
	time.Sleep(100 * time.Millisecond) // the server closes the pooled connection
	closeNext.Store(false)
	rec = record.Record{}
	c.Do(context.Background(), []byte(`{}`), "", 0, 2, &rec)
	if !rec.OK() || rec.OSL != 2 {
		t.Fatalf("after the server closed the idle connection: %+v", rec)
	}
}

// Cancellation, a timeout and a refused connection end as their kinds, and
// the loop goes on serving.
func TestLoopCancelTimeoutRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 50; i++ {
			if _, err := w.Write([]byte(sseEvent(" x"))); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		w.Write([]byte("data: [DONE]\n\n"))
	}))
	defer srv.Close()
	c := loopClient(t, srv.URL)
	var rec record.Record
	c.Do(context.Background(), []byte(`{}`), "", 50*time.Millisecond, 50, &rec)
	if rec.ErrKind != record.ErrCancelled || len(rec.Chunks) == 0 || len(rec.Chunks) > 10 {
		t.Errorf("cancel after 50 ms: kind %q with %d chunks", rec.ErrKind, len(rec.Chunks))
	}
	c.Timeout = 60 * time.Millisecond
	rec = record.Record{}
	c.Do(context.Background(), []byte(`{}`), "", 0, 50, &rec)
	if rec.ErrKind != record.ErrTimeout {
		t.Errorf("timeout: kind %q (%s)", rec.ErrKind, rec.ErrMsg)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	refused := &Client{URL: "http://" + addr + "/", Kind: endpoint.Chat{}, Streaming: true, Clock: clock(), Loop: c.Loop} // the same loop
	rec = record.Record{}
	refused.Do(context.Background(), []byte(`{}`), "", 0, 1, &rec)
	if rec.ErrKind != record.ErrConnRefused {
		t.Errorf("refused: kind %q (%s)", rec.ErrKind, rec.ErrMsg)
	}
	// Headers that come slower than the timeout: a timeout too.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	sc := &Client{URL: slow.URL, Kind: endpoint.Chat{}, Streaming: true, Clock: clock(), Loop: c.Loop, Timeout: 60 * time.Millisecond}
	rec = record.Record{}
	sc.Do(context.Background(), []byte(`{}`), "", 0, 1, &rec)
	if rec.ErrKind != record.ErrTimeout {
		t.Errorf("slow headers: kind %q (%s)", rec.ErrKind, rec.ErrMsg)
	}
	c.Timeout = 0
	rec = record.Record{}
	c.Do(context.Background(), []byte(`{}`), "", 0, 50, &rec)
	if !rec.OK() || rec.OSL != 50 {
		t.Errorf("after all that: %+v", rec.ErrMsg)
	}
}

func TestChunkedDecoder(t *testing.T) {
	body := "hello, chunked world"
	enc := "5;ext=1\r\nhello\r\n0F\r\n, chunked world\r\n0\r\nTrailer: x\r\n\r\n"
	for step := 1; step <= len(enc); step++ {
		var d chunks
		var got strings.Builder
		end := false
		for i := 0; i < len(enc); i += step {
			e, err := d.decode([]byte(enc[i:min(i+step, len(enc))]), func(p []byte) { got.Write(p) })
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			end = e
		}
		if got.String() != body || !end {
			t.Fatalf("step %d: %q end %v", step, got.String(), end)
		}
	}
	for _, bad := range []string{"x\r\n", "5\r\nhelloXX\r\n", "\r\n", "12345678901234567\r\n"} {
		var d chunks
		if _, err := d.decode([]byte(bad), func([]byte) {}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// BenchmarkLoopChunkPath is the loop's per-chunk work on one 128-token
// stream as the simulator sends it (each event its own HTTP chunk, one
// read each): chunked framing, SSE framing, the chunk check, finding the
// text, counting tokens, timestamping. The read syscall is not in it (see
// calibrate for the whole). Divide ns/op by 131 reads for a chunk.
func BenchmarkLoopChunkPath(b *testing.B) {
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	events := strings.SplitAfter(stream(), "\n\n")
	reads := [][]byte{[]byte(head)}
	for _, ev := range events {
		if ev != "" {
			reads = append(reads, []byte(fmt.Sprintf("%x\r\n%s\r\n", len(ev), ev)))
		}
	}
	reads = append(reads, []byte("0\r\n\r\n"))
	c := &Client{Kind: endpoint.Chat{}, Streaming: true, Clock: func() int64 { return 1 }}
	sc := &scratch{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var rec record.Record
		in := &inflight{c: c, sc: sc, rec: &rec, maxTokens: 128}
		for _, r := range reads {
			in.feed(r, 2)
		}
		if !in.over || !in.recorded || rec.OSL != 128 || len(rec.Chunks) != 128 {
			b.Fatalf("over %v osl %d chunks %d %s", in.over, rec.OSL, len(rec.Chunks), rec.ErrMsg)
		}
	}
}

// A server that ends the chunked body well after [DONE]: the request is
// done at [DONE], and the connection is still reused.
func TestLoopDrainsAfterDone(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(sseBody(3, true)))
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond) // the body's end comes later
	}))
	countConns(srv, &conns)
	srv.Start()
	defer srv.Close()
	c := loopClient(t, srv.URL)
	for i := range 3 {
		var rec record.Record
		start := time.Now()
		c.Do(context.Background(), []byte(`{}`), "", 0, 3, &rec)
		took := time.Since(start)
		if !rec.OK() || rec.OSL != 3 {
			t.Fatalf("request %d: %+v", i, rec)
		}
		if took >= 250*time.Millisecond {
			t.Errorf("request %d waited %v for the body's end", i, took)
		}
		time.Sleep(400 * time.Millisecond) // the end arrives; the connection goes back to the pool
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("3 requests used %d connections, want 1", n)
	}
}

// A server that never ends the body after [DONE]: the request is done at
// [DONE], and the connection is closed after drainFor instead of kept.
func TestLoopDrainIsBounded(t *testing.T) {
	left := make(chan time.Duration, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(sseBody(2, true)))
		w.(http.Flusher).Flush()
		start := time.Now()
		select {
		case <-r.Context().Done():
			left <- time.Since(start)
		case <-time.After(5 * time.Second):
			left <- -1
		}
	}))
	defer srv.Close()
	c := loopClient(t, srv.URL)
	var rec record.Record
	c.Do(context.Background(), []byte(`{}`), "", 0, 2, &rec)
	if !rec.OK() || rec.OSL != 2 {
		t.Fatalf("%+v", rec)
	}
	if d := <-left; d < drainFor/2 || d > 3*drainFor {
		t.Errorf("the connection was closed %v after [DONE], want about %v", d, drainFor)
	}
}

// A request body larger than the socket's buffers goes out whole.
func TestLoopLargeBody(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // let the client's socket fill
		n, _ := io.Copy(io.Discard, r.Body)
		got.Store(n)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(sseBody(1, true)))
	}))
	defer srv.Close()
	c := loopClient(t, srv.URL)
	body := []byte(`{"prompt":"` + strings.Repeat("x", 16<<20) + `"}`)
	var rec record.Record
	c.Do(context.Background(), body, "", 0, 1, &rec)
	if !rec.OK() || got.Load() != int64(len(body)) {
		t.Fatalf("%d of %d bytes arrived: %+v", got.Load(), len(body), rec.ErrMsg)
	}
}

// Headers reach the server the same way on both paths: the API key, a
// custom header, a custom Host (once), the request ID and the user agent.
func TestLoopHeadersMatchNetHTTP(t *testing.T) {
	got := make(chan http.Header, 2)
	hosts := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		hosts <- r.Host
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(sseBody(1, true)))
	}))
	defer srv.Close()
	loop := newLoop(t)
	var seen []string
	for _, l := range []*Loop{nil, loop} {
		c := &Client{HTTP: &http.Client{Transport: NewTransport(1)}, URL: srv.URL + "/v1/chat/completions?x=1",
			Kind: endpoint.Chat{}, Streaming: true, Clock: clock(), Loop: l, APIKey: "k",
			Headers: [][2]string{{"X-Custom", "v"}, {"Host", "model.example"}}}
		var rec record.Record
		c.Do(context.Background(), []byte(`{}`), "id-7", 0, 1, &rec)
		if !rec.OK() {
			t.Fatalf("%v: %s", l != nil, rec.ErrMsg)
		}
		h, host := <-got, <-hosts
		seen = append(seen, fmt.Sprintf("host=%s auth=%s custom=%s id=%s ua=%s ct=%s accept=%s hosts=%d",
			host, h.Get("Authorization"), h.Get("X-Custom"), h.Get("X-Request-Id"), h.Get("User-Agent"),
			h.Get("Content-Type"), h.Get("Accept"), len(h.Values("Host"))))
	}
	if seen[0] != seen[1] {
		t.Errorf("net/http sent %s\nthe loop sent %s", seen[0], seen[1])
	}
	if !strings.Contains(seen[1], "host=model.example auth=Bearer k custom=v id=id-7 ua=aiperf-action") {
		t.Errorf("headers: %s", seen[1])
	}
}

// A read the loop gets to late is stamped with the kernel's receive time:
// the loop's delay stays out of the record and shows in ReadStats. With
// read-return stamps the same stall lands in the time to first token.
func TestLoopStampsKernelReceiveTime(t *testing.T) {
	const stall = 60 * time.Millisecond
	for _, kernel := range []bool{true, false} {
		t.Run(fmt.Sprintf("kernel=%v", kernel), func(t *testing.T) {
			defer func(v bool) { noKernelStamps = v }(noKernelStamps)
			noKernelStamps = !kernel
			clk := clock()
			loop := newLoop(t)
			var wrote atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				time.Sleep(20 * time.Millisecond) // the head is read before the stall
				// The loop takes mu for each ready socket: holding it
				// keeps the loop from reading the token until the stall ends.
				loop.mu.Lock()
				w.Write([]byte(sseEvent("first")))
				w.(http.Flusher).Flush()
				wrote.Store(clk())
				time.Sleep(stall)
				loop.mu.Unlock()
				// Data queued behind the token before the loop reads would
				// merge with it, and a read carries the newest data's time.
				time.Sleep(stall / 2)
				w.Write([]byte(sseBody(2, true)))
			}))
			defer srv.Close()
			c := &Client{URL: srv.URL, Kind: endpoint.Chat{}, Streaming: true, Clock: clk, Loop: loop}
			var rec record.Record
			c.Do(context.Background(), []byte(`{}`), "", 0, 3, &rec)
			if !rec.OK() {
				t.Fatalf("record: %+v", rec)
			}
			late := time.Duration(rec.FirstToken - wrote.Load())
			loop.Close()
			st := loop.ReadStats()
			if kernel {
				if late > stall/3 {
					t.Errorf("first token stamped %v after the server wrote it; the loop's stall of %v leaked in", late, stall)
				}
				if st.KernelReads == 0 || st.OtherReads != 0 {
					t.Errorf("reads: %d kernel-stamped, %d not", st.KernelReads, st.OtherReads)
				}
				if mx := time.Duration(st.Delay.Max()) * time.Microsecond; mx < stall*3/4 {
					t.Errorf("longest read delay %v, want about the stall (%v)", mx, stall)
				}
			} else {
				if late < stall*3/4 {
					t.Errorf("read-return stamp only %v after the write: the stall did not happen, the test proves nothing", late)
				}
				if st.KernelReads != 0 || st.OtherReads == 0 {
					t.Errorf("reads: %d kernel-stamped, %d not", st.KernelReads, st.OtherReads)
				}
			}
		})
	}
}
