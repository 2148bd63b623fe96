package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SolidoRAG is a SOLIDO RAG pipeline's prompt API (AIPerf's solido_rag):
// POST /rag/api/prompt with {"query": [the prompt], "filters": {...},
// "inference_model": the model}. Its answer is {"content": the generated
// text, "sources": [the documents retrieved]}; streamed, it is SSE events
// of the same object, each with its piece of content, ended by [DONE] or
// by the body. The filters default to AIPerf's ({"family": "Solido",
// "tool": "SDE"}); --extra-inputs filters:{...} replaces them.
type SolidoRAG struct{ openAI } // ([DONE] and a Bearer key, as OpenAI's)

var (
	_ Kind      = SolidoRAG{}
	_ BodyEnded = SolidoRAG{}
	_ Unbounded = SolidoRAG{}
)

// Unbounded is a Kind whose API takes no output length: --osl is not
// sent (a pipeline that takes one gets it from --extra-inputs).
type Unbounded interface{ Unbounded() }

func (SolidoRAG) Unbounded() {}

// EndsWithBody: a stream may just end (AIPerf reads it to its end).
func (SolidoRAG) EndsWithBody() {}

// Build makes a prompt request: the system prompt, if any, is the first
// query text.
func (SolidoRAG) Build(in Input) ([]byte, error) {
	query := []string{in.Prompt}
	if in.System != "" {
		query = []string{in.System, in.Prompt}
	}
	fields := map[string]any{
		"query":           query,
		"filters":         map[string]string{"family": "Solido", "tool": "SDE"},
		"inference_model": in.Model,
	}
	in.MaxTokens, in.Usage = 0, false // (the API has no length; --extra-inputs can add one)
	return marshalBody(fields, in)
}

type solidoWire struct {
	Content *string         `json:"content"`
	Sources json.RawMessage `json:"sources"`
	Error   json.RawMessage `json:"error"`
	Detail  json.RawMessage `json:"detail"` // (FastAPI's error body)
}

func parseSolido(data []byte) (Chunk, error) {
	var o solidoWire
	if err := json.Unmarshal(data, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	switch {
	case hasError(o.Error):
		c.ServerErr = string(o.Error)
	case o.Content == nil && hasError(o.Detail):
		c.ServerErr = string(o.Detail)
	default:
		c.Content = deref(o.Content)
	}
	return c, nil
}

func (SolidoRAG) ParseChunk(data []byte) (Chunk, error)       { return parseSolido(data) }
func (SolidoRAG) ParseResponse(body []byte) (Response, error) { return parseSolido(body) }

// Scan finds a content event's text without a decode, as Scan does an
// OpenAI chunk's; an event with sources (whose documents have content of
// their own) or an error is decoded whole.
func (SolidoRAG) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	if !bytes.Contains(data, []byte(`"sources"`)) && !bytes.Contains(data, []byte(`"detail"`)) {
		return scan(data, buf, solidoKeys, 0, parseSolido)
	}
	c, err := parseSolido(data)
	if err != nil {
		return nil, 0, nil, err
	}
	if c.ServerErr != "" {
		return nil, 0, &c, nil
	}
	return append(buf[:0], c.Content...), 0, nil, nil
}

var solidoKeys = [][]byte{[]byte(`"content":`)}
