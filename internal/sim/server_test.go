package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, h http.Handler, path, body string) (*http.Response, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var volatile = regexp.MustCompile(`"id":"(chatcmpl|cmpl)-[0-9a-z]+","object":"([a-z._]+)","created":[0-9]+`)

// normalize replaces the id and created fields, which vary per request.
func normalize(s string) string {
	return volatile.ReplaceAllString(s, `"id":"$1-X","object":"$2","created":0`)
}

func TestChatStreamShape(t *testing.T) {
	t.Parallel()
	s := New(Config{TTFT: 0, ITL: 0})
	resp, body := post(t, s, "/v1/chat/completions",
		`{"model":"m","messages":[{"role":"user","content":"a b c"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":2,"ignore_eos":true}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	got := normalize(body)
	p := `data: {"id":"chatcmpl-X","object":"chat.completion.chunk","created":0,"model":"m","choices":[`
	w := regexp.MustCompile(` [a-z]+`)
	got = w.ReplaceAllString(got, " W")
	want := p + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		p + `{"index":0,"delta":{"content":" W"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		p + `{"index":0,"delta":{"content":" W"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		p + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}` + "\n\n" +
		p + `],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}` + "\n\n" +
		"data: [DONE]\n\n"
	if got != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
	}
	// Every data line but [DONE] is valid JSON.
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" && !json.Valid([]byte(d)) {
			t.Errorf("invalid JSON chunk %s", d)
		}
	}
}

func TestCompletionsStreamShape(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	s.cfg.TTFT, s.cfg.ITL = 0, 0
	_, body := post(t, s, "/v1/completions", `{"model":"m","prompt":"x y","stream":true,"max_tokens":1,"ignore_eos":true}`)
	got := regexp.MustCompile(`"text":" [a-z]+"`).ReplaceAllString(normalize(body), `"text":" W"`)
	p := `data: {"id":"cmpl-X","object":"text_completion","created":0,"model":"m","choices":[`
	want := p + `{"index":0,"text":" W","logprobs":null,"finish_reason":null}]}` + "\n\n" +
		p + `{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	if got != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
	}
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	s.cfg.TTFT, s.cfg.ITL = 0, 0
	_, body := post(t, s, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":5,"ignore_eos":true}`)
	var r struct {
		Object  string
		Choices []struct {
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if r.Object != "chat.completion" || r.Choices[0].Message.Role != "assistant" || len(strings.Fields(r.Choices[0].Message.Content)) != 5 ||
		r.Choices[0].FinishReason != "length" || r.Usage.CompletionTokens != 5 || r.Usage.PromptTokens != 1 {
		t.Fatalf("response %+v", r)
	}
}

func TestOutputLength(t *testing.T) {
	t.Parallel()
	s := New(Config{MinLen: 10, MaxLen: 20})
	ip := func(n int) *int { return &n }
	cases := []struct {
		name   string
		req    request
		want   int
		finish string
	}{
		{"natural", request{}, -1, "stop"},
		{"ignore_eos runs to max", request{MaxTokens: ip(50), IgnoreEOS: true}, 50, "length"},
		{"max caps natural", request{MaxTokens: ip(3)}, 3, "length"},
		{"max_completion_tokens wins", request{MaxTokens: ip(3), MaxCompletionTokens: ip(4), IgnoreEOS: true}, 4, "length"},
		{"min raises natural", request{MinTokens: ip(30)}, 30, "stop"},
		{"min capped by max", request{MinTokens: ip(30), MaxTokens: ip(25)}, 25, "length"},
	}
	for _, c := range cases {
		n, fin := s.outputLen(&c.req, 12345)
		if c.want == -1 {
			if n < 10 || n > 20 {
				t.Errorf("%s: natural length %d outside [10,20]", c.name, n)
			}
		} else if n != c.want {
			t.Errorf("%s: n=%d want %d", c.name, n, c.want)
		}
		if fin != c.finish {
			t.Errorf("%s: finish %q want %q", c.name, fin, c.finish)
		}
	}
	a, _ := s.outputLen(&request{}, 1)
	b, _ := s.outputLen(&request{}, 1)
	if a != b {
		t.Error("natural length not deterministic")
	}
}

// Tokens are due on an absolute schedule: the truth's first token and gaps
// track TTFT and ITL, and the truth is served at /sim/truth.
func TestTruthSchedule(t *testing.T) {
	s := New(Config{TTFT: 30 * time.Millisecond, ITL: 10 * time.Millisecond})
	srv := httptest.NewServer(s)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"q"}],"stream":true,"max_tokens":10,"ignore_eos":true}`))
	req.Header.Set("X-Request-ID", "abc")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	if elapsed < 120*time.Millisecond {
		t.Fatalf("10 tokens at TTFT 30ms + 9×10ms took only %s", elapsed)
	}
	tr, err := http.Get(srv.URL + "/sim/truth")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Truths []Truth `json:"truths"`
	}
	json.NewDecoder(tr.Body).Decode(&body)
	tr.Body.Close()
	if len(body.Truths) != 1 || body.Truths[0].ID != "abc" || body.Truths[0].OSL != 10 || len(body.Truths[0].Gaps) != 9 {
		t.Fatalf("truths %+v", body.Truths)
	}
	tt := body.Truths[0]
	if tt.FirstToken < int64(30*time.Millisecond) {
		t.Errorf("first token at %v, before TTFT", time.Duration(tt.FirstToken))
	}
	// Absolute schedule: the last token is due at 30+9·10 = 120ms after arrival;
	// the sum of the gaps can't be below 90ms.
	var sum int64
	for _, g := range tt.Gaps {
		sum += g
	}
	if tt.FirstToken+sum < int64(120*time.Millisecond) {
		t.Errorf("last token at %v, before its due time", time.Duration(tt.FirstToken+sum))
	}
}

func TestModelsAndHealth(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New(Config{Model: "mine"}))
	defer srv.Close()
	r, err := http.Get(srv.URL + "/health")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("health: %v %v", err, r)
	}
	r, _ = http.Get(srv.URL + "/v1/models")
	b, _ := io.ReadAll(r.Body)
	if !strings.Contains(string(b), `"id":"mine"`) || !json.Valid(b) {
		t.Fatalf("models: %s", b)
	}
}

// SGLang's cumulative text, extended event by event, is the whole text
// quoted, as made afresh.
func TestSGLangTextExtends(t *testing.T) {
	rp := &reply{h: 12345}
	for n := 1; n <= 40; n++ {
		if got, want := string(rp.sglangText(n)), strconv.Quote(string(rp.words(n))); got != want {
			t.Fatalf("after %d words: %s, want %s", n, got, want)
		}
	}
	if got, want := string(rp.sglangText(3)), strconv.Quote(string(rp.words(3))); got != want {
		t.Fatalf("out of order: %s, want %s", got, want)
	}
}
