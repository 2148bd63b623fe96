package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// decoded is what a stream decodes to: its events' data, and how it ended.
type decoded struct {
	events []string
	end    error
}

// decodeFed feeds stream to a decoder in the pieces cut at cuts (each a
// position in stream, increasing), scanning after each, then ends it.
func decodeFed(stream []byte, cuts []int) decoded { return decodeFedAs(stream, cuts, false) }

func decodeFedAs(stream []byte, cuts []int, lines bool) decoded {
	d := NewDecoder()
	if lines {
		d.Lines()
	}
	var out decoded
	prev := 0
	for i, c := range append(cuts, len(stream)) {
		d.Feed(stream[prev:c], int64(i+1))
		prev = c
		for {
			ev, ok := d.Scan()
			if !ok {
				break
			}
			out.events = append(out.events, string(ev.Data))
		}
	}
	for range len(stream) + 1 { // bounded: End yields each event once
		ev, err := d.End()
		if err != nil {
			out.end = err
			break
		}
		out.events = append(out.events, string(ev.Data))
	}
	return out
}

// decodeRead reads stream through a Reader that gets one byte per Read.
func decodeRead(stream []byte) decoded { return decodeReadAs(stream, false) }

func decodeReadAs(stream []byte, lines bool) decoded {
	r := NewReader(iotest.OneByteReader(bytes.NewReader(stream)), func() int64 { return 1 })
	if lines {
		r.Lines()
	}
	var out decoded
	for range len(stream) + 1 {
		ev, err := r.Next()
		if err != nil {
			out.end = err
			break
		}
		out.events = append(out.events, string(ev.Data))
	}
	return out
}

func same(a, b decoded) bool {
	if len(a.events) != len(b.events) || !errors.Is(a.end, b.end) && !errors.Is(b.end, a.end) {
		return false
	}
	for i := range a.events {
		if a.events[i] != b.events[i] {
			return false
		}
	}
	return true
}

// However a stream is cut into reads, it decodes to the same events and
// the same end, by the fed decoder and by the pulling Reader alike; and
// nothing panics.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\" hi\"}}]}\n\ndata: [DONE]\n\n"), uint16(7))
	f.Add([]byte(": keep-alive\r\n\r\nevent: message\r\ndata: a\r\ndata: b\r\n\r\ndata:[DONE]\r\n\r\n"), uint16(19))
	f.Add([]byte("data: cut in the mid"), uint16(3))
	f.Add([]byte("id: 1\nretry: 5\n\n\n\ndata\ndata:\n\n"), uint16(0))
	f.Add([]byte("data: x\n\r\ndata: y\r\n\n"), uint16(8))
	f.Fuzz(func(t *testing.T, stream []byte, split uint16) {
		if len(stream) > 4096 {
			return
		}
		whole := decodeFed(stream, nil)
		k := int(split) % (len(stream) + 1)
		if got := decodeFed(stream, []int{k}); !same(whole, got) {
			t.Fatalf("cut at %d: %+v, whole: %+v", k, got, whole)
		}
		bytewise := make([]int, 0, len(stream))
		for i := 1; i < len(stream); i++ {
			bytewise = append(bytewise, i)
		}
		if got := decodeFed(stream, bytewise); !same(whole, got) {
			t.Fatalf("byte by byte: %+v, whole: %+v", got, whole)
		}
		if got := decodeRead(stream); !same(whole, got) {
			t.Fatalf("Reader: %+v, decoder: %+v", got, whole)
		}
		if whole.end != io.EOF && whole.end != io.ErrUnexpectedEOF {
			t.Fatalf("end %v", whole.end)
		}
	})
}

// NDJSON (Ollama's streams): however a stream is cut into reads, the fed
// decoder and the pulling Reader give the same events and end, and those
// are exactly its non-blank lines, trimmed; a last line without its newline
// counts when it is a whole JSON value, and is a cut stream otherwise.
func FuzzLines(f *testing.F) {
	f.Add([]byte("{\"message\":{\"content\":\"The\"},\"done\":false}\n{\"done\":true,\"eval_count\":2}\n"), uint16(9))
	f.Add([]byte("{\"response\":\" a\"}\r\n\r\n  \n{\"done\":true}"), uint16(4))
	f.Add([]byte("{\"response\":\" cut"), uint16(2))
	f.Fuzz(func(t *testing.T, stream []byte, split uint16) {
		if len(stream) > 4096 {
			return
		}
		whole := decodeFedAs(stream, nil, true)
		k := int(split) % (len(stream) + 1)
		if got := decodeFedAs(stream, []int{k}, true); !same(whole, got) {
			t.Fatalf("cut at %d: %+v, whole: %+v", k, got, whole)
		}
		if got := decodeReadAs(stream, true); !same(whole, got) {
			t.Fatalf("Reader: %+v, decoder: %+v", got, whole)
		}
		want := decoded{end: io.EOF}
		parts := bytes.Split(stream, []byte("\n"))
		for i, p := range parts {
			line := bytes.TrimSpace(p)
			if len(line) == 0 {
				continue
			}
			if i == len(parts)-1 && !json.Valid(line) { // no newline after it
				want.end = io.ErrUnexpectedEOF
				break
			}
			want.events = append(want.events, string(line))
		}
		if !same(whole, want) {
			t.Fatalf("%q: %+v, want %+v", stream, whole, want)
		}
	})
}
