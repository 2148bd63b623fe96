package endpoint

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// AIPerf's tutorial templates render the bodies AIPerf's Jinja2 would:
// tojson is JSON (HTML-safe, as Jinja2's), a bare {{ text }} is escaped
// (autoescape on), extras are merged, and a template reads no file.
func TestJinjaBuild(t *testing.T) {
	in := Input{Model: "m/1", Prompt: `say "hi" <b> & go`, MaxTokens: 50, Stream: true,
		Images: []string{"data:image/png;base64,AA=="}}
	for _, c := range []struct{ src, want string }{
		{`{ "text": {{ text|tojson }} }`, `{"text":"say \"hi\" <b> & go"}`},
		{`{ "input": {{ texts|tojson }}, "model": {{ model|tojson }} }`, `{"input":["say \"hi\" <b> & go"],"model":"m/1"}`},
		{"nv-embedqa", `{"text":["say \"hi\" <b> & go"]}`},
		{`{"model": {{ model|tojson }}, "prompt": {{ text|tojson }}, "max_new_tokens": {{ max_tokens|tojson }}, "stream": {{ stream|lower }}}`,
			`{"model":"m/1","prompt":"say \"hi\" <b> & go","max_new_tokens":50,"stream":true}`},
		{`{"text": {{ text|tojson }}, "image": {{ image|tojson }}, "audio": {{ audio|tojson }}}`,
			`{"text":"say \"hi\" <b> & go","image":"data:image/png;base64,AA==","audio":null}`},
		{`{"t": "{{ text }}"}`, `{"t":"say &#34;hi&#34; &lt;b&gt; &amp; go"}`},
		{`{"n": [{% for t in texts %}{{ loop.index }}{% endfor %}]}`, `{"n":[1]}`},
	} {
		j, err := NewJinja(c.src, "")
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		b, err := j.Build(in)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		var got, want any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %s: %v", c.src, b, err)
		}
		json.Unmarshal([]byte(c.want), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", c.src, b, c.want)
		}
	}
	// --extra-inputs merge into the rendered object.
	j, _ := NewJinja(`{"text": {{ text|tojson }}}`, "")
	b, err := j.Build(Input{Prompt: "p", Extra: map[string]json.RawMessage{"top_k": json.RawMessage("5")}})
	if err != nil || string(b) != `{"text":"p","top_k":5}` {
		t.Errorf("extras: %s %v", b, err)
	}
	// Not JSON, or a file read: errors that say so.
	j, _ = NewJinja(`{"text": {{ text }}}`, "")
	if _, err := j.Build(Input{Prompt: "p"}); err == nil || !strings.Contains(err.Error(), "did not render JSON") {
		t.Errorf("unquoted text: %v", err)
	}
	if j, err := NewJinja(`{% include "/etc/passwd" %}`, ""); err == nil {
		if _, err := j.Build(Input{Prompt: "p"}); err == nil {
			t.Error("an include read a file")
		}
	}
	if _, err := NewJinja(`{{ text|tojson `, ""); err == nil {
		t.Error("a broken template parsed")
	}
	if _, err := NewJinja(`{"a":1}`, "choices[0"); err == nil || !strings.Contains(err.Error(), "JMESPath") {
		t.Errorf("a broken response_field: %v", err)
	}
}

// The answer is where the JMESPath query points, or where AIPerf's
// auto-detection looks; embeddings and rankings are items, not text.
func TestJinjaParse(t *testing.T) {
	for _, c := range []struct {
		field, body string
		want        Chunk
	}{
		{"", `{"text": "abc"}`, Chunk{Content: "abc"}},
		{"", `{"output": ["a", "b"]}`, Chunk{Content: "ab"}},
		{"", `{"choices": [{"message": {"content": "hi"}}]}`, Chunk{Content: "hi"}},
		{"", `{"choices": [{"delta": {"content": "d"}}]}`, Chunk{Content: "d"}},
		{"", `{"data": [{"object": "embedding", "embedding": [0.1]}, {"object": "embedding", "embedding": [0.2]}]}`, Chunk{Items: 2}},
		{"", `{"embeddings": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]}`, Chunk{Items: 3}},
		{"", `{"results": [{"index": 0, "score": 0.9}]}`, Chunk{Items: 1}},
		{"", `{"nothing": 1}`, Chunk{}},
		{"", `{"error": {"message": "bad"}}`, Chunk{ServerErr: `{"message":"bad"}`}},
		{"generated_text", `{"generated_text": "gen"}`, Chunk{Content: "gen"}},
		{"choices[0].text", `{"choices": [{"text": "ct"}]}`, Chunk{Content: "ct"}},
		{"embeddings", `{"embeddings": [[1, 2], [3, 4]]}`, Chunk{Items: 2}},
		{"generated_text", `{"text": "elsewhere"}`, Chunk{}}, // a set field is honoured strictly, as AIPerf does
	} {
		j, err := NewJinja(`{}`, c.field)
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.ParseResponse([]byte(c.body))
		if err != nil {
			t.Fatalf("%s %s: %v", c.field, c.body, err)
		}
		if got != c.want {
			t.Errorf("%q %s: got %+v, want %+v", c.field, c.body, got, c.want)
		}
		content, _, full, err := j.Scan([]byte(c.body), nil)
		if err != nil || (full == nil && string(content) != c.want.Content) {
			t.Errorf("Scan %q %s: %q %v %v", c.field, c.body, content, full, err)
		}
	}
}
