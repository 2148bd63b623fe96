package endpoint

import (
	"encoding/json"
	"strings"
	"testing"
)

// Each rankings type builds its API's request and reads its answers:
// ranked items counted, an error object the server's error, an empty
// ranking no items (which the client counts as an empty answer).
func TestRankings(t *testing.T) {
	in := Input{Model: "rr", Query: "q?", Passages: []string{"a", "b"}, MaxTokens: 9, Stream: true, Extra: map[string]json.RawMessage{"truncate": json.RawMessage(`"END"`)}}
	for _, c := range []struct {
		kind            Kind
		body            string
		ok, empty, fail string
	}{
		{NIMRankings{}, `{"model":"rr","passages":[{"text":"a"},{"text":"b"}],"query":{"text":"q?"},"truncate":"END"}`,
			`{"rankings":[{"index":1,"logit":0.3},{"index":0,"logit":-1.2}]}`, `{"rankings":[]}`, `{"error":{"message":"bad"}}`},
		{CohereRankings{}, `{"documents":["a","b"],"model":"rr","query":"q?","truncate":"END"}`,
			`{"id":"x","results":[{"index":0,"relevance_score":0.9},{"index":1,"relevance_score":0.1}],"meta":{}}`, `{"results":[]}`, `{"message":"invalid request"}`},
		{TEIRankings{}, `{"query":"q?","texts":["a","b"],"truncate":"END"}`,
			` [{"index":0,"score":0.9},{"index":1,"score":0.2}]`, `[]`, `{"error":"Input validation error","error_type":"Validation"}`},
	} {
		b, err := c.kind.Build(in)
		if err != nil || string(b) != c.body {
			t.Errorf("%T: body %s (%v), want %s", c.kind, b, err, c.body)
		}
		if r, err := c.kind.ParseResponse([]byte(c.ok)); err != nil || r.Items != 2 || r.ServerErr != "" {
			t.Errorf("%T: %s read as %+v, %v", c.kind, c.ok, r, err)
		}
		if r, err := c.kind.ParseResponse([]byte(c.empty)); err != nil || r.Items != 0 || r.ServerErr != "" {
			t.Errorf("%T: %s read as %+v, %v", c.kind, c.empty, r, err)
		}
		if r, err := c.kind.ParseResponse([]byte(c.fail)); err != nil || r.ServerErr == "" {
			t.Errorf("%T: %s read as %+v, %v", c.kind, c.fail, r, err)
		}
		if _, err := c.kind.ParseResponse([]byte(`{"rankings":`)); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%T: a cut body read as %v", c.kind, err)
		}
		if nt, ok := c.kind.(NonToken); !ok || nt.Unit() != "passages" {
			t.Errorf("%T: not a non-token kind of passages", c.kind)
		}
	}
	// Without a query, the prompt is the query.
	b, _ := TEIRankings{}.Build(Input{Prompt: "p", System: "s"})
	if string(b) != `{"query":"s p","texts":[]}` {
		t.Errorf("a prompt-only request: %s", b)
	}
}

// chat_embeddings sends a chat's messages to /v1/embeddings, with no
// output length or stream, and reads an embeddings answer.
func TestChatEmbeddings(t *testing.T) {
	b, err := ChatEmbeddings{}.Build(Input{Model: "vlm2vec", Prompt: "a cat", System: "describe", MaxTokens: 8, Stream: true, Usage: true})
	if err != nil || string(b) != `{"messages":[{"content":"describe","role":"system"},{"content":"a cat","role":"user"}],"model":"vlm2vec"}` {
		t.Errorf("body %s, %v", b, err)
	}
	r, err := ChatEmbeddings{}.ParseResponse([]byte(`{"data":[{"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":5}}`))
	if err != nil || r.Items != 1 || r.Usage.PromptTokens != 5 {
		t.Errorf("answer %+v, %v", r, err)
	}
	if typ, err := Lookup("chat_embeddings"); err != nil || typ.Path != "/v1/embeddings" {
		t.Errorf("chat_embeddings: %+v, %v", typ, err)
	}
}

