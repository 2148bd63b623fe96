package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// TGIGenerate is Hugging Face Text Generation Inference's native API
// (AIPerf's huggingface_generate): /generate answers whole, and
// /generate_stream streams SSE events, one token each
// ({"token":{"text":…,"special":…},"generated_text":null,…}); the last has
// the whole generated_text (not counted again) and details with the
// finish reason and generated_tokens. The prompt is inputs, the output
// length parameters.max_new_tokens.
type TGIGenerate struct{ openAI }

var _ Kind = TGIGenerate{}

// Build makes a generate request.
func (TGIGenerate) Build(in Input) ([]byte, error) {
	prompt := in.Prompt
	if in.System != "" {
		prompt = in.System + " " + prompt
	}
	params := map[string]any{"details": true}
	if in.MaxTokens > 0 {
		params["max_new_tokens"] = in.MaxTokens
	}
	in.MaxTokens, in.Usage, in.Stream = 0, false, false // the path says whether it streams
	return marshalBody(map[string]any{"inputs": prompt, "parameters": params}, in)
}

type tgiWire struct {
	Token *struct {
		Text    string `json:"text"`
		Special bool   `json:"special"`
	} `json:"token"`
	GeneratedText *string `json:"generated_text"`
	Details       *struct {
		FinishReason    string `json:"finish_reason"`
		GeneratedTokens int    `json:"generated_tokens"`
		Prefill         []any  `json:"prefill"`
	} `json:"details"`
	Error     string `json:"error"`
	ErrorType string `json:"error_type"`
}

func parseTGI(data []byte, whole bool) (Chunk, error) {
	var o tgiWire
	if err := json.Unmarshal(data, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	if o.Error != "" {
		c.ServerErr = o.Error
		return c, nil
	}
	if o.Token != nil && !o.Token.Special {
		c.Content = o.Token.Text
	}
	if whole && o.GeneratedText != nil {
		c.Content = *o.GeneratedText
	}
	if o.Details != nil {
		c.Finish = o.Details.FinishReason
		c.Usage = &Usage{CompletionTokens: o.Details.GeneratedTokens}
	}
	return c, nil
}

// ParseChunk reads one streamed token event.
func (TGIGenerate) ParseChunk(data []byte) (Chunk, error) { return parseTGI(data, false) }

// ParseResponse reads a whole /generate answer (an object, or a list of one).
func (TGIGenerate) ParseResponse(body []byte) (Response, error) {
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil || len(list) == 0 {
			return Chunk{}, fmt.Errorf("malformed JSON: want one answer")
		}
		body = list[0]
	}
	return parseTGI(body, true)
}

// Scan decodes each event: TGI's carry a token object, and the last the
// details, so there is little to gain from a partial read.
func (TGIGenerate) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	c, err := parseTGI(data, false)
	if err != nil {
		return nil, 0, nil, err
	}
	if c.Usage == nil && c.ServerErr == "" && c.Finish == "" {
		return append(buf[:0], c.Content...), 0, nil, nil
	}
	return []byte(c.Content), 0, &c, nil
}

// Done is never an event: the stream ends with its body.
func (TGIGenerate) Done([]byte) bool { return false }

// SGLangGenerate is SGLang's native /generate (AIPerf's sglang_generate):
// the prompt is text, the output length sampling_params.max_new_tokens; a
// stream's events each carry the whole text so far (cumulative, not a
// delta) with meta_info (prompt_tokens, completion_tokens, finish_reason),
// and end with [DONE].
type SGLangGenerate struct{ openAI }

var (
	_ Kind       = SGLangGenerate{}
	_ Cumulative = SGLangGenerate{}
)

// Cumulative is a Kind whose stream events carry the whole text so far:
// the client takes each event's new part.
type Cumulative interface{ Cumulative() }

func (SGLangGenerate) Cumulative() {}

// Build makes a generate request; ignore_eos, where --extra-inputs sets
// it, goes into sampling_params, where SGLang reads it.
func (SGLangGenerate) Build(in Input) ([]byte, error) {
	prompt := in.Prompt
	if in.System != "" {
		prompt = in.System + " " + prompt
	}
	params := map[string]any{}
	if in.MaxTokens > 0 {
		params["max_new_tokens"] = in.MaxTokens
	}
	if v, ok := in.Extra["ignore_eos"]; ok {
		params["ignore_eos"] = v
		extra := make(map[string]json.RawMessage, len(in.Extra))
		for k, x := range in.Extra {
			if k != "ignore_eos" {
				extra[k] = x
			}
		}
		in.Extra = extra
	}
	in.MaxTokens, in.Usage = 0, false
	return marshalBody(map[string]any{"text": prompt, "sampling_params": params}, in)
}

type sglangWire struct {
	Text     *string `json:"text"`
	MetaInfo *struct {
		PromptTokens     int             `json:"prompt_tokens"`
		CompletionTokens int             `json:"completion_tokens"`
		FinishReason     json.RawMessage `json:"finish_reason"`
	} `json:"meta_info"`
	Error json.RawMessage `json:"error"`
}

func parseSGLang(data []byte) (Chunk, error) {
	var o sglangWire
	if err := json.Unmarshal(data, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	if hasError(o.Error) {
		c.ServerErr = string(o.Error)
		return c, nil
	}
	c.Content = deref(o.Text)
	if m := o.MetaInfo; m != nil {
		if m.CompletionTokens > 0 || m.PromptTokens > 0 {
			c.Usage = &Usage{PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens}
		}
		if len(m.FinishReason) > 0 && string(m.FinishReason) != "null" {
			var f struct {
				Type string `json:"type"`
			}
			var plain string
			switch {
			case json.Unmarshal(m.FinishReason, &f) == nil && f.Type != "":
				c.Finish = f.Type
			case json.Unmarshal(m.FinishReason, &plain) == nil:
				c.Finish = plain // (a bare reason is read too)
			default:
				c.Finish = string(m.FinishReason)
			}
		}
	}
	return c, nil
}

func (SGLangGenerate) ParseChunk(data []byte) (Chunk, error)       { return parseSGLang(data) }
func (SGLangGenerate) ParseResponse(body []byte) (Response, error) { return parseSGLang(body) }

// Scan decodes each event (its meta_info carries the counts).
//
// Every event carries the whole text so far, so a full decode of each is
// quadratic in the output: an event whose finish_reason is still null
// (all but the last) has its text found without one, as OpenAI chunks'
// is; the last, with the counts and the finish, is decoded whole.
func (SGLangGenerate) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	if bytes.Contains(data, []byte(`"finish_reason":null`)) && bytes.Contains(data, []byte(`"text":"`)) {
		return scan(data, buf, sglangKeys, 0, parseSGLang)
	}
	c, err := parseSGLang(data)
	if err != nil {
		return nil, 0, nil, err
	}
	return []byte(c.Content), 0, &c, nil
}

var sglangKeys = [][]byte{[]byte(`"text":`)}
