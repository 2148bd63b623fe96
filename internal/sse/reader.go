// Package sse reads Server-Sent Events streams without goroutines.
//
// The reader timestamps every Read when it returns, before any parsing, and
// each event carries the timestamp of the read that completed it: that is
// the moment the client could first have seen the event.
package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxEvent is the longest event the reader holds while waiting for its
// end: a stream's chunks are a few hundred bytes, so a line that runs on
// past this is a broken server, and holding it would take the client's
// memory and delay every other stream.
const MaxEvent = 1 << 20

// RetainCap is the most buffer a reader keeps between events: one that
// grew for a long event (up to MaxEvent, ~2 MiB with its data copy) gives
// it back once the event is consumed, so that a stream's memory at rest is
// bounded whatever it once received, and only the events in flight at one
// moment cost more.
const RetainCap = 64 << 10

// ErrEventTooLong is an event (or an endless line) longer than MaxEvent.
var ErrEventTooLong = errors.New("SSE event longer than 1 MiB without an end")

// Event is one SSE event's data field (data lines joined by "\n").
type Event struct {
	Data []byte // valid until the next call to Next
	At   int64  // the stamp of the read that completed the event: the clock's reading after it returned, or Feed's at
}

// Reader splits a stream into events.
type Reader struct {
	r     io.Reader
	clock func() int64
	buf   []byte
	start int // unconsumed data is buf[start:]
	data  []byte
	err   error
	last  int64 // time of the latest read
	first int64 // time of the first read that returned bytes
	lines bool  // NDJSON: every non-blank line is an event's data
}

// Lines makes r read newline-delimited JSON (Ollama's streams, NDJSON)
// instead of SSE: each non-blank line is one event, its data the line.
// It returns r.
func (r *Reader) Lines() *Reader {
	r.lines = true
	return r
}

// NewReader reads from r, stamping reads with clock (called once each
// read returns; the client's clock gives the kernel's receive time where
// the connection keeps one).
func NewReader(r io.Reader, clock func() int64) *Reader {
	return &Reader{r: r, clock: clock, buf: make([]byte, 0, 16<<10)}
}

// FirstRead is the clock reading of the first read that returned bytes.
func (r *Reader) FirstRead() int64 { return r.first }

// Next returns the next event with data. It returns io.EOF at a clean end of
// stream and io.ErrUnexpectedEOF when the stream ends inside an event.
func (r *Reader) Next() (Event, error) {
	for {
		if ev, ok := r.scan(); ok {
			return ev, nil
		}
		if err := r.tooLong(); err != nil {
			return Event{}, err
		}
		if r.err != nil {
			return r.tail()
		}
		r.fill()
	}
}

// tooLong reports an unfinished event past MaxEvent.
func (r *Reader) tooLong() error {
	if n := len(r.buf) - r.start; n > MaxEvent {
		return fmt.Errorf("%w (%d bytes so far)", ErrEventTooLong, n)
	}
	return nil
}

// Err is the decoder's failure, once the unfinished event it holds has
// grown past MaxEvent; the stream should be abandoned.
func (r *Reader) Err() error { return r.tooLong() }

// tail is what is left once the stream has ended with r.err.
func (r *Reader) tail() (Event, error) {
	if len(bytes.TrimSpace(r.buf[r.start:])) > 0 {
		// A final event without its blank line still counts, as in browsers' lax parsers,
		// but only if it ends in a newline; otherwise it was cut.
		rest := r.buf[r.start:]
		r.start = len(r.buf)
		if r.lines {
			// A last line without its newline is a cut one, unless it is a
			// whole JSON value: a server may end its last line with the body.
			if d := bytes.TrimSpace(rest); rest[len(rest)-1] == '\n' || json.Valid(d) {
				return Event{Data: d, At: r.last}, nil
			}
		} else if rest[len(rest)-1] == '\n' {
			if d := r.parse(rest); d != nil {
				return Event{Data: d, At: r.last}, nil
			}
		}
		if r.err == io.EOF {
			return Event{}, io.ErrUnexpectedEOF
		}
	}
	return Event{}, r.err
}

