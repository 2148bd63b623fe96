package sim

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Every streamed type's response ends its chunked body once, and nothing
// follows it on the kept-alive connection. (TGI's, Triton's and SOLIDO's
// streams end with their last token event, no end event; an empty frame
// for it once wrote a second "0\r\n\r\n", which Go's client reads on an
// idle connection as an unsolicited response and then fails the request
// it had just sent there.)
func TestStreamsEndOnce(t *testing.T) {
	cfg := DefaultConfig
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, New(cfg)) }()
	defer func() { cancel(); <-done }()
	for _, c := range []struct{ path, body string }{
		{"/generate_stream", `{"inputs":"hello there","parameters":{"max_new_tokens":3},"ignore_eos":true}`},
		{"/v2/models/m/generate_stream", `{"text_input":"hello there","max_tokens":3,"ignore_eos":true}`},
		{"/rag/api/prompt", `{"query":["hello there"],"inference_model":"m","stream":true,"max_tokens":3,"ignore_eos":true}`},
		{"/inference/v1/generate", `{"token_ids":[1,2],"sampling_params":{"max_tokens":3,"ignore_eos":true},"stream":true}`},
		{"/generate", `{"text":"hello there","sampling_params":{"max_new_tokens":3,"ignore_eos":true},"stream":true}`},
		{"/v1/completions", `{"model":"m","prompt":"hello there","max_tokens":3,"ignore_eos":true,"stream":true}`},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, "POST "+c.path+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(c.body))+"\r\n\r\n"+c.body)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "event-stream") || len(b) == 0 {
			t.Fatalf("%s: %d %q %v\n%s", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), err, b)
		}
		// The body's end and anything after it came in the same write:
		// whatever follows is in the buffer or arrives at once.
		conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		extra := make([]byte, 64)
		n := br.Buffered()
		if n == 0 {
			n, _ = br.Read(extra)
		}
		if n > 0 {
			peek, _ := br.Peek(br.Buffered())
			t.Errorf("%s: %d bytes after the body's end: %q%q", c.path, n, peek, extra[:n])
		}
		conn.Close()
	}
}
