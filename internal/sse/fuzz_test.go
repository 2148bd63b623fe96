package sse

import (
	"bytes"
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
func decodeFed(stream []byte, cuts []int) decoded {
	d := NewDecoder()
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
func decodeRead(stream []byte) decoded {
	r := NewReader(iotest.OneByteReader(bytes.NewReader(stream)), func() int64 { return 1 })
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
