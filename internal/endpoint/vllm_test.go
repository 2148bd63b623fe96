package endpoint

import (
	"encoding/json"
	"strings"
	"testing"
)

// vllm_generate: the prompt goes as token ids, the length and the sampling
// parameters --extra-inputs names go in sampling_params (anything else at
// the top), a stream asks for usage; a prompt without ids is refused.
func TestVLLMGenerateWire(t *testing.T) {
	t.Parallel()
	in := Input{Model: "Qwen/Qwen3-0.6B", Prompt: "ignored", TokenIDs: []int{9707, 11, 1879}, MaxTokens: 16, Stream: true, Usage: true,
		Extra: map[string]json.RawMessage{"ignore_eos": json.RawMessage("true"), "temperature": json.RawMessage("0"), "priority": json.RawMessage("1")}}
	body, err := VLLMGenerate{}.Build(in)
	want := `{"model":"Qwen/Qwen3-0.6B","priority":1,"sampling_params":{"ignore_eos":true,"max_tokens":16,"temperature":0},"stream":true,"stream_options":{"include_usage":true},"token_ids":[9707,11,1879]}`
	if err != nil || string(body) != want {
		t.Errorf("body\n got %s (%v)\nwant %s", body, err, want)
	}
	if _, err := (VLLMGenerate{}).Build(Input{Model: "m", Prompt: "text only"}); err == nil {
		t.Error("a prompt without token ids was built")
	}
	c, err := VLLMGenerate{}.ParseResponse([]byte(`{"request_id":"generate-tokens-1","choices":[{"index":0,"logprobs":null,"finish_reason":"length","token_ids":[791,13180,374]}],"usage":{"prompt_tokens":3,"total_tokens":6,"completion_tokens":3},"prompt_logprobs":null,"kv_transfer_params":null}`))
	if err != nil || c.Content != "791,13180,374" || CountIDs(c.Content) != 3 || c.Usage == nil || c.Usage.PromptTokens != 3 || c.Finish != "length" {
		t.Errorf("%+v, %v", c, err)
	}
	for _, bad := range []string{
		`{"object":"error","message":"Token id 999999 is out of vocabulary","type":"BadRequestError","param":null,"code":400}`,
		`{"error":{"message":"The model m does not exist.","type":"NotFoundError","param":"model","code":404}}`,
	} {
		if c, err := (VLLMGenerate{}).ParseResponse([]byte(bad)); err != nil || c.ServerErr == "" {
			t.Errorf("%s: %+v, %v", bad, c, err)
		}
	}
	if CountIDs("") != 0 || CountIDs("5") != 1 || CountIDs("5,6,7") != 3 {
		t.Error("CountIDs")
	}
}

// The fast reading of a vLLM token event agrees with its full decode; any
// event it can't vouch for (spaces in the list, a finish, usage, an error,
// a cut event) goes to the decoder.
func TestVLLMScan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ev   string
		fast bool
		want string
	}{
		{`{"request_id":"r","choices":[{"index":0,"logprobs":null,"finish_reason":null,"token_ids":[791]}],"usage":null}`, true, "791"},
		{`{"request_id":"r","choices":[{"index":0,"logprobs":null,"finish_reason":null,"token_ids":[13180,374]}],"usage":null}`, true, "13180,374"},
		{`{"request_id":"r","choices":[{"index":0,"finish_reason":null,"token_ids":[1, 2]}]}`, false, "1,2"},
		{`{"request_id":"r","choices":[{"index":0,"finish_reason":"stop","token_ids":[7]}]}`, false, "7"},
		{`{"request_id":"r","choices":[{"index":0,"finish_reason":null,"token_ids":[7]}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, false, "7"},
		{`{"request_id":"r","choices":[{"index":0,"finish_reason":null,"token_ids":[]}]}`, true, ""},
	} {
		got, _, full, err := VLLMGenerate{}.Scan([]byte(c.ev), nil)
		dec, derr := VLLMGenerate{}.ParseChunk([]byte(c.ev))
		if err != nil || derr != nil || string(got) != c.want || dec.Content != c.want || (full == nil) != c.fast {
			t.Errorf("%s: scanned %q (fast %v, %v), decoded %q (%v)", c.ev, got, full == nil, err, dec.Content, derr)
		}
	}
	if _, _, _, err := (VLLMGenerate{}).Scan([]byte(`{"request_id":"r","choices":[{"finish_reason":null,"token_ids":[7]}`), nil); err == nil {
		t.Error("a cut event was read")
	}
	if _, _, full, _ := (VLLMGenerate{}).Scan([]byte(`{"error":{"message":"boom","code":500}}`), nil); full == nil || full.ServerErr == "" {
		t.Errorf("an error event: %+v", full)
	}
}

// solido_rag: the query is the prompt (the system prompt first), with
// AIPerf's default filters and the model as inference_model; the answer's
// content is the text, and a document's own content is not.
func TestSolidoWire(t *testing.T) {
	t.Parallel()
	body, err := SolidoRAG{}.Build(Input{Model: "llama", Prompt: "What is SDE?", System: "Be brief.", MaxTokens: 9,
		Extra: map[string]json.RawMessage{"filters": json.RawMessage(`{"family":"Other"}`)}})
	want := `{"filters":{"family":"Other"},"inference_model":"llama","query":["Be brief.","What is SDE?"]}`
	if err != nil || string(body) != want {
		t.Errorf("body\n got %s (%v)\nwant %s", body, err, want)
	}
	body, _ = SolidoRAG{}.Build(Input{Model: "llama", Prompt: "q", Stream: true})
	if want := `{"filters":{"family":"Solido","tool":"SDE"},"inference_model":"llama","query":["q"],"stream":true}`; string(body) != want {
		t.Errorf("body\n got %s\nwant %s", body, want)
	}
	c, err := SolidoRAG{}.ParseResponse([]byte(`{"sources":[{"id":"d1","content":"not this"}],"content":"SDE is a simulator.","filters":{},"inference_model":"llama"}`))
	if err != nil || c.Content != "SDE is a simulator." {
		t.Errorf("%+v, %v", c, err)
	}
	if c, _ := (SolidoRAG{}).ParseResponse([]byte(`{"detail":"Not authenticated"}`)); c.ServerErr == "" {
		t.Errorf("a FastAPI error: %+v", c)
	}
}

// The template type reads a streamed event's field without a decode where
// it can vouch for the answer, and says so where it can't (an escaped
// key, a key twice on the path).
func TestPathText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		data, path, want string
		ok               bool
	}{
		{`{"id":"c","choices":[{"index":0,"text":" hi","logprobs":null,"finish_reason":null}]}`, "choices.0.text", " hi", true},
		{`{"choices":[{"delta":{"content":"a \"q\""}}]}`, "choices.0.delta.content", `a "q"`, true},
		{`{"choices":[{"delta":{}}]}`, "choices.0.delta.content", "", true},
		{`{"choices":[]}`, "choices.0.text", "", true},
		{`{"n": 12.5e3 , "b":true}`, "n", "12.5e3", true},
		{`{"o":{"a":1}}`, "o", "", true},
		{`{"t":"x","t":"y"}`, "t", "", false},
		{`{"\u0074":"x"}`, "t", "", false},
	} {
		got, ok := pathText([]byte(c.data), strings.Split(c.path, "."))
		if ok != c.ok || (ok && string(got) != c.want) {
			t.Errorf("%s at %s: %q, %v; want %q, %v", c.data, c.path, got, ok, c.want, c.ok)
		}
	}
}