// audio_transcription keeps its upload as JSON in the plan and sends it
// as a multipart form of the model, the fields and the clip; a
// transcript is an item, an empty one none.
func TestAudioTranscriptionForm(t *testing.T) {
	k := AudioTranscription{}
	b, err := k.Build(Input{Model: "whisper", Audios: []AudioClip{{Data: "UklGRg==", Format: "wav"}}, Extra: map[string]json.RawMessage{"temperature": json.RawMessage(`0`)}})
	if err != nil || !json.Valid(b) {
		t.Fatalf("body %s, %v", b, err)
	}
	wire, err := k.Wire(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`name="model"` + "\r\n\r\nwhisper", `name="temperature"` + "\r\n\r\n0", `filename="audio.wav"`, "Content-Type: audio/wav\r\n\r\nRIFF"} {
		if !strings.Contains(string(wire), want) {
			t.Errorf("the form lacks %q:\n%s", want, wire)
		}
	}
	if _, err := k.Build(Input{Model: "w"}); err == nil {
		t.Error("a request without a clip was built")
	}
	for body, items := range map[string]int{`{"text":"hello there"}`: 1, `{"text":""}`: 0} {
		if r, err := k.ParseResponse([]byte(body)); err != nil || r.Items != items {
			t.Errorf("%s: %+v, %v", body, r, err)
		}
	}
	if r, _ := k.ParseResponse([]byte(`{"error":{"message":"bad audio"}}`)); r.ServerErr == "" {
		t.Error("an error answer read as good")
	}
}

// A video job is followed until completed or failed; a completed one is
// an item, a failed one the server's error.
func TestVideoJobs(t *testing.T) {
	k := VideoGeneration{}
	for body, want := range map[string]struct {
		done  bool
		items int
		fail  bool
	}{
		`{"id":"v1","status":"queued"}`:                           {false, 0, false},
		`{"id":"v1","status":"in_progress","progress":5}`:         {false, 0, false},
		`{"id":"v1","status":"completed","url":"/x"}`:             {true, 1, false},
		`{"id":"v1","status":"failed","error":{"message":"oom"}}`: {true, 0, true},
	} {
		id, done, err := k.Job([]byte(body))
		r, _ := k.ParseResponse([]byte(body))
		if err != nil || id != "v1" || done != want.done || (done && (r.Items != want.items || (r.ServerErr != "") != want.fail)) {
			t.Errorf("%s: id %q, done %v, %+v, %v", body, id, done, r, err)
		}
	}
	if _, _, err := k.Job([]byte(`{"status":"queued"}`)); err == nil {
		t.Error("a job without an id was followed")
	}
}

// The fast readings of SGLang's and Triton's events agree with their full
// decodes: a cumulative text with the finish still null, a Triton string
// and a batch of one.
func TestFastScansAgree(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		ev   string
	}{
		{SGLangGenerate{}, `{"text":"hello wor\"ld","output_ids":[1,2],"meta_info":{"id":"x","finish_reason":null,"prompt_tokens":3,"completion_tokens":2}}`},
		{SGLangGenerate{}, `{"text":"done","meta_info":{"finish_reason":{"type":"length","length":4},"prompt_tokens":3,"completion_tokens":4}}`},
		{TritonGenerate{}, `{"model_name":"m","model_version":"1","text_output":" tok"}`},
		{TritonGenerate{}, `{"model_name":"m","text_output":[" batch"]}`},
	} {
		got, _, _, err := c.kind.Scan([]byte(c.ev), nil)
		want, werr := c.kind.ParseChunk([]byte(c.ev))
		if err != nil || werr != nil || string(got) != want.Content || want.Content == "" {
			t.Errorf("%T %s: scanned %q (%v), decoded %q (%v)", c.kind, c.ev, got, err, want.Content, werr)
		}
	}
}
