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
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
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

// notStreamed fails a whole answer to a streaming request.
func (c *Client) notStreamed(rec *record.Record, contentType string) {
	if c.Streaming && rec.OK() {
		rec.ErrKind, rec.ErrMsg = record.ErrNotStreamed, fmt.Sprintf("asked for a stream (--streaming) and got a whole response (Content-Type %q): it has no first token", contentType)
	}
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
