package client

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
)

// dechunk decodes body fed in the pieces cut at cuts.
func dechunk(body []byte, cuts []int) (payload []byte, end bool, err error) {
	var d chunks
	prev := 0
	for _, c := range append(cuts, len(body)) {
		e, derr := d.decode(body[prev:c], func(p []byte) { payload = append(payload, p...) })
		prev = c
		if derr != nil {
			return payload, e, derr
		}
		if e {
			return payload, true, nil
		}
	}
	return payload, false, nil
}

// The chunked decoder gives the same payload, end and failure however the
// body is cut into reads; a body that encodes a payload in chunks of the
// fuzzer's sizes (hex in either case, extensions, trailers) decodes to
// exactly that payload; nothing panics.
func FuzzChunked(f *testing.F) {
	f.Add([]byte("4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nTrailer: x\r\n\r\n"), uint16(6), []byte("hello, world"), []byte{3, 0, 9})
	f.Add([]byte("1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n"), uint16(2), []byte{}, []byte{})
	f.Add([]byte("fffffffffffffff\r\n"), uint16(1), []byte("x"), []byte{1})
	f.Add([]byte("zz\r\n"), uint16(0), []byte("data: [DONE]\n\n"), []byte{255})
	f.Fuzz(func(t *testing.T, body []byte, split uint16, payload, sizes []byte) {
		if len(body) > 1<<14 || len(payload) > 1<<14 {
			return
		}
		p0, e0, err0 := dechunk(body, nil)
		k := int(split) % (len(body) + 1)
		p1, e1, err1 := dechunk(body, []int{k})
		if !bytes.Equal(p0, p1) || e0 != e1 || (err0 == nil) != (err1 == nil) {
			t.Fatalf("cut at %d: %q %v %v, whole: %q %v %v", k, p1, e1, err1, p0, e0, err0)
		}
		bytewise := make([]int, 0, len(body))
		for i := 1; i < len(body); i++ {
			bytewise = append(bytewise, i)
		}
		if p2, e2, err2 := dechunk(body, bytewise); !bytes.Equal(p0, p2) || e0 != e2 || (err0 == nil) != (err2 == nil) {
			t.Fatalf("byte by byte: %q %v %v, whole: %q %v %v", p2, e2, err2, p0, e0, err0)
		}

		var enc bytes.Buffer
		rest := payload
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(sizes) && sizes[i] > 0 {
				n = min(n, int(sizes[i]))
			}
			size := fmt.Sprintf("%x", n)
			if i%2 == 1 {
				size = fmt.Sprintf("%X;name=v", n)
			}
			enc.WriteString(size + "\r\n")
			enc.Write(rest[:n])
			enc.WriteString("\r\n")
			rest = rest[n:]
		}
		enc.WriteString("0\r\nX-Trailer: 1\r\n\r\n")
		got, end, err := dechunk(enc.Bytes(), []int{min(k, enc.Len())})
		if err != nil || !end || !bytes.Equal(got, payload) {
			t.Fatalf("%q: %q end %v err %v, want %q", enc.Bytes(), got, end, err, payload)
		}
	})
}

// The response head parser never panics, and what it reports holds
// together: a length-framed body has a length, a close-framed one ends the
// connection, an event stream is a 200.
func FuzzReadHead(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n"))
	f.Add([]byte("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: -1\r\nContent-Length: 7\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var sc scratch
		for range 4 { // a few 1xx heads, then the real one
			i := headEnd(b)
			if i < 0 {
				return
			}
			rh, err := sc.readHead(b[:i], endpoint.Chat{})
			if err != nil {
				return
			}
			if rh.interim {
				if rh.status < 100 || rh.status > 199 {
					t.Fatalf("interim head with status %d", rh.status)
				}
				b = b[i:]
				continue
			}
			switch {
			case rh.framing == byLength && rh.length < 0:
				t.Fatalf("%q: length-framed with length %d", b[:i], rh.length)
			case rh.framing == byClose && rh.keep:
				t.Fatalf("%q: close-framed but kept alive", b[:i])
			case rh.sse && rh.status != 200:
				t.Fatalf("%q: an event stream with status %d", b[:i], rh.status)
			case rh.framing != byLength && rh.framing != byChunks && rh.framing != byClose:
				t.Fatalf("framing %d", rh.framing)
			}
			return
		}
	})
}

// outcome of a response fed to the state machine.
type fedOutcome struct {
	over, recorded, keep bool
	status, osl, chunks  int
	kind                 string
}

func feedResponse(resp []byte, cuts []int) fedOutcome {
	c := &Client{Kind: endpoint.Chat{}, Streaming: true, Clock: func() int64 { return 1 }}
	var rec record.Record
	in := &inflight{c: c, sc: &scratch{}, rec: &rec, maxTokens: 8, done: make(chan struct{})}
	prev := 0
	for i, cut := range append(cuts, len(resp)) {
		if in.over {
			break
		}
		in.feed(resp[prev:cut], int64(10+i))
		prev = cut
	}
	if !in.over {
		in.eof(fmt.Errorf("%w", errEOFForTest))
	}
	return fedOutcome{in.over, in.recorded, in.keep, rec.Status, rec.OSL, len(rec.Chunks), rec.ErrKind}
}

var errEOFForTest = fmt.Errorf("test: connection closed")

// The per-request state machine records the same outcome however a
// response is cut into reads (stamps aside), and never panics.
func FuzzResponse(f *testing.F) {
	ok := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	ev := "data: {\"choices\":[{\"delta\":{\"content\":\" w\"}}]}\n\ndata: [DONE]\n\n"
	f.Add([]byte(ok+fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(ev), ev)), uint16(40))
	f.Add([]byte("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 14\r\n\r\n{\"error\":\"x\"}\n"), uint16(3))
	f.Add([]byte("HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+ev), uint16(60))
	f.Add([]byte(ok+"5\r\ndata:\r\nzz\r\n"), uint16(90))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\n"+ok+fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(ev), ev)), uint16(25))
	f.Fuzz(func(t *testing.T, resp []byte, split uint16) {
		if len(resp) > 1<<14 {
			return
		}
		whole := feedResponse(resp, nil)
		k := int(split) % (len(resp) + 1)
		if got := feedResponse(resp, []int{k}); got != whole {
			t.Fatalf("cut at %d: %+v, whole: %+v", k, got, whole)
		}
	})
}
