// Package client sends one request over HTTP and turns what happened into a
// record.Record.
//
// The client knows nothing of schedules or workers: it gets a body, sends it,
// and timestamps the response at named points (first byte, every content
// chunk, end) with the caller's monotonic clock. Failures are classified
// into error kinds and stored in the record; Do never returns an error.
package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/rxtime"
	"github.com/aiperf-action/aiperf-action/internal/sse"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Client sends requests to one endpoint.
type Client struct {
	HTTP *http.Client
	URL  string
	// URLs, with several servers (--url-strategy round_robin): request i
	// (its record's Index) goes to URLs[i mod n]; URL is unused then.
	URLs      []string
	Headers   [][2]string
	APIKey    string
	Kind      endpoint.Kind
	Streaming bool
	Timeout   time.Duration
	Clock     func() int64 // nanoseconds since the run's start, monotonic
	// Loop, where set, reads streamed plain-HTTP responses (see Loop).
	Loop *Loop
	// Tok counts the output tokens (OSL) of every response: the run's
	// --tokenizer; nil, the builtin.
	Tok *tokenizer.Tokenizer
	// KeepOutput keeps each response's text in its record (Output), for a
	// multi-turn session's history (and counts it at once).
	KeepOutput bool
	// CountLater leaves a response's OSL for CountOSL, keeping its text.
	CountLater bool

	traitsOnce sync.Once
	traits     endpoint.Traits // Kind's, read once (tr)
	fastOnce   sync.Once
	fast       []*fastConf // per URL (nil where it is not plain HTTP)
	viaHTTP    atomic.Uint64
	stamped    atomic.Uint64
}

// tr is the Kind's traits.
func (c *Client) tr() *endpoint.Traits {
	c.traitsOnce.Do(func() { c.traits = endpoint.TraitsOf(c.Kind) })
	return &c.traits
}

// urls are the servers: URLs, or URL alone.
func (c *Client) urls() []string {
	if len(c.URLs) > 0 {
		return c.URLs
	}
	return []string{c.URL}
}

// urlOf is which of urls() request index i goes to: i mod n.
func (c *Client) urlOf(i int) int {
	if n := len(c.URLs); n > 1 {
		return ((i % n) + n) % n
	}
	return 0
}

// NetHTTPRequests counts the requests that had a connection through
// net/http, and of them those whose connection kept the kernel's receive
// times (the others' reads are stamped when they return).
func (c *Client) NetHTTPRequests() (all, kernel uint64) { return c.viaHTTP.Load(), c.stamped.Load() }

// ReadStats is how a loop's reads were stamped.
type ReadStats struct {
	record.Stamps                // the read counts (KernelReads, OtherReads)
	Delay         *hdr.Histogram // µs from the kernel's receive time to the read's return
}

// maxReadDelay bounds a believable read delay (and the histogram): a
// longer one is a step of the wall clock, and the read keeps its own time.
const maxReadDelay = time.Minute

// dialStamped dials for net/http, asking the kernel to stamp what the
// connection receives (see readClock).
func dialStamped(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	if err != nil || noKernelStamps {
		return c, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if rc, ok := rxtime.Wrap(tc); ok {
			return rc, nil
		}
	}
	return c, nil
}

// readClock is the clock for a response read from conn through net/http:
// the kernel's receive time of the newest data the connection has read
// (beneath TLS too), which lies between the arrival of what a read returns
// and the read itself; plain c.Clock where conn keeps no such time.
func (c *Client) readClock(conn net.Conn) (clock func() int64, kernel bool) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	rc, ok := conn.(*rxtime.Conn)
	if !ok {
		return c.Clock, false
	}
	// The wall-clock stamp is carried to the run's clock by one reading of
	// each; the same stamp always gives the same time, and the times of one
	// response never go back (arrivals don't), whatever the readings' jitter.
	var lastRx, last int64
	return func() int64 {
		at := c.Clock()
		if rx := rc.Received(); rx > 0 {
			if rx == lastRx {
				return last
			}
			if d, ok := rxtime.Age(rx, time.Now(), maxReadDelay); ok {
				at -= int64(d)
			}
			lastRx = rx
		}
		at = max(at, last)
		last = at
		return at
	}, true
}

var noKernelStamps bool

// UseKernelStamps says whether reads take the kernel's receive time (the
// default) or the time they return (a worker's AIPERF_ACTION_STAMP=read
// knob). Set it before the first request.
func UseKernelStamps(on bool) { noKernelStamps = !on }

