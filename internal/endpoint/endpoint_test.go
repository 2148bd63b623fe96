package endpoint

import (
	"encoding/json"
	"strings"
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
		{"reasoning", `{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`, "", "", false, false},
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
	// Reasoning is kept apart from the answer, in both names servers use.
	for in, want := range map[string][2]string{
		`{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`:                  {"think", ""},
		`{"choices":[{"index":0,"delta":{"reasoning":"hmm","content":null}}]}`:             {"hmm", ""},
		`{"choices":[{"index":0,"message":{"reasoning_content":"r","content":"answer"}}]}`: {"r", "answer"},
		`{"choices":[{"index":0,"delta":{"reasoning_content":null,"content":" it is"}}]}`:  {"", " it is"},
	} {
		got, err := Chat{}.ParseChunk([]byte(in))
		if err != nil || got.Reasoning != want[0] || got.Content != want[1] {
			t.Errorf("%s: reasoning %q, content %q (%v); want %q", in, got.Reasoning, got.Content, err, want)
		}
	}
	if _, err := (Chat{}).ParseChunk([]byte(`{"choices":[`)); err == nil {
		t.Error("truncated JSON accepted")
	}
}

// A session's history goes between the system message and the turn's own,
// each earlier turn as the user's message and the server's answer.
func TestWithHistory(t *testing.T) {
	body, err := Chat{}.Build(Input{Model: "m", Prompt: "third", System: "be brief", MaxTokens: 4, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := WithHistory(body, []Turn{{User: "first", Assistant: "answer one"}, {User: "second", Assistant: "answer <two>"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		Messages  []struct{ Role, Content string }
	}
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"system:be brief", "user:first", "assistant:answer one", "user:second", "assistant:answer <two>", "user:third"}
	var roles []string
	for _, msg := range m.Messages {
		roles = append(roles, msg.Role+":"+msg.Content)
	}
	if strings.Join(roles, "|") != strings.Join(want, "|") || m.Model != "m" || m.MaxTokens != 4 || !m.Stream {
		t.Fatalf("%s", got)
	}
	if _, err := WithHistory([]byte(`{"prompt":"x"}`), []Turn{{User: "a", Assistant: "b"}}, 1); err == nil {
		t.Error("a completions body took a history")
	}

	// A dag_jsonl turn of several user messages: they are the body's own
	// (the history goes before them all), and an earlier such turn's go
	// into the history before its answer.
	body, _ = Chat{}.Build(Input{Model: "m", Prompt: "c2", Before: []string{"c1"}, System: "s"})
	got, err = WithHistory(body, []Turn{{User: "a2", Before: []string{"a1"}, Assistant: "A"}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	m.Messages = nil
	json.Unmarshal(got, &m)
	roles = nil
	for _, msg := range m.Messages {
		roles = append(roles, msg.Role+":"+msg.Content)
	}
	if want := "system:s|user:a1|user:a2|assistant:A|user:c1|user:c2"; strings.Join(roles, "|") != want {
		t.Errorf("%s\nwant %s", strings.Join(roles, "|"), want)
	}

	// Authored messages: the body's own as written (after the system
	// prompt), and an earlier turn's as written before its answer.
	tool := json.RawMessage(`{"role":"tool","tool_call_id":"c1","content":"42"}`)
	call := json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1"}]}`)
	body, _ = Chat{}.Build(Input{Model: "m", Prompt: "ignored", System: "s", Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":"q"}`), call, tool}})
	got, err = WithHistory(body, []Turn{{Raw: []json.RawMessage{json.RawMessage(`{"role":"user","content":[{"type":"text","text":"p"}]}`)}, Assistant: "A"}}, 3)
	if want := `"messages":[{"content":"s","role":"system"},{"role":"user","content":[{"type":"text","text":"p"}]},{"content":"A","role":"assistant"},{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1"}]},{"role":"tool","tool_call_id":"c1","content":"42"}]`; err != nil || !strings.Contains(string(got), want) || strings.Contains(string(got), "ignored") {
		t.Errorf("%s (%v)\nwant %s", got, err, want)
	}
}

// An embeddings answer counts its vectors (floats or base64), takes the
// prompt count from usage, and an error object is the server's error.
func TestParseEmbeddings(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]int{
		`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.0023064255,-0.009327292,0.015797347]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`:                                                                                    {1, 8},
		`{"id":"embd-1","object":"list","created":1,"model":"e5","data":[{"index":0,"object":"embedding","embedding":"AAAAPwAAgD8="},{"index":1,"object":"embedding","embedding":[1,2]}],"usage":{"prompt_tokens":5,"total_tokens":5,"completion_tokens":0,"prompt_tokens_details":null}}`: {2, 5},
		`{"object":"list","data":[],"usage":{"prompt_tokens":3,"total_tokens":3}}`: {0, 3},
	} {
		c, err := Embeddings{}.ParseResponse([]byte(in))
		if err != nil || c.Items != want[0] || c.Usage == nil || c.Usage.PromptTokens != want[1] {
			t.Errorf("%s: %+v, %v; want %d items, %d prompt tokens", in, c, err, want[0], want[1])
		}
	}
	c, err := NIMEmbeddings{}.ParseResponse([]byte(`{"object":"error","error":{"message":"Input length 600 exceeds maximum allowed token size 512","type":"invalid_request_error"}}`))
	if err != nil || c.ServerErr == "" {
		t.Errorf("error answer: %+v, %v", c, err)
	}
	body, _ := NIMEmbeddings{}.Build(Input{Model: "nv-embedqa", Prompt: "what is a GPU", System: "query:", MaxTokens: 9, Stream: true})
	if string(body) != `{"encoding_format":"float","input":["query: what is a GPU"],"input_type":"query","model":"nv-embedqa"}` {
		t.Errorf("body %s", body)
	}
}

// A template's field path walks objects and arrays; a missing or null
// field is no text, a number its JSON; an error object is the server's.
func TestTemplateField(t *testing.T) {
	t.Parallel()
	k, err := NewTemplate(`{"q": {{json .Prompt}}, "n": {{.MaxTokens}}}`, "out.items.1.text")
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"out":{"items":[{"text":"a"},{"text":" b\"c"}]}}`: ` b"c`,
		`{"out":{"items":[{"text":"a"}]}}`:                  "",
		`{"out":{"items":[{"text":"a"},{"text":null}]}}`:    "",
		`{"out":{"items":[{"text":"a"},{"text":12.5}]}}`:    "12.5",
		`{"out":{"items":{"1":{"text":"x"}}}}`:              "x",
		`{"out":"flat"}`:                                    "",
	} {
		c, err := k.ParseChunk([]byte(in))
		if err != nil || c.Content != want {
			t.Errorf("%s: %q, %v; want %q", in, c.Content, err, want)
		}
	}
	if c, err := k.ParseResponse([]byte(`{"error":{"message":"no"}}`)); err != nil || c.ServerErr == "" {
		t.Errorf("error object: %+v, %v", c, err)
	}
	if _, err := k.ParseChunk([]byte(`{"out":`)); err == nil {
		t.Error("a cut event was taken")
	}
	body, err := k.Build(Input{Prompt: "say \"hi\"", MaxTokens: 4, Extra: map[string]json.RawMessage{"temperature": json.RawMessage("0")}})
	if err != nil || string(body) != `{"n":4,"q":"say \"hi\"","temperature":0}` {
		t.Errorf("body %s, %v", body, err)
	}
	for _, bad := range [][2]string{{"", "x"}, {`{{.Nope}}`, "x"}, {`{"a":1}`, ""}, {`{"a":1}`, "a..b"}} {
		k, err := NewTemplate(bad[0], bad[1])
		if err == nil {
			_, err = k.Build(Input{})
		}
		if err == nil {
			t.Errorf("template %q, field %q accepted", bad[0], bad[1])
		}
	}
}

// KServe v2: the prompt and max_tokens go as tensors; the answer is the
// text_output tensor; an error object is the server's.
func TestKServeWire(t *testing.T) {
	t.Parallel()
	body, err := KServe{}.Build(Input{Model: "ensemble", Prompt: "What is ML?", MaxTokens: 16})
	want := `{"inputs":[{"data":["What is ML?"],"datatype":"BYTES","name":"text_input","shape":[1,1]},{"data":[16],"datatype":"INT32","name":"max_tokens","shape":[1,1]}]}`
	if err != nil || string(body) != want {
		t.Errorf("body %s, %v", body, err)
	}
	c, err := KServe{}.ParseResponse([]byte(`{"model_name":"ensemble","model_version":"1","outputs":[{"name":"text_output","datatype":"BYTES","shape":[1],"data":[" Machine learning is"]}]}`))
	if err != nil || c.Content != " Machine learning is" {
		t.Errorf("%+v, %v", c, err)
	}
	if c, _ := (KServe{}).ParseResponse([]byte(`{"error":"Request for unknown model: 'x' is not found"}`)); c.ServerErr == "" {
		t.Errorf("error: %+v", c)
	}
}

// An image answer counts its images, base64 or URLs; an error object is
// the server's error; the request asks for one image as base64.
func TestImageGenerationWire(t *testing.T) {
	t.Parallel()
	c, err := ImageGeneration{}.ParseResponse([]byte(`{"created":1713833628,"data":[{"b64_json":"iVBORw0KGgo="},{"url":"https://img/1.png","revised_prompt":"a cat"}],"usage":{"total_tokens":100,"input_tokens":50,"output_tokens":50}}`))
	if err != nil || c.Items != 2 {
		t.Errorf("%+v, %v", c, err)
	}
	if c, _ := (ImageGeneration{}).ParseResponse([]byte(`{"error":{"message":"Your request was rejected","type":"image_generation_user_error"}}`)); c.ServerErr == "" {
		t.Errorf("error: %+v", c)
	}
	body, err := ImageGeneration{}.Build(Input{Model: "flux", Prompt: "a cat", MaxTokens: 5})
	if err != nil || string(body) != `{"model":"flux","n":1,"prompt":"a cat","response_format":"b64_json"}` {
		t.Errorf("body %s, %v", body, err)
	}
}