// NewDecoder returns a Reader fed by the caller (Feed, Scan, End) instead
// of reading: for an event loop that reads many streams itself.
func NewDecoder() *Reader {
	return &Reader{buf: make([]byte, 0, 4<<10)}
}

// Reset empties a decoder for another stream, keeping its buffer.
func (r *Reader) Reset() {
	buf, data := r.buf[:0], r.data[:0]
	if cap(buf) > RetainCap {
		buf = make([]byte, 0, 4<<10)
	}
	if cap(data) > RetainCap {
		data = nil
	}
	*r = Reader{r: r.r, clock: r.clock, buf: buf, data: data, lines: r.lines}
}

// Feed adds bytes that a read returning at clock reading at delivered.
func (r *Reader) Feed(b []byte, at int64) {
	r.compact()
	r.buf = append(r.buf, b...)
	r.last = at
	if r.first == 0 {
		r.first = at
	}
}

// Scan returns the next complete event fed so far.
func (r *Reader) Scan() (Event, bool) { return r.scan() }

// End is Next at the end of the stream: a last event without its blank
// line, io.EOF at a clean end, io.ErrUnexpectedEOF inside an event.
func (r *Reader) End() (Event, error) {
	if ev, ok := r.scan(); ok {
		return ev, nil
	}
	if r.err == nil {
		r.err = io.EOF
	}
	return r.tail()
}

// compact makes room at the end of buf by dropping what was consumed.
func (r *Reader) compact() {
	if r.start > 0 && r.start == len(r.buf) {
		r.buf, r.start = r.buf[:0], 0
		// Everything consumed: a buffer a long event grew is given back
		// (an Event's Data still held keeps its own array alive).
		if cap(r.buf) > RetainCap {
			r.buf = make([]byte, 0, 16<<10)
		}
		if cap(r.data) > RetainCap {
			r.data = nil
		}
	} else if r.start > cap(r.buf)/2 {
		n := copy(r.buf, r.buf[r.start:])
		r.buf, r.start = r.buf[:n], 0
	}
}

func (r *Reader) fill() {
	r.compact()
	if len(r.buf) == cap(r.buf) {
		nb := make([]byte, len(r.buf), 2*cap(r.buf))
		copy(nb, r.buf)
		r.buf = nb
	}
	n, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
	if n > 0 {
		r.last = r.clock()
		if r.first == 0 {
			r.first = r.last
		}
		r.buf = r.buf[:len(r.buf)+n]
	}
	if err != nil {
		r.err = err
	}
}

// scan finds the next complete event (terminated by a blank line) in buf.
func (r *Reader) scan() (Event, bool) {
	for r.lines {
		rest := r.buf[r.start:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return Event{}, false
		}
		r.start += i + 1
		if line := bytes.TrimSpace(rest[:i]); len(line) > 0 {
			return Event{Data: line, At: r.last}, true
		}
	}
	for {
		rest := r.buf[r.start:]
		end, skip := eventEnd(rest)
		if end < 0 {
			return Event{}, false
		}
		r.start += end + skip
		if d := r.parse(rest[:end]); d != nil {
			return Event{Data: d, At: r.last}, true
		}
	}
}

// eventEnd finds the blank line that ends an event: "\n\n" or "\r\n\r\n".
func eventEnd(b []byte) (end, skip int) {
	for i := 0; i+1 < len(b); i++ {
		j := bytes.IndexByte(b[i:len(b)-1], '\n')
		if j < 0 {
			break
		}
		i += j
		if b[i+1] == '\n' {
			return i + 1, 1
		}
		if b[i+1] == '\r' && i+2 < len(b) && b[i+2] == '\n' {
			return i + 1, 2
		}
	}
	return -1, 0
}

// parse extracts the data field of one event block, or nil when it has none.
func (r *Reader) parse(block []byte) []byte {
	r.data = r.data[:0]
	has := false
	for len(block) > 0 {
		line := block
		if i := bytes.IndexByte(block, '\n'); i >= 0 {
			line, block = block[:i], block[i+1:]
		} else {
			block = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue // comments, event:, id:, retry:
		}
		v := line[5:]
		if len(v) > 0 && v[0] == ' ' {
			v = v[1:]
		}
		if has {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, v...)
		has = true
	}
	if !has {
		return nil
	}
	return r.data
}
