package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func collect(t *testing.T, r io.Reader) ([]string, error) {
	t.Helper()
	var n int64
	rd := NewReader(r, func() int64 { n++; return n })
	var out []string
	for {
		ev, err := rd.Next()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		out = append(out, string(ev.Data))
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	stream := "data: {\"a\":1}\n\n: comment\n\nevent: x\ndata: two\ndata: lines\n\r\ndata: [DONE]\n\n"
	for name, r := range map[string]io.Reader{
		"whole":   strings.NewReader(stream),
		"onebyte": iotest.OneByteReader(strings.NewReader(stream)),
	} {
		got, err := collect(t, r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := []string{`{"a":1}`, "two\nlines", "[DONE]"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: got %q", name, got)
		}
	}
}

func TestCRLF(t *testing.T) {
	t.Parallel()
	got, err := collect(t, strings.NewReader("data: a\r\n\r\ndata: b\r\n\r\n"))
	if err != nil || strings.Join(got, "|") != "a|b" {
		t.Fatalf("got %q %v", got, err)
	}
}

func TestTruncated(t *testing.T) {
	t.Parallel()
	_, err := collect(t, strings.NewReader("data: a\n\ndata: {\"cut"))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("want ErrUnexpectedEOF, got %v", err)
	}
}

func TestTimestampIsReadThatCompletesEvent(t *testing.T) {
	t.Parallel()
	var n int64
	rd := NewReader(iotest.OneByteReader(strings.NewReader("data: x\n\n")), func() int64 { n++; return n })
	ev, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if ev.At != int64(len("data: x\n\n")) || rd.FirstRead() != 1 {
		t.Fatalf("At=%d first=%d", ev.At, rd.FirstRead())
	}
}

func BenchmarkReader(b *testing.B) {
	chunk := "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
	stream := strings.Repeat(chunk, 128)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	sr := strings.NewReader(stream)
	rd := NewReader(sr, func() int64 { return 0 })
	for i := 0; i < b.N; i++ {
		sr.Reset(stream)
		rd.r, rd.err, rd.buf, rd.start = sr, nil, rd.buf[:0], 0
		for {
			if _, err := rd.Next(); err != nil {
				break
			}
		}
	}
}

// A stream that once carried a long event (just under MaxEvent) keeps at
// most RetainCap of buffer afterwards, fed as the event loop feeds it or
// read, and across Reset: memory at rest per stream is bounded.
func TestLongEventBufferIsGivenBack(t *testing.T) {
	t.Parallel()
	long := "data: {\"x\":\"" + strings.Repeat("a", MaxEvent-64) + "\"}\n\n"
	small := "data: {\"x\":1}\n\n"
	d := NewDecoder()
	for i := 0; i < len(long); i += 1500 { // as packets arrive
		d.Feed([]byte(long[i:min(i+1500, len(long))]), 1)
		for {
			if _, ok := d.Scan(); !ok {
				break
			}
		}
	}
	d.Feed([]byte(small), 2)
	if ev, ok := d.Scan(); !ok || string(ev.Data) != `{"x":1}` {
		t.Fatalf("the small event after the long one: %q %v", ev.Data, ok)
	}
	d.Feed(nil, 3)
	if got := cap(d.buf) + cap(d.data); got > 2*RetainCap {
		t.Errorf("after the long event the decoder keeps %d bytes, want at most %d", got, 2*RetainCap)
	}
	d.Feed([]byte(long), 4)
	if _, ok := d.Scan(); !ok {
		t.Fatal("the long event")
	}
	d.Reset()
	if got := cap(d.buf) + cap(d.data); got > 2*RetainCap {
		t.Errorf("after Reset the decoder keeps %d bytes", got)
	}
	r := NewReader(strings.NewReader(long+small), func() int64 { return 1 })
	for i := 0; i < 2; i++ {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	r.compact()
	if got := cap(r.buf) + cap(r.data); got > 2*RetainCap {
		t.Errorf("a Reader keeps %d bytes after the long event", got)
	}
}