// dialTimeout bounds a connection's set-up.
const dialTimeout = 10 * time.Second

// NewTransport returns an HTTP transport sized for maxConns in-flight
// requests to one host, with compression off (it would hide chunk timing).
func NewTransport(maxConns int) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         dialStamped,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
}

// call is one Do's request, as the loop's sender takes it.
type call struct {
	body        []byte
	requestID   string
	cancelAfter time.Duration      // cancel this long after sending (0: never)
	cancel      context.CancelFunc // cancels the request
	maxTokens   int
	rec         *record.Record
	onFirst     func() // called once, when the first token arrives (WithFirstToken)
}

type firstTokenKey struct{}

// WithFirstToken makes a request sent with ctx call f once, the moment its
// first token arrives (before the rest is read), as --prefill-concurrency
// needs; f is not called for a request that ends with none.
func WithFirstToken(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, firstTokenKey{}, f)
}

func firstTokenHook(ctx context.Context) func() {
	f, _ := ctx.Value(firstTokenKey{}).(func())
	return f
}

type stickyKey struct{}

// WithSession makes a request sent with ctx one of session id's turns:
// with several servers, every turn of a session goes to the same one
// (the session's id, hashed, picks it), so a server's cache of the
// session's history is where its next turn goes.
func WithSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, stickyKey{}, id)
}

// Do sends body and fills rec (whose Due and identity fields the caller
// set). A positive cancelAfter cancels the request that long after it is
// sent (--request-cancellation-delay).
func (c *Client) Do(ctx context.Context, body []byte, requestID string, cancelAfter time.Duration, maxTokens int, rec *record.Record) {
	rec.Streaming = c.Streaming
	if f := c.tr().Form; f != nil {
		// (Made before the request's clock starts.)
		wire, err := f.Wire(body)
		if err != nil {
			rec.ErrKind, rec.ErrMsg = record.ErrBuild, err.Error()
			return
		}
		body = wire
	}
	var cancelReq context.CancelFunc
	ctx, cancelReq = context.WithCancel(ctx)
	defer cancelReq()
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	u := c.urlOf(rec.Index)
	if id, ok := ctx.Value(stickyKey{}).(string); ok && len(c.URLs) > 1 {
		h := fnv.New32a()
		h.Write([]byte(id))
		u = int(h.Sum32() % uint32(len(c.URLs)))
	}
	if c.Loop != nil && c.Streaming {
		c.fastOnce.Do(func() {
			for _, u := range c.urls() {
				c.fast = append(c.fast, newFastConf(c, u))
			}
		})
		if f := c.fast[u]; f != nil {
			c.doLoop(ctx, f, &call{body: body, requestID: requestID, cancelAfter: cancelAfter, cancel: cancelReq, maxTokens: maxTokens, rec: rec, onFirst: firstTokenHook(ctx)})
			return
		}
	}
	var reused, got bool
	stamp, kernel := c.Clock, false
	// WroteRequest runs on the transport's writer goroutine, which may
	// still be finishing when an early answer has already returned.
	var written atomic.Int64
	trace := &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			reused, got = i.Reused, true
			rec.Connected, rec.NewConn = c.Clock(), !i.Reused
			stamp, kernel = c.readClock(i.Conn)
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { written.Store(c.Clock()) },
		GotFirstResponseByte: func() { rec.FirstByte = stamp() },
	}
	defer func() {
		// The writer may be stamped late (a goroutine waiting for a CPU
		// after its write returned), but the answer cannot come before the
		// request: no later than the first byte.
		rec.Written = written.Load()
		if rec.FirstByte > 0 && rec.Written > rec.FirstByte {
			rec.Written = rec.FirstByte
		}
	}()
	tctx := httptrace.WithClientTrace(ctx, trace)
	target := c.urls()[u]
	req, err := c.newRequest(tctx, target, body, requestID)
	if err != nil {
		c.fail(rec, record.ErrTransport, err.Error())
		return
	}
	rec.Sent = c.Clock()
	if cancelAfter > 0 {
		t := time.AfterFunc(cancelAfter, cancelReq)
		defer t.Stop()
	}
	resp, err := c.HTTP.Do(req)
	// The server closed a kept-alive connection as the request went out
	// (llama-server does this after a stream). That is not a server error:
	// send again. Each failed attempt retires its connection, and the pool
	// may hold a few such (one per slot), so up to maxResends; the latency
	// still counts from the first send.
	for n := 0; n < maxResends && err != nil && reused && rec.FirstByte == 0 && ctx.Err() == nil && closedByServer(err); n++ {
		rec.Retried = true
		if req, err = c.newRequest(tctx, target, body, requestID); err == nil {
			resp, err = c.HTTP.Do(req)
		}
	}
	if got { // (a request that never had a connection has no timings to stamp)
		c.viaHTTP.Add(1)
		if kernel {
			c.stamped.Add(1)
		}
	}
	if err != nil {
		c.fail(rec, classify(ctx, err), err.Error())
		return
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		c.fail(rec, fmt.Sprintf("http_%d", resp.StatusCode), snippet(msg))
		return
	}
	if p := c.tr().Poll; p != nil {
		c.poll(ctx, p, target, requestID, resp.Body, rec, stamp)
		return
	}
	if c.Streaming && endpoint.Streamed(c.Kind, resp.Header.Get("Content-Type")) {
		c.readStream(ctx, resp.Body, rec, maxTokens, stamp)
	} else {
		c.readWhole(ctx, resp.Body, rec, stamp)
		c.notStreamed(rec, resp.Header.Get("Content-Type"))
	}
}

