package endpoint

import (
	"encoding/json"
	"testing"
)

func TestBuildStableAndMerged(t *testing.T) {
	t.Parallel()
	in := Input{Model: "m", Prompt: "a b", MaxTokens: 8, Stream: true,
		Extra: map[string]json.RawMessage{"ignore_eos": json.RawMessage("true"), "max_tokens": json.RawMessage("9")}}
	b, err := Chat{}.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ignore_eos":true,"max_tokens":9,"messages":[{"content":"a b","role":"user"}],"model":"m","stream":true}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	c, _ := Completions{}.Build(Input{Model: "m", Prompt: "p"})
	if string(c) != `{"model":"m","prompt":"p"}` {
		t.Fatalf("completions body %s", c)
	}
}

func TestParseChunks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, content, finish string
		usage                     bool
		serr                      bool
	}{
		{"role", `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, "", "", false, false},
		{"content", `{"choices":[{"index":0,"delta":{"content":" hi"},"finish_reason":null}]}`, " hi", "", false, false},
		{"reasoning", `{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`, "think", "", false, false},
		{"finish", `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, "", "length", false, false},
		{"usage", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, "", "", true, false},
		{"text", `{"object":"text_completion","choices":[{"index":0,"text":" yo","finish_reason":null}]}`, " yo", "", false, false},
		{"error", `{"error":{"message":"boom","code":500}}`, "", "", false, true},
	}
	for _, c := range cases {
		got, err := Chat{}.ParseChunk([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Content != c.content || got.Finish != c.finish || (got.Usage != nil) != c.usage || (got.ServerErr != "") != c.serr {
			t.Errorf("%s: got %+v", c.name, got)
		}
	}
	if _, err := (Chat{}).ParseChunk([]byte(`{"choices":[`)); err == nil {
		t.Error("truncated JSON accepted")
	}
}
