package sim

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func streamReq(id string, tokens int) string {
	body := `{"model":"m","messages":[{"role":"user","content":"q"}],"stream":true,"max_tokens":` +
		strconv.Itoa(tokens) + `,"ignore_eos":true}`
	return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Request-ID: " + id +
		"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// After a stream takes its connection over from net/http, the same
// connection serves streams and plain requests in turn, each answered in
// full, and Close ends it.
func TestTakenOverConnectionKeepsServing(t *testing.T) {
	s := New(Config{TTFT: time.Millisecond, ITL: time.Millisecond})
	srv := httptest.NewServer(s)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	read := func(what string) *http.Response {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s body: %v", what, err)
		}
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		return resp
	}
	for i, step := range []struct{ req, want string }{
		{streamReq("a", 5), "data: [DONE]"},
		{"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", ""},
		{streamReq("b", 3), "data: [DONE]"},
		{"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", `"object":"list"`},
		{"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", "404"},
		{streamReq("c", 2), "data: [DONE]"},
	} {
		if _, err := io.WriteString(conn, step.req); err != nil {
			t.Fatal(err)
		}
		resp := read(step.req[:20])
		b, _ := io.ReadAll(resp.Body)
		if step.want != "" && !strings.Contains(string(b), step.want) {
			t.Errorf("step %d: %d %q", i, resp.StatusCode, b)
		}
		if step.want == "data: [DONE]" && strings.Count(string(b), `"content":" `) == 0 {
			t.Errorf("step %d: no content in %q", i, b)
		}
	}
	s.Settle(2 * time.Second)
	if n := len(s.Truths()); n != 3 {
		t.Errorf("%d truths, want 3", n)
	}
	// Connection: close is honoured after a stream.
	io.WriteString(conn, strings.Replace(streamReq("d", 2), "Host: x\r\n", "Host: x\r\nConnection: close\r\n", 1))
	if resp := read("close"); !resp.Close {
		t.Error("Connection: close not answered in kind")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("connection still open after Connection: close: %v", err)
	}
	// Close ends the taken-over connections that are idle.
	c2, _ := net.Dial("tcp", srv.Listener.Addr().String())
	defer c2.Close()
	io.WriteString(c2, streamReq("e", 1))
	br2 := bufio.NewReader(c2)
	resp, err := http.ReadResponse(br2, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	s.Close()
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br2.ReadByte(); err != io.EOF {
		t.Errorf("Close left a taken-over connection open: %v", err)
	}
}

// A client that goes away mid-stream is seen at once, not at the next
// token: its truth is kept, marked aborted, well before the stream's end.
func TestClientGoneMidStream(t *testing.T) {
	s := New(Config{TTFT: time.Millisecond, ITL: 200 * time.Millisecond})
	srv := httptest.NewServer(s)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, streamReq("gone", 50))
	br := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadString('['); err != nil { // the first chunk has come
		t.Fatal(err)
	}
	conn.Close()
	deadline := time.Now().Add(2 * time.Second)
	for len(s.Truths()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	tr := s.Truths()
	if len(tr) != 1 || !tr[0].Aborted {
		t.Fatalf("truths %+v", tr)
	}
	if got := len(tr[0].Gaps); got > 3 {
		t.Errorf("the stream went on for %d more chunks after the client left", got)
	}
}
