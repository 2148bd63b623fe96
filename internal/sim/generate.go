package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
	"github.com/aiperf-action/aiperf-action/internal/sim/pace"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// shape is one OpenAI response family.
type shape struct {
	name      string
	idPrefix  string
	chunkObj  string
	wholeObj  string
	roleChunk bool
	// A content chunk's choice object is contentPre, the token, contentPost.
	contentPre, contentPost string
	finishFmt               func(reason string) string
	whole                   func(text, reason string) string // the choice object of a whole response
	// anthropic: Anthropic's messages API, whose events and message are
	// written by their own functions (the fields above are unused).
	anthropic bool
	responses bool // OpenAI's Responses API, likewise
	ollama    int  // Ollama's native APIs: ollamaChat or ollamaGenerate (NDJSON lines)
	native    int  // TGI's or SGLang's generate: nativeTGI, nativeSGLang
}

const (
	ollamaChat = 1 + iota
	ollamaGenerate
)

// streamType is the Content-Type of a stream of this shape.
func (sh *shape) streamType() string {
	if sh.ollama != 0 {
		return "application/x-ndjson"
	}
	return "text/event-stream; charset=utf-8"
}

var messagesShape = shape{name: "messages", idPrefix: "msg_", anthropic: true, roleChunk: true}

var chatShape = shape{
	name: "chat", idPrefix: "chatcmpl-", chunkObj: "chat.completion.chunk", wholeObj: "chat.completion", roleChunk: true,
	contentPre:  `{"index":0,"delta":{"content":"`,
	contentPost: `"},"logprobs":null,"finish_reason":null}`,
	finishFmt:   func(r string) string { return `{"index":0,"delta":{},"logprobs":null,"finish_reason":"` + r + `"}` },
	whole: func(text, r string) string {
		return `{"index":0,"message":{"role":"assistant","content":"` + text + `"},"logprobs":null,"finish_reason":"` + r + `"}`
	},
}

var completionShape = shape{
	name: "completions", idPrefix: "cmpl-", chunkObj: "text_completion", wholeObj: "text_completion",
	contentPre:  `{"index":0,"text":"`,
	contentPost: `","logprobs":null,"finish_reason":null}`,
	finishFmt:   func(r string) string { return `{"index":0,"text":"","logprobs":null,"finish_reason":"` + r + `"}` },
	whole: func(text, r string) string {
		return `{"index":0,"text":"` + text + `","logprobs":null,"finish_reason":"` + r + `"}`
	},
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request, sh shape) {
	arrival := s.arrival(r)
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, `{"error":{"message":"read body","type":"invalid_request_error","code":400}}`, http.StatusBadRequest)
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal("invalid JSON body: " + err.Error())
		io.WriteString(w, `{"error":{"message":`+string(msg)+`,"type":"invalid_request_error","code":400}}`)
		return
	}
	switch sh.native {
	case nativeTGI, nativeTriton: // they stream by the path, not by a field
		req.Stream = strings.HasSuffix(r.URL.Path, "/generate_stream")
	case nativeKServe:
		req.Stream = false
		kserveTensors(&req)
	}
	h := hashBody(body)
	n, finish := s.outputLen(&req, h)
	// The prompt's tokens by the builtin tokenizer (o200k_base), as a real
	// server counts with its model's; engine mode's cache blocks are of its
	// words (one token each in a synthetic prompt).
	isl := promptTokens(&req)
	var hashes []uint64
	if s.engine != nil {
		hashes, _ = promptHashes(&req, s.cfg.Engine.BlockSize)
	}
	f := s.cfg.Faults.pick(h)
	if s.refused(w, f) {
		return
	}
	var es *engSeq
	if s.engine != nil {
		if !s.engine.fits(isl, n) {
			apiError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("%d prompt and %d output tokens do not fit in the engine's KV cache", isl, n))
			return
		}
		// It reaches the engine's queue after the front end's share.
		queued := s.engine.queued(arrival)
		es = &engSeq{seq: engine.Seq{ISL: isl, OSL: n, Hashes: hashes, Arrival: queued.UnixNano()},
			arrival: queued, notify: make(chan struct{}, 1), stallAt: -1}
		es.seq.Ref = es
		if f == faultStall {
			es.stallAt, es.stall = n/2, s.cfg.Faults.Stall
		}
		s.engine.add(es)
	}
	model := cmp.Or(req.Model, req.InferenceModel)
	if model == "" {
		model = s.cfg.Model
	}
	mj, _ := json.Marshal(model)
	id := sh.idPrefix + strconv.FormatUint(uint64(h), 16) + strconv.FormatInt(arrival.UnixNano()%1e9, 36)
	prefix := func(obj string) string {
		return `{"id":"` + id + `","object":"` + obj + `","created":` + strconv.FormatInt(arrival.Unix(), 10) + `,"model":` + string(mj) + `,"choices":[`
	}
	truth := Truth{ID: r.Header.Get("X-Request-ID"), Endpoint: sh.name, Streaming: req.Stream, ArrivalNs: arrival.UnixNano(), ISL: isl, OSL: n}
	usage := `"usage":{"prompt_tokens":` + strconv.Itoa(isl) + `,"completion_tokens":` + strconv.Itoa(n) + `,"total_tokens":` + strconv.Itoa(isl+n) + `}`
	s.metrics.running.Add(1)
	s.metrics.promptTokens.Add(int64(isl))
	defer func() {
		s.metrics.running.Add(-1)
		s.metrics.requests.Add(1)
		s.metrics.genTokens.Add(int64(n))
		s.metrics.observe(&truth)
	}()
	rp := &reply{sh: sh, n: n, finish: finish, h: h, arrival: arrival, usage: usage, truth: &truth, eng: es, fault: f, badAt: -1, sent: n}
	if es != nil {
		rp.sched = es
	} else {
		rp.sched = s.exactDue(rp)
	}
	if sh.roleChunk {
		rp.reason = min(s.cfg.ReasoningTokens, n)
	}
	rp.idStr, rp.modelJSON, rp.isl = id, string(mj), isl
	switch f {
	case faultMalformed:
		rp.badAt = n / 2
	case faultDisconnect:
		rp.sent = n / 2
	}
	if es != nil {
		defer func() {
			if truth.Aborted || rp.sent < n {
				s.engine.abort(es)
			}
		}()
	}
	if req.Stream {
		rp.prefix, rp.withUsage = prefix(sh.chunkObj), req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		s.stream(w, r, rp)
	} else {
		rp.prefix = prefix(sh.wholeObj)
		s.whole(w, r, rp)
	}
	s.keep(truth)
}

