package client

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/sse"
)

// readStream is the per-chunk hot path: the chunk is stamped when the read
// that completed it returned (in the SSE reader), its text is found
// without a JSON decode (endpoint.Scan), and tokens are counted on the fly,
// so nothing is kept per chunk but its timestamp.
func (c *Client) readStream(ctx context.Context, body io.Reader, rec *record.Record, maxTokens int, clock func() int64) {
	rd := sse.NewReader(body, clock)
	if c.tr().LineFramed {
		rd.Lines()
	}
	end := int64(0)
	var st streamState
	st.start(rec, maxTokens, c.tr())
	st.onFirst = firstTokenHook(ctx)
	for {
		ev, err := rd.Next()
		if err != nil {
			if err == io.EOF {
				end = clock()
				break // a stream may end without [DONE]; what arrived counts
			}
			kind := classify(ctx, err)
			switch {
			case errors.Is(err, io.ErrUnexpectedEOF):
				kind = record.ErrStreamCut
			case errors.Is(err, sse.ErrEventTooLong):
				kind = record.ErrMalformed
			}
			c.fail(rec, kind, err.Error())
			return
		}
		if over, failed := c.onEvent(ev, rec, &st); failed {
			return
		} else if over {
			end = ev.At
			break
		}
	}
	c.endStream(rec, &st, end)
}

// streamState is what reading one stream keeps between its events.
type streamState struct {
	text     []byte // the content received, counted at the end (a BPE count can't be summed over chunks)
	thought  []byte // the reasoning received, likewise
	buf      [256]byte
	done     bool // [DONE] arrived
	finished bool // a finish_reason arrived in a fully decoded chunk
	tail     [256]byte
	tailN    int // the last fast-path chunk's last bytes: tail[:tailN]
	onFirst  func()
	ids      bool // the kind's content is token ids (Traits.TokenOut): events' lists are joined by commas
	cumul    bool // each event has the whole text so far (Traits.Cumulative)
}

func (st *streamState) start(rec *record.Record, maxTokens int, t *endpoint.Traits) {
	st.ids, st.cumul = t.TokenOut, t.Cumulative
	if rec.Chunks == nil {
		rec.Chunks = make([]int64, 0, max(maxTokens, 16)+1)
	}
}

// onEvent takes one SSE event into rec: over at [DONE], failed (and rec
// marked) when the event is malformed or carries a server error.
func (c *Client) onEvent(ev sse.Event, rec *record.Record, st *streamState) (over, failed bool) {
	if c.Kind.Done(ev.Data) {
		st.done = true
		return true, false
	}
	text, reasoning, full, perr := c.Kind.Scan(ev.Data, st.buf[:0])
	if perr != nil {
		c.fail(rec, record.ErrMalformed, fmt.Sprintf("chunk %q: %v", snippet(ev.Data), perr))
		return true, true
	}
	if full != nil && full.Finish != "" {
		st.finished = true
	}
	if full == nil {
		// Keep the chunk's tail, where a finish_reason sits (after the
		// delta and logprobs): endStream looks there only if no [DONE]
		// came, so the chunk path pays a short copy, not a search.
		st.tailN = copy(st.tail[:], ev.Data[max(0, len(ev.Data)-len(st.tail)):])
	}
	if full != nil && full.ServerErr != "" {
		c.fail(rec, record.ErrServer, snippet([]byte(full.ServerErr)))
		return true, true
	}
	if st.cumul {
		// Each event has the whole text so far: its new part is the rest.
		if bytes.HasPrefix(text, st.text) {
			text = text[len(st.text):]
		} else {
			st.text = st.text[:0] // (the server started over: take it whole)
		}
	}
	if full != nil && full.Usage != nil {
		// (Anthropic's input count comes at the start, the output's at the end.)
		if u := full.Usage; u.PromptTokens > 0 || u.CompletionTokens > 0 {
			rec.ServerISL = cmp.Or(u.PromptTokens, rec.ServerISL)
			rec.ServerOSL = cmp.Or(u.CompletionTokens, rec.ServerOSL)
		}
	}
	if len(text) > 0 {
		if rec.FirstToken == 0 {
			rec.FirstToken = ev.At
			if st.onFirst != nil {
				st.onFirst()
				st.onFirst = nil
			}
		}
		rec.Chunks = append(rec.Chunks, ev.At)
		if reasoning > 0 {
			st.thought = append(st.thought, text[:reasoning]...)
		}
		if len(text) > reasoning {
			if rec.FirstOutput == 0 && len(st.thought) > 0 {
				rec.FirstOutput = ev.At
			}
			if st.ids && len(st.text) > 0 {
				st.text = append(st.text, ',') // (each event's ids, one list)
			}
			st.text = append(st.text, text[reasoning:]...)
		}
	}
	return false, false
}

// endStream closes a stream that ended without a failure, at end ([DONE]'s
// stamp, or the body's end). A stream is whole when it said so: [DONE], or
// a finish_reason (some servers send no [DONE]). One that just stops, at a
// clean chunked end or a closed connection, was cut short: its short
// latency must not pass for a fast answer.
func (c *Client) endStream(rec *record.Record, st *streamState, end int64) {
	rec.End = end
	c.output(rec, string(st.text), string(st.thought))
	switch {
	case !st.done && !st.finished && !c.tr().EndsWithBody && !hasFinish(st.tail[:st.tailN]):
		rec.ErrKind, rec.ErrMsg = record.ErrStreamCut, fmt.Sprintf("the stream ended after %d chunks with neither [DONE] nor a finish_reason", len(rec.Chunks))
	case len(st.text) == 0 && len(st.thought) == 0:
		rec.ErrKind, rec.ErrMsg = record.ErrEmpty, "stream ended with no content"
	}
}

// hasFinish reports whether a chunk carries a finish_reason (or, in
// Anthropic's events, a stop_reason) that is a string (not null); a chunk
// has one choice.
func hasFinish(data []byte) bool {
	for _, key := range []string{`"finish_reason":`, `"stop_reason":`} {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			continue
		}
		rest := data[i+len(key):]
		for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
			rest = rest[1:]
		}
		if len(rest) > 0 && rest[0] == '"' {
			return true
		}
	}
	return false
}
