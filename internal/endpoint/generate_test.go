package endpoint

import (
	"strings"
	"testing"
)

// scanned is what the hot path makes of a stream's events: the text of
// each, and the last full decode.
func scanned(t *testing.T, k Kind, events []string) (string, *Chunk) {
	t.Helper()
	var text strings.Builder
	var last *Chunk
	var buf []byte
	for _, e := range events {
		c, _, full, err := k.Scan([]byte(e), buf)
		if err != nil {
			t.Fatalf("%T.Scan(%s): %v", k, e, err)
		}
		text.Write(c)
		if full != nil {
			last = full
		}
		if p, err := k.ParseChunk([]byte(e)); err != nil || (full == nil && p.Content != string(c)) {
			t.Fatalf("%T: Scan %q and ParseChunk %+v (%v) disagree on %s", k, c, p, err, e)
		}
	}
	return text.String(), last
}

// TGI's /generate_stream as the server writes it: one token an event, the
// special end token not text, the last event's generated_text (the whole
// answer) not counted again, its details the finish and the token count.
func TestTGIStream(t *testing.T) {
	t.Parallel()
	events := []string{
		`{"index":1,"token":{"id":1734,"text":" Deep","logprob":-0.52,"special":false},"generated_text":null,"details":null}`,
		`{"index":2,"token":{"id":6509,"text":" learning","logprob":-0.01,"special":false},"generated_text":null,"details":null}`,
		`{"index":3,"token":{"id":2,"text":"</s>","logprob":-0.1,"special":true},"generated_text":" Deep learning","details":{"finish_reason":"eos_token","generated_tokens":3,"seed":null}}`,
	}
	text, last := scanned(t, TGIGenerate{}, events)
	if text != " Deep learning" || last == nil || last.Finish != "eos_token" || last.Usage.CompletionTokens != 3 {
		t.Errorf("text %q, last %+v", text, last)
	}
	if (TGIGenerate{}).Done([]byte(events[2])) {
		t.Error("a TGI event taken for the end of the stream")
	}
	c, _, full, err := TGIGenerate{}.Scan([]byte(`{"error":"Request failed during generation: Server error: CUDA out of memory","error_type":"generation"}`), nil)
	if err != nil || len(c) != 0 || full == nil || !strings.Contains(full.ServerErr, "out of memory") {
		t.Errorf("error event: %q %+v %v", c, full, err)
	}
}

// TGI's /generate answers with one object, and its compatibility route
// with a list of one; the answer is generated_text.
func TestTGIWhole(t *testing.T) {
	t.Parallel()
	obj := `{"generated_text":" Deep learning is","details":{"finish_reason":"length","generated_tokens":3,"seed":null,"prefill":[],"tokens":[]}}`
	for _, body := range []string{obj, " [" + obj + "]\n"} {
		r, err := TGIGenerate{}.ParseResponse([]byte(body))
		if err != nil || r.Content != " Deep learning is" || r.Finish != "length" || r.Usage.CompletionTokens != 3 {
			t.Errorf("%s: %+v %v", body, r, err)
		}
	}
	if _, err := (TGIGenerate{}).ParseResponse([]byte("[]")); err == nil {
		t.Error("an empty list accepted")
	}
	b, _ := TGIGenerate{}.Build(Input{Model: "m", System: "Be brief.", Prompt: "hi", MaxTokens: 7, Stream: true, Usage: true})
	if string(b) != `{"inputs":"Be brief. hi","parameters":{"details":true,"max_new_tokens":7}}` {
		t.Errorf("body %s", b)
	}
}

// SGLang's /generate stream: each event carries the whole text so far, the
// last a finish_reason object; the fast path (orjson's compact
// "finish_reason":null) and the full decode (spaced JSON) agree.
func TestSGLangStream(t *testing.T) {
	t.Parallel()
	for _, sep := range []string{":", ": "} {
		ev := func(text, finish string, n int) string {
			return `{"text"` + sep + `"` + text + `","output_ids":[1],"meta_info":{"id":"a1","finish_reason"` + sep + finish + `,"prompt_tokens":5,"completion_tokens":` + string(rune('0'+n)) + `}}`
		}
		events := []string{ev("Hello", "null", 1), ev("Hello there", "null", 2), ev("Hello there!", `{"type":"length","length":3}`, 3)}
		var texts []string
		var buf []byte
		var last *Chunk
		for _, e := range events {
			c, _, full, err := SGLangGenerate{}.Scan([]byte(e), buf)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, string(c))
			if full != nil {
				last = full
			}
		}
		if strings.Join(texts, "|") != "Hello|Hello there|Hello there!" || last == nil || last.Finish != "length" || last.Usage.CompletionTokens != 3 || last.Usage.PromptTokens != 5 {
			t.Errorf("sep %q: texts %q, last %+v", sep, texts, last)
		}
	}
	r, err := SGLangGenerate{}.ParseResponse([]byte(`{"text":"ok","meta_info":{"finish_reason":"stop","prompt_tokens":2,"completion_tokens":1}}`))
	if err != nil || r.Content != "ok" || r.Finish != "stop" {
		t.Errorf("a plain finish_reason: %+v %v", r, err)
	}
	if r, _ := (SGLangGenerate{}).ParseResponse([]byte(`{"error":{"message":"bad"}}`)); r.ServerErr == "" {
		t.Error("an error object not read")
	}
}

// OpenAI's non-streamed answers (as vLLM writes them) give the whole text,
// the finish and the usage.
func TestOpenAIWhole(t *testing.T) {
	t.Parallel()
	chat := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there","tool_calls":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"total_tokens":12,"completion_tokens":3}}`
	r, err := Chat{}.ParseResponse([]byte(chat))
	if err != nil || r.Content != "Hi there" || r.Finish != "stop" || r.Usage == nil || r.Usage.CompletionTokens != 3 || r.Usage.PromptTokens != 9 {
		t.Errorf("chat: %+v %v", r, err)
	}
	cmpl := `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" world","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2}}`
	r, err = Completions{}.ParseResponse([]byte(cmpl))
	if err != nil || r.Content != " world" || r.Finish != "length" || r.Usage.CompletionTokens != 2 {
		t.Errorf("completions: %+v %v", r, err)
	}
	if _, err := (Chat{}).ParseResponse([]byte("<html>502 Bad Gateway</html>")); err == nil {
		t.Error("HTML accepted as an answer")
	}
}

// A stream is recognised by its content type: SSE, or for Ollama's
// line-framed kind NDJSON (or the application/json some servers send).
func TestStreamed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		k    Kind
		ct   string
		want bool
	}{
		{Chat{}, "text/event-stream; charset=utf-8", true},
		{Chat{}, "application/json", false},
		{OllamaChat{}, "application/x-ndjson", true},
		{OllamaChat{}, "application/json; charset=utf-8", true},
		{OllamaChat{}, "text/event-stream", false},
	} {
		if got := Streamed(c.k, c.ct); got != c.want {
			t.Errorf("Streamed(%T, %q) = %v", c.k, c.ct, got)
		}
	}
}