// due is when token k is written, in exact mode.
func (s *Server) due(arrival time.Time, k int) time.Time {
	return arrival.Add(s.cfg.TTFT + time.Duration(k)*s.cfg.ITL)
}

// refused answers the faults that refuse a request outright (500, 429 with
// Retry-After), and says whether it did.
func (s *Server) refused(w http.ResponseWriter, f fault) bool {
	switch f {
	case faultError:
		s.metrics.failed.Add(1)
		apiError(w, http.StatusInternalServerError, "internal_server_error", "injected fault (--error-rate)")
	case faultRateLimit:
		s.metrics.failed.Add(1)
		w.Header().Set("Retry-After", "1")
		apiError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "injected fault (--rate-limit-rate)")
	default:
		return false
	}
	return true
}

// apiError answers with an OpenAI-shaped error.
func apiError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	m, _ := json.Marshal(msg)
	io.WriteString(w, `{"error":{"message":`+string(m)+`,"type":"`+typ+`","code":`+strconv.Itoa(code)+`}}`)
}

// waitUntil sleeps until t or until the client goes away.
func waitUntil(r *http.Request, t *time.Timer, until time.Time) bool {
	d := time.Until(until)
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t.Reset(d)
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// reply is one response being generated: its shape, what every chunk
// starts with (id, object, model), its length and finish reason, the seed
// of its words, its request's arrival, its usage, and the truth recorded.
type reply struct {
	sh        shape
	prefix    string
	n         int
	finish    string
	h         uint32
	arrival   time.Time
	withUsage bool // a usage chunk before [DONE] (stream_options.include_usage)
	usage     string
	truth     *Truth
	eng       *engSeq       // engine mode
	sched     pace.Schedule // when each chunk is due: exactDue's, or eng
	fault     fault
	reason    int // the first tokens that are reasoning (chat, ReasoningTokens)
	idStr     string
	modelJSON string // the model's name as JSON
	isl       int
	seq       int // the Responses API's sequence numbers
	badAt     int // the chunk sent broken (faultMalformed), else −1
	sent      int // chunks sent before the connection is reset (faultDisconnect), else n
	// SGLang's cumulative text so far, quoted but for the closing quote,
	// and its words: each event appends its word, not the whole again.
	sgText  []byte
	sgWords int
}

// exactDue is the exact model's schedule for rp, with a stall applied.
func (s *Server) exactDue(rp *reply) pace.Exact {
	stallAt, stall := -1, time.Duration(0)
	if rp.fault == faultStall {
		stallAt, stall = rp.n/2, s.cfg.Faults.Stall
	}
	return func(k int) time.Time {
		t := s.due(rp.arrival, k)
		if stallAt >= 0 && k >= stallAt {
			t = t.Add(stall)
		}
		return t
	}
}

// dueOf is when rp's chunk k is due, waiting in engine mode until the
// engine has said; false when gone closes or the server does first.
func (s *Server) dueOf(rp *reply, k int, gone <-chan struct{}) (time.Time, bool) {
	if rp.eng != nil {
		return rp.eng.wait(k, gone, s.ctx.Done())
	}
	t, _ := rp.sched.Due(k)
	return t, true
}

// usageJSON is the usage object, with the cached prompt tokens in engine mode.
func (rp *reply) usageJSON() string {
	if rp.eng == nil {
		return rp.usage
	}
	return strings.TrimSuffix(rp.usage, "}") + `,"prompt_tokens_details":{"cached_tokens":` + strconv.FormatInt(rp.eng.cached.Load(), 10) + `}}`
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, rp *reply) {
	n, arrival, truth := rp.n, rp.arrival, rp.truth
	if tk := s.take(w, r); tk != nil {
		// Chunk k's event, framed as an HTTP chunk; the last carries the
		// finish chunk, the usage chunk, [DONE] and the chunked body's end.
		var ev []byte
		frame := func(b, ev []byte) []byte {
			b = strconv.AppendInt(b, int64(len(ev)), 16)
			b = append(b, "\r\n"...)
			b = append(b, ev...)
			return append(b, "\r\n"...)
		}
		chunk := func(k int, b []byte) []byte {
			ev = rp.event(ev[:0], k)
			b = frame(b, ev)
			if k == n-1 {
				// (A stream that ends with its last token event, as TGI's,
				// Triton's and SOLIDO's do, has no end events: an empty
				// frame here would be a second end of the chunked body,
				// bytes a client then reads on an idle connection.)
				if ev = rp.end(ev[:0]); len(ev) > 0 {
					b = frame(b, ev)
				}
				b = append(b, "0\r\n\r\n"...)
			}
			return b
		}
		s.streamConn(tk, r, rp, chunk)
		return
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", rp.sh.streamType())
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	buf := make([]byte, 0, 512)
	var last time.Time
	truth.Gaps = make([]int64, 0, n)
	for k := 0; k < n; k++ {
		if k == rp.sent {
			panic(http.ErrAbortHandler) // faultDisconnect: drop the connection mid-stream
		}
		due, ok := s.dueOf(rp, k, r.Context().Done())
		if !ok {
			truth.Aborted = true
			return
		}
		if !waitUntil(r, timer, due) {
			truth.Aborted = true
			return
		}
		buf = rp.event(buf[:0], k)
		if _, err := w.Write(buf); err != nil {
			truth.Aborted = true
			return
		}
		if fl != nil {
			fl.Flush()
		}
		now := time.Now()
		truth.chunk(k, arrival, last, now)
		last = now
	}
	w.Write(rp.end(buf[:0]))
	if fl != nil {
		fl.Flush()
	}
	if s.cfg.CloseAfterStream {
		closeOnNextRequest(w)
	}
}

// event appends token k's SSE event (with the role chunk before the first).
func (rp *reply) event(buf []byte, k int) []byte {
	sh, prefix, h := &rp.sh, rp.prefix, rp.h
	if k == 0 && sh.roleChunk && !sh.anthropic && !sh.responses && sh.ollama == 0 {
		buf = append(buf, "data: "...)
		buf = append(buf, prefix...)
		buf = append(buf, `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
	if sh.anthropic {
		return rp.messagesEvent(buf, k)
	}
	if sh.responses {
		return rp.responsesEvent(buf, k)
	}
	if sh.ollama != 0 {
		return rp.ollamaLine(buf, k)
	}
	if sh.native != 0 {
		return rp.nativeEvent(buf, k)
	}
	if k == rp.badAt {
		return append(buf, "data: "+prefix+"{\"index\":0,\"delta\":{\"content\":\" broken\n\n"...) // faultMalformed: cut off mid-object
	}
	buf = append(buf, "data: "...)
	buf = append(buf, prefix...)
	if k < rp.reason {
		buf = append(buf, reasoningPre...)
	} else {
		buf = append(buf, sh.contentPre...)
	}
	buf = append(buf, ' ')
	buf = append(buf, tokenizer.Word(int(h)+k)...)
	buf = append(buf, sh.contentPost...)
	return append(buf, "]}\n\n"...)
}

func (rp *reply) id() string { return rp.idStr }

// reasoningPre starts a chat chunk of reasoning (the rest is contentPost's).
const reasoningPre = `{"index":0,"delta":{"reasoning_content":"`

// end appends the finish chunk, the usage chunk when asked for, and
// [DONE].
func (rp *reply) end(buf []byte) []byte {
	if rp.sh.anthropic {
		return rp.messagesEnd(buf)
	}
	if rp.sh.responses {
		return rp.responsesEnd(buf)
	}
	if rp.sh.ollama != 0 {
		return rp.ollamaDone(buf, nil)
	}
	if rp.sh.native != 0 {
		return rp.nativeEnd(buf)
	}
	buf = append(buf, "data: "...)
	buf = append(buf, rp.prefix...)
	buf = append(buf, rp.sh.finishFmt(rp.finish)...)
	buf = append(buf, "]}\n\n"...)
	if rp.withUsage {
		buf = append(buf, "data: "...)
		buf = append(buf, rp.prefix...)
		buf = append(buf, "],"+rp.usageJSON()+"}\n\n"...)
	}
	return append(buf, "data: [DONE]\n\n"...)
}

// closeOnNextRequest ends the chunked response itself, keeps the
// connection open so the client pools it, and closes it as soon as the
// next request arrives on it (or after 30 s).
func closeOnNextRequest(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	rw.WriteString("0\r\n\r\n")
	rw.Flush()
	go func() {
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		var b [1]byte
		conn.Read(b[:])
	}()
}

func (s *Server) whole(w http.ResponseWriter, r *http.Request, rp *reply) {
	n, arrival, truth := rp.n, rp.arrival, rp.truth
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	if rp.fault == faultDisconnect {
		panic(http.ErrAbortHandler)
	}
	due, ok := s.dueOf(rp, n-1, r.Context().Done())
	if !ok {
		truth.Aborted = true
		return
	}
	if !waitUntil(r, timer, due) {
		truth.Aborted = true
		return
	}
	text := make([]byte, 0, n*8)
	for k := 0; k < n; k++ {
		text = append(text, ' ')
		text = append(text, tokenizer.Word(int(rp.h)+k)...)
	}
	if rp.sh.anthropic || rp.sh.responses || rp.sh.ollama != 0 || rp.sh.native != 0 {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case rp.sh.anthropic:
			io.WriteString(w, rp.messagesWhole(text))
		case rp.sh.responses:
			io.WriteString(w, rp.responsesWhole(text))
		case rp.sh.native != 0:
			io.WriteString(w, rp.nativeWhole(text))
		default:
			w.Write(bytes.TrimSuffix(rp.ollamaDone(nil, text), []byte("\n")))
		}
		truth.FirstToken = int64(time.Since(arrival))
		return
	}
	choice := rp.sh.whole(string(text), rp.finish)
	if rp.reason > 0 {
		cut := 0 // the reasoning is the first rp.reason words
		for k := 0; k < rp.reason; k++ {
			cut += 1 + len(tokenizer.Word(int(rp.h)+k))
		}
		choice = `{"index":0,"message":{"role":"assistant","reasoning_content":"` + string(text[:cut]) + `","content":"` + string(text[cut:]) + `"},"logprobs":null,"finish_reason":"` + rp.finish + `"}`
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, rp.prefix+choice+"],"+rp.usageJSON()+"}")
	truth.FirstToken = int64(time.Since(arrival))
}

// promptTexts calls f with each text of the prompt: a message's content
// given as a string, or the text parts of one given as an array, and a
// completions prompt.
func promptTexts(req *request, f func(string)) {
	each := func(raw json.RawMessage) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			f(s)
			return
		}
		var texts []string // (SOLIDO's query)
		if json.Unmarshal(raw, &texts) == nil {
			for _, t := range texts {
				f(t)
			}
			return
		}
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) == nil {
			for _, p := range parts {
				f(p.Text)
			}
		}
	}
	for _, sys := range []json.RawMessage{req.System, req.Instructions} {
		if len(sys) > 0 {
			each(sys) // (before the messages, as the model reads it)
		}
	}
	for _, m := range req.Messages {
		each(m.Content)
	}
	for _, p := range []json.RawMessage{req.Prompt, req.Input, req.Inputs, req.Text, req.TextInput, req.Query} {
		if len(p) > 0 {
			each(p)
		}
	}

}

// promptTokens counts the prompt with the builtin tokenizer (a tokens-in
// prompt's ids are its tokens).
func promptTokens(req *request) int {
	n := len(req.TokenIDs)
	promptTexts(req, func(s string) { n += tokenizer.Count(s) })
	return n
}
