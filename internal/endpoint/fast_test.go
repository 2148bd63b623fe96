package endpoint

import (
	"encoding/json"
	"strings"
	"testing"
)

// Scan agrees with the full decoder on every chunk shape, and falls back to
// it for usage and errors.
func TestScanMatchesDecoder(t *testing.T) {
	t.Parallel()
	chunks := []string{
		`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":" hello"},"logprobs":null,"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"say \"hi\"\n\u00e9"}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"think","content":" more"}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning":" hmm, \"so\"","content":null}}]}`,
		`{"choices":[{"index":0,"delta":{"content":null,"reasoning_content":" first"}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"a","reasoning":"b","content":"c"}}],"usage":{"prompt_tokens":1,"completion_tokens":3}}`,
		`{"choices":[{"index":0,"delta":{"content": null}}]}`,
		`{"choices":[{"index":0,"text":" yo","logprobs":null,"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"the key \"content\":\"x\" in text"}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		// llama-server: the first chat chunk's content is null, and a
		// completions stream ends with text, finish_reason and usage in one chunk.
		`{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"object":"chat.completion.chunk"}`,
		`{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"object":"text_completion","usage":{"completion_tokens":5,"prompt_tokens":4,"total_tokens":9}}`,
		`{"error":{"message":"boom"}}`,
	}
	for _, c := range chunks {
		want, err := parseOpenAI([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		data := []byte(c)
		got, reasoning, full, err := Scan(data, make([]byte, 0, 64))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if string(got[:reasoning]) != want.Reasoning || string(got[reasoning:]) != want.Content {
			t.Errorf("%s: reasoning %q and content %q, decoder %q and %q", c, got[:reasoning], got[reasoning:], want.Reasoning, want.Content)
		}
		if (full != nil) != (want.Usage != nil || want.ServerErr != "") {
			t.Errorf("%s: fallback %v", c, full != nil)
		}
		if string(data) != c {
			t.Errorf("Scan modified its input: %s", data)
		}
	}
	for _, bad := range []string{`{"choices":[`, `{"choices":[{"delta":{"content":"unterminated}}]}`,
		`{"choices":[]}{"choices":[]}`, `{"choices":[{"delta":{"content":"x"}}]`, `{"choices":[{"delta":{"content":"x"}]]}`,
		`"content"`, ``, `{"choices":[{"delta":{"content":"x"}}]}]`} {
		if _, _, _, err := Scan([]byte(bad), nil); err == nil {
			t.Errorf("malformed %q accepted", bad)
		}
	}
}

func TestWellFormed(t *testing.T) {
	for s, want := range map[string]bool{
		`{}`:                      true,
		` {"a":[1,{"b":"}]{"}]} `: true, // brackets inside strings do not count
		`{"a":"say \"}\" twice"}`: true,
		`{"a":"\\"}`:              true,
		`{"a":"\\"}}`:             false,
		`{"a":"\"}`:               false, // the quote is escaped: the string never closes
		`{"a":1}{"b":2}`:          false,
		`{"a":[1}`:                false,
		`[{"a":1}]`:               false,
		`{"a":{"b":1}`:            false,
	} {
		if got := wellFormed([]byte(s)); got != want {
			t.Errorf("wellFormed(%s) = %v, want %v", s, got, want)
		}
	}
}

// The hot path's whole-chunk check against encoding/json's validator.
func BenchmarkWellFormed(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}`)
	b.Run("wellFormed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if !wellFormed(data) {
				b.Fatal()
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if !json.Valid(data) {
				b.Fatal()
			}
		}
	})
}

func BenchmarkScanChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}`)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c, _, _, _ := Scan(data, buf)
		if len(c) != 5 {
			b.Fatal(string(c))
		}
	}
}

func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c, _ := parseOpenAI(data)
		if !strings.HasSuffix(c.Content, "word") {
			b.Fatal(c.Content)
		}
	}
}
