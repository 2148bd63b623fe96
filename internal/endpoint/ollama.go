package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// OllamaChat and OllamaGenerate are Ollama's native APIs, /api/chat and
// /api/generate (AIPerf's ollama_chat and ollama_generate). A stream is
// newline-delimited JSON, one object a line: the text in message.content
// (chat) or response (generate), the reasoning of a thinking model in
// message.thinking or thinking; the last line has "done":true, the
// done_reason, and the counts (prompt_eval_count, eval_count). Ollama
// streams unless told not to, so "stream" is always sent, and the output
// length goes in options.num_predict.
type (
	OllamaChat     struct{ ollama }
	OllamaGenerate struct{ ollama }
)

var (
	_ Kind       = OllamaChat{}
	_ Kind       = OllamaGenerate{}
	_ LineFramed = OllamaChat{}
)

type ollama struct{}

func (ollama) LineFramed() {}

// Done is the line with "done":true (its counts are read first: Scan
// decodes it, and the stream ends with the body).
func (ollama) Done([]byte) bool { return false }

func (ollama) Auth(apiKey string) [][2]string { return openAI{}.Auth(apiKey) }

func ollamaBody(fields map[string]any, in Input) ([]byte, error) {
	fields["stream"] = in.Stream
	if in.MaxTokens > 0 {
		fields["options"] = map[string]int{"num_predict": in.MaxTokens}
		in.MaxTokens = 0
	}
	in.Stream, in.Usage = false, false // (stream is set above, whatever it is)
	return marshalBody(fields, in)
}

// Build makes a chat request: the system prompt as a system message.
func (OllamaChat) Build(in Input) ([]byte, error) {
	msgs := []map[string]string{{"role": "user", "content": in.Prompt}}
	if in.System != "" {
		msgs = append([]map[string]string{{"role": "system", "content": in.System}}, msgs...)
	}
	return ollamaBody(map[string]any{"model": in.Model, "messages": msgs}, in)
}

// Build makes a generate request: the system prompt in system.
func (OllamaGenerate) Build(in Input) ([]byte, error) {
	fields := map[string]any{"model": in.Model, "prompt": in.Prompt}
	if in.System != "" {
		fields["system"] = in.System
	}
	return ollamaBody(fields, in)
}

func (OllamaChat) ParseChunk(data []byte) (Chunk, error)        { return parseOllama(data) }
func (OllamaChat) ParseResponse(body []byte) (Response, error)  { return parseOllama(body) }
func (OllamaGenerate) ParseChunk(data []byte) (Chunk, error)    { return parseOllama(data) }
func (OllamaGenerate) ParseResponse(b []byte) (Response, error) { return parseOllama(b) }

var (
	ollamaChatKeys     = [][]byte{[]byte(`"thinking":`), []byte(`"content":`)}
	ollamaGenerateKeys = [][]byte{[]byte(`"thinking":`), []byte(`"response":`)}
)

// Scan reads a line's text without a full decode; the last line (done,
// with the counts) and an error are decoded.
func (OllamaChat) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	return scanOllama(data, buf, ollamaChatKeys)
}

func (OllamaGenerate) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	return scanOllama(data, buf, ollamaGenerateKeys)
}

func scanOllama(data, buf []byte, keys [][]byte) ([]byte, int, *Chunk, error) {
	if bytes.Contains(data, []byte(`"done":true`)) || bytes.Contains(data, []byte(`"done": true`)) {
		c, err := parseOllama(data)
		if err != nil {
			return nil, 0, nil, err
		}
		return []byte(c.Reasoning + c.Content), len(c.Reasoning), &c, nil
	}
	return scan(data, buf, keys, 1, parseOllama)
}

func parseOllama(data []byte) (Chunk, error) {
	var o struct {
		Message *struct {
			Content  string `json:"content"`
			Thinking string `json:"thinking"`
		} `json:"message"`
		Response        string          `json:"response"`
		Thinking        string          `json:"thinking"`
		Done            bool            `json:"done"`
		DoneReason      string          `json:"done_reason"`
		PromptEvalCount int             `json:"prompt_eval_count"`
		EvalCount       int             `json:"eval_count"`
		Error           json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	if hasError(o.Error) {
		c.ServerErr = string(o.Error)
		return c, nil
	}
	c.Content, c.Reasoning = o.Response, o.Thinking
	if o.Message != nil {
		c.Content += o.Message.Content
		c.Reasoning += o.Message.Thinking
	}
	if o.Done {
		c.Finish = o.DoneReason
		if c.Finish == "" {
			c.Finish = "stop"
		}
		c.Usage = &Usage{PromptTokens: o.PromptEvalCount, CompletionTokens: o.EvalCount}
	}
	return c, nil
}