// maxPolls bounds a job's polls (with the request timeout, which bounds
// their time).
const maxPolls = 100_000

// poll follows a job the submission's answer (first) names: it GETs
// target/{id} every PollEvery until an answer says the job is done, and
// that answer is the request's (its End the time it came).
func (c *Client) poll(ctx context.Context, p endpoint.Polled, target, requestID string, first io.Reader, rec *record.Record, clock func() int64) {
	body, err := io.ReadAll(io.LimitReader(first, 16<<20))
	for n := 0; ; n++ {
		rec.End = clock()
		if err != nil {
			c.fail(rec, classify(ctx, err), err.Error())
			return
		}
		id, done, jerr := p.Job(body)
		if jerr != nil {
			c.fail(rec, record.ErrMalformed, fmt.Sprintf("%q: %v", snippet(body), jerr))
			return
		}
		if done {
			c.parseWhole(body, rec)
			return
		}
		if n == maxPolls {
			c.fail(rec, record.ErrTimeout, fmt.Sprintf("job %s not done after %d polls", id, n))
			return
		}
		t := time.NewTimer(p.PollEvery())
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			c.fail(rec, classify(ctx, ctx.Err()), fmt.Sprintf("job %s: %v", id, ctx.Err()))
			return
		}
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(target, "/")+"/"+url.PathEscape(id), nil)
		if rerr != nil {
			c.fail(rec, record.ErrTransport, rerr.Error())
			return
		}
		c.setHeaders(req.Header, requestID)
		req.Header.Del("Content-Type")
		req.Header.Set("User-Agent", userAgent)
		if v := req.Header.Get("Host"); v != "" {
			req.Host = v
			req.Header.Del("Host")
		}
		resp, derr := c.HTTP.Do(req)
		if derr != nil {
			c.fail(rec, classify(ctx, derr), derr.Error())
			return
		}
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			rec.Status = resp.StatusCode
			c.fail(rec, fmt.Sprintf("http_%d", resp.StatusCode), "polling job "+id+": "+snippet(msg))
			return
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
	}
}

// notStreamed fails a whole answer to a streaming request.
func (c *Client) notStreamed(rec *record.Record, contentType string) {
	if c.Streaming && rec.OK() {
		rec.ErrKind, rec.ErrMsg = record.ErrNotStreamed, fmt.Sprintf("asked for a stream (--streaming) and got a whole response (Content-Type %q): it has no first token", contentType)
	}
}

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

func (c *Client) readWhole(ctx context.Context, body io.Reader, rec *record.Record, clock func() int64) {
	b, err := io.ReadAll(body)
	rec.End = clock()
	if err != nil {
		c.fail(rec, classify(ctx, err), err.Error())
		return
	}
	c.parseWhole(b, rec)
}

