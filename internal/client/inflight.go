package client

import (
	"fmt"
	"io"
	"net/http"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/sse"
)

// The per-request state machine: the bytes of one response, as the reactor
// reads them, become its record. It has no build tag: it is fed bytes and
// stamps, and tested without a socket.

// inflight is one request's response as the loop parses it.
type inflight struct {
	c         *Client
	sc        *scratch // the connection's parsers, reused
	rec       *record.Record
	maxTokens int
	done      chan struct{}

	head     []byte // the response head, until complete
	headDone bool
	any      bool  // a byte of the response arrived
	last     int64 // the latest read's stamp
	status   int
	sse      bool
	framing  int   // body framing: byLength, byChunks or byClose
	left     int64 // byLength: bytes still to come
	ch       chunks
	dec      *sse.Reader
	st       streamState
	onFirst  func()
	body     []byte // a whole (non-streamed) body, or an error body
	sawDone  bool

	over     bool  // nothing more to read for this request
	keep     bool  // the connection may serve another request
	err      error // how the connection failed, if it did
	early    bool  // it failed before a byte of the response came
	recorded bool  // rec holds the request's outcome
	// What the sender reads once done is closed: after a [DONE] the loop
	// goes on reading to the body's end (to keep the connection), so the
	// fields above are not for the sender.
	out      outcome
	signaled bool
}

type outcome struct {
	recorded, early bool
	err             error
}

// signal hands the outcome to the sender, once. From here on the loop no
// longer touches rec.
func (in *inflight) signal() {
	if !in.signaled {
		in.signaled = true
		in.out = outcome{in.recorded, in.early, in.err}
		close(in.done)
	}
}

func (in *inflight) finish(err error, keep bool) {
	if in.over {
		return
	}
	in.over, in.keep = true, keep
	if err != nil {
		in.err = err
	}
}

func (in *inflight) feed(b []byte, at int64) {
	at = max(at, in.last) // (two readings of two clocks jitter; arrivals don't go back)
	in.last = at
	if !in.any {
		in.any = true
		in.rec.FirstByte = at
	}
	if !in.headDone {
		in.head = append(in.head, b...)
		for !in.headDone { // past any 1xx heads, which may share a read with the real one
			i := headEnd(in.head)
			if i < 0 {
				if len(in.head) > maxHead {
					in.finish(fmt.Errorf("response head over %d bytes", maxHead), false)
				}
				return
			}
			rest := in.head[i:]
			if !in.parseHead(in.head[:i]) {
				continue // a 1xx head, dropped from in.head
			}
			if in.over || len(rest) == 0 {
				return
			}
			b = rest
		}
	}
	switch in.framing {
	case byLength:
		if int64(len(b)) > in.left {
			b = b[:in.left]
		}
		in.left -= int64(len(b))
		in.payload(b, at)
		if in.left == 0 {
			in.bodyEnd(at)
		}
	case byChunks:
		end, err := in.ch.decode(b, func(p []byte) { in.payload(p, at) })
		if err != nil {
			in.finish(err, false)
			return
		}
		if end {
			in.bodyEnd(at)
		}
	default:
		in.payload(b, at)
	}
}

// parseHead takes the response head; false while a 1xx head was skipped
// and the real one is still to come.
func (in *inflight) parseHead(h []byte) bool {
	rh, err := in.sc.readHead(h, in.c.Kind)
	if err != nil {
		in.finish(err, false)
		return true
	}
	if rh.interim {
		in.head = append(in.head[:0], in.head[len(h):]...)
		return false
	}
	in.headDone = true
	in.status = rh.status
	in.rec.Status = rh.status
	in.keep = rh.keep
	in.sse = rh.sse
	in.framing, in.left = rh.framing, rh.length
	if in.sse {
		in.dec = in.sc.decoder(in.c.tr().LineFramed)
		in.st.start(in.rec, in.maxTokens, in.c.tr())
		in.st.onFirst = in.onFirst
	}
	if in.framing == byLength && in.left == 0 {
		in.bodyEnd(in.rec.FirstByte)
	}
	return true
}

// payload takes body bytes.
func (in *inflight) payload(p []byte, at int64) {
	if in.over || in.sawDone {
		return
	}
	if !in.sse {
		room := maxBody
		if in.status != http.StatusOK {
			room = 4 << 10
		}
		in.body = append(in.body, p[:min(len(p), max(room-len(in.body), 0))]...)
		return
	}
	in.dec.Feed(p, at)
	for {
		ev, ok := in.dec.Scan()
		if !ok {
			if err := in.dec.Err(); err != nil {
				in.recorded = true
				in.c.fail(in.rec, record.ErrMalformed, err.Error())
				in.finish(nil, false)
			}
			return
		}
		if in.event(ev) {
			return
		}
	}
}

// event takes one SSE event; true when the stream is over.
func (in *inflight) event(ev sse.Event) bool {
	over, failed := in.c.onEvent(ev, in.rec, &in.st)
	switch {
	case failed:
		in.recorded = true
		in.finish(nil, false)
	case over:
		in.sawDone, in.recorded = true, true
		in.c.endStream(in.rec, &in.st, ev.At)
	}
	return over
}

// bodyEnd is the end of the response body at a clean framing boundary.
func (in *inflight) bodyEnd(at int64) {
	if in.over {
		return
	}
	keep := in.keep
	switch {
	case in.status != http.StatusOK:
		in.recorded = true
		in.c.fail(in.rec, fmt.Sprintf("http_%d", in.status), snippet(in.body))
	case in.sse:
		if !in.sawDone {
			in.endEvents(at)
		}
	default:
		in.rec.End = at
		in.recorded = true
		in.c.parseWhole(in.body, in.rec)
		in.c.notStreamed(in.rec, "not text/event-stream")
	}
	in.finish(nil, keep)
}

// endEvents reads the events left when a stream ends without [DONE].
func (in *inflight) endEvents(at int64) {
	for !in.recorded {
		ev, err := in.dec.End()
		if err == io.EOF {
			in.c.endStream(in.rec, &in.st, at)
			in.sawDone, in.recorded = true, true
			return
		}
		if err != nil {
			in.recorded = true
			in.c.fail(in.rec, record.ErrStreamCut, err.Error())
			return
		}
		in.event(ev)
	}
}

// eof is the connection's end (or failure) while in was reading.
func (in *inflight) eof(err error) {
	switch {
	case in.over:
	case !in.any:
		in.early = true
		in.finish(err, false)
	case in.sawDone:
		in.finish(nil, false)
	case in.headDone && in.framing == byClose && err == io.EOF:
		in.bodyEnd(in.last) // the last data's arrival: a FIN carries no stamp
		in.keep = false
	case err == io.EOF:
		in.finish(io.ErrUnexpectedEOF, false)
	default:
		in.finish(err, false)
	}
}
