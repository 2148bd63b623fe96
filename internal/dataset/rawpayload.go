package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// indexRawPayload reads AIPerf's raw_payload file: each line a whole
// request body, sent as it is (no formatting, no --extra-inputs). Its
// ISL is the text of its messages, prompt or the other APIs' prompt
// fields (input, text, inputs, text_input) and the ids of a tokens-in
// token_ids, its max tokens its max_tokens or max_completion_tokens (or
// sampling_params' max_tokens or max_new_tokens); a line that is not a JSON object, or whose
// "stream" disagrees with streaming, is refused with its line.
func indexRawPayload(path string, tok *tokenizer.Tokenizer, streaming bool) (*Index, error) {
	x := &Index{Path: path, tok: orBuiltin(tok), raw: true}
	digest, err := eachLine(path, func(line []byte, n int, off int64, size int) error {
		isl, maxTokens, err := rawMeta(x.tok, line, streaming, fmt.Sprintf("%s:%d", path, n))
		if err != nil {
			return err
		}
		x.Lines = append(x.Lines, LineMeta{Off: off, Len: int32(size), ISL: isl, MaxTokens: maxTokens})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(x.Lines) == 0 {
		return nil, fmt.Errorf("%s: no payloads", path)
	}
	x.Digest = digest
	return x, nil
}

// rawMeta is a raw payload's ISL and max tokens (see indexRawPayload); an
// error names where (file:line).
func rawMeta(tok *tokenizer.Tokenizer, line []byte, streaming bool, where string) (isl, maxTokens int32, err error) {
	var p struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Prompt              json.RawMessage   `json:"prompt"`
		Input               json.RawMessage   `json:"input"`      // the Responses API's
		Text                json.RawMessage   `json:"text"`       // SGLang's
		Inputs              json.RawMessage   `json:"inputs"`     // TGI's
		TextInput           json.RawMessage   `json:"text_input"` // Triton's
		Stream              *bool             `json:"stream"`
		MaxTokens           *int              `json:"max_tokens"`
		MaxCompletionTokens *int              `json:"max_completion_tokens"`
		TokenIDs            []json.RawMessage `json:"token_ids"` // vLLM's tokens-in prompt: its ids are its tokens
		SamplingParams      *struct {
			MaxTokens    *int `json:"max_tokens"`
			MaxNewTokens *int `json:"max_new_tokens"`
		} `json:"sampling_params"`
	}
	if !json.Valid(line) {
		return 0, 0, fmt.Errorf("%s: a raw payload is one JSON object (a request body): not valid JSON", where)
	}
	if err := json.Unmarshal(line, &p); err != nil {
		return 0, 0, fmt.Errorf("%s: a raw payload is one JSON object (a request body): %v", where, err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
		return 0, 0, fmt.Errorf("%s: a raw payload is a JSON object (a request body)", where)
	}
	if p.Stream != nil && *p.Stream != streaming {
		return 0, 0, fmt.Errorf("%s: the payload's \"stream\" is %v and --streaming is %v: a raw payload is sent as it is, so they must agree", where, *p.Stream, streaming)
	}
	n := len(p.TokenIDs)
	for _, raw := range []json.RawMessage{p.Prompt, p.Input, p.Text, p.Inputs, p.TextInput} {
		n += contentTokens(tok, raw)
	}
	for _, msg := range p.Messages {
		n += contentTokens(tok, msg.Content)
	}
	isl = int32(min(n, MaxInputLength))
	lengths := []*int{p.MaxTokens, p.MaxCompletionTokens}
	if sp := p.SamplingParams; sp != nil {
		lengths = append(lengths, sp.MaxTokens, sp.MaxNewTokens)
	}
	for _, mt := range lengths {
		if mt != nil && *mt > 0 {
			maxTokens = int32(min(*mt, MaxInputLength))
		}
	}
	return isl, maxTokens, nil
}

// contentTokens counts a message content's text: a string, or the text
// parts of a list.
func contentTokens(tok *tokenizer.Tokenizer, raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return tok.Count(s)
	}
	var parts []struct {
		Text string `json:"text"`
	}
	n := 0
	if json.Unmarshal(raw, &parts) == nil {
		for _, p := range parts {
			n += tok.Count(p.Text)
		}
	}
	return n
}