// parseWhole takes a whole (non-streamed) response body into rec.
func (c *Client) parseWhole(b []byte, rec *record.Record) {
	r, err := c.Kind.ParseResponse(b)
	if err != nil {
		c.fail(rec, record.ErrMalformed, fmt.Sprintf("%q: %v", snippet(b), err))
		return
	}
	if r.ServerErr != "" {
		c.fail(rec, record.ErrServer, snippet([]byte(r.ServerErr)))
		return
	}
	if r.Usage != nil {
		rec.ServerISL, rec.ServerOSL = r.Usage.PromptTokens, r.Usage.CompletionTokens
	}
	if unit := c.tr().Unit; unit != "" {
		rec.Items = r.Items
		if r.Items == 0 {
			rec.ErrKind, rec.ErrMsg = record.ErrEmpty, "the response held no "+unit
		}
		return // nothing generated: no OSL
	}
	c.output(rec, r.Content, r.Reasoning)
	if r.Content == "" && r.Reasoning == "" {
		rec.ErrKind, rec.ErrMsg = record.ErrEmpty, "response had no content"
	}
}

// output takes a response's text into rec: its OSL counted now, or, with
// CountLater, the text kept for the record's owner to count (CountOSL) off
// the request's goroutine, so that a closed loop's next send never waits
// on a tokenizer.
func (c *Client) output(rec *record.Record, text, reasoning string) {
	if c.tr().TokenOut {
		// Token ids: counted as they are, exactly, with no tokenizer.
		if c.KeepOutput {
			rec.Output = text
		}
		rec.OSL, rec.ReasoningTokens = endpoint.CountIDs(text), 0
		return
	}
	if c.KeepOutput || c.CountLater {
		rec.Output = text // (a session's history holds the answers, not the reasoning)
	}
	if c.CountLater && !c.KeepOutput {
		rec.Reasoning, rec.OSLPending = reasoning, true
		return
	}
	count(rec, text, reasoning, c.Tokenizer())
}

// count sets a record's OSL, reasoning included, and its reasoning tokens.
// Each text is counted on its own, as the server generates and counts them.
func count(rec *record.Record, text, reasoning string, tok *tokenizer.Tokenizer) {
	rec.ReasoningTokens = 0
	if reasoning != "" {
		rec.ReasoningTokens = tok.Count(reasoning)
	}
	rec.OSL = tok.Count(text) + rec.ReasoningTokens
}

// CountOSL counts a record's output that CountLater left for later, and
// lets its text go.
func CountOSL(rec *record.Record, tok *tokenizer.Tokenizer) {
	if !rec.OSLPending {
		return
	}
	if tok == nil {
		tok = tokenizer.Builtin()
	}
	count(rec, rec.Output, rec.Reasoning, tok)
	rec.Output, rec.Reasoning, rec.OSLPending = "", "", false
}

// Tokenizer is Tok, or the builtin when Tok is nil.
func (c *Client) Tokenizer() *tokenizer.Tokenizer {
	if c.Tok == nil {
		return tokenizer.Builtin()
	}
	return c.Tok
}

func (c *Client) fail(rec *record.Record, kind, msg string) {
	rec.End = c.Clock()
	rec.ErrKind, rec.ErrMsg = kind, msg
}

func (c *Client) newRequest(ctx context.Context, target string, body []byte, requestID string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	c.setHeaders(req.Header, requestID)
	req.Header.Set("User-Agent", userAgent)
	if v := req.Header.Get("Host"); v != "" { // net/http sends req.Host, not this header
		req.Host = v
		req.Header.Del("Host")
	}
	return req, nil
}

// userAgent names the tool to servers.
const userAgent = "aiperf-action"

// setHeaders sets a request's headers (but Host, User-Agent and the length).
func (c *Client) setHeaders(h http.Header, requestID string) {
	h.Set("Content-Type", "application/json")
	if f := c.tr().Form; f != nil {
		h.Set("Content-Type", f.ContentType())
	}
	if c.Streaming {
		h.Set("Accept", "text/event-stream")
	}
	if requestID != "" {
		h.Set("X-Request-ID", requestID)
	}
	if c.APIKey != "" {
		for _, kv := range c.Kind.Auth(c.APIKey) {
			h.Set(kv[0], kv[1])
		}
	}
	for _, kv := range c.Headers {
		h.Set(kv[0], kv[1])
	}
}

// maxResends bounds the resends after server-closed kept-alive connections.
const maxResends = 4

// closedByServer reports an error from a connection the server had closed.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || strings.Contains(err.Error(), "server closed idle connection")
}

// classify maps a transport error to an error kind.
func classify(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return record.ErrTimeout
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return record.ErrCancelled
	case errors.Is(err, syscall.ECONNREFUSED):
		return record.ErrConnRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return record.ErrConnReset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return record.ErrStreamCut
	}
	return record.ErrTransport
}

// snippet trims server text to a short single line for error messages.
func snippet(b []byte) string {
	const max = 300
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}
