package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Responses is OpenAI's Responses API (/v1/responses), as OpenAI and vLLM
// serve it. A stream is SSE of typed events (response.created, …,
// response.output_text.delta, …, response.completed): the answer's text is
// the delta of response.output_text.delta events, reasoning the delta of
// response.reasoning_text.delta (vLLM's) and
// response.reasoning_summary_text.delta (OpenAI's summaries), and the usage
// comes in response.completed, whose response repeats the whole output
// (not counted again). There is no [DONE]: the stream ends after
// response.completed, or response.incomplete (cut by max_output_tokens);
// response.failed and error events are the server's errors.
type Responses struct{}

var _ Kind = Responses{}

// Build makes a responses request: the prompt as the input, the system
// prompt as instructions, max_output_tokens.
func (Responses) Build(in Input) ([]byte, error) {
	var input any = in.Prompt
	if len(in.Images) > 0 || len(in.Audios) > 0 {
		// The Responses API's input parts, as AIPerf sends them: the
		// text, then each image (a URL or data URL), then each clip.
		parts := []map[string]any{}
		if in.Prompt != "" {
			parts = append(parts, map[string]any{"type": "input_text", "text": in.Prompt})
		}
		for _, u := range in.Images {
			parts = append(parts, map[string]any{"type": "input_image", "image_url": u})
		}
		for _, a := range in.Audios {
			parts = append(parts, map[string]any{"type": "input_audio", "input_audio": map[string]string{"data": a.Data, "format": a.Format}})
		}
		input = []map[string]any{{"role": "user", "content": parts}}
	}
	fields := map[string]any{"model": in.Model, "input": input}
	if in.System != "" {
		fields["instructions"] = in.System
	}
	if in.MaxTokens > 0 {
		fields["max_output_tokens"] = in.MaxTokens
		in.MaxTokens = 0
	}
	in.Usage = false // response.completed always carries usage
	return marshalBody(fields, in)
}

// ParseChunk reads one streamed event.
func (Responses) ParseChunk(data []byte) (Chunk, error) { return parseResponsesEvent(data) }

// ParseResponse reads one whole response object.
func (Responses) ParseResponse(body []byte) (Response, error) {
	var o responsesObject
	if err := json.Unmarshal(body, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	return o.chunk(true), nil
}

// Scan takes a text delta's string without a full decode; the events that
// end a response, or report an error, are decoded.
func (Responses) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	switch {
	case bytes.Contains(data, []byte(`"response.output_text.delta"`)):
		return scan(data, buf, responsesDelta, 0, parseResponsesEvent)
	case bytes.Contains(data, []byte(`"response.reasoning_text.delta"`)), bytes.Contains(data, []byte(`"response.reasoning_summary_text.delta"`)):
		out, _, full, err := scan(data, buf, responsesDelta, 0, parseResponsesEvent)
		return out, len(out), full, err
	case bytes.Contains(data, []byte(`"response.completed"`)), bytes.Contains(data, []byte(`"response.failed"`)),
		bytes.Contains(data, []byte(`"response.incomplete"`)), bytes.Contains(data, []byte(`"error"`)):
		c, err := parseResponsesEvent(data)
		if err != nil {
			return nil, 0, nil, err
		}
		return nil, 0, &c, nil
	}
	if !wellFormed(data) {
		_, err := parseResponsesEvent(data)
		if err == nil {
			err = fmt.Errorf("not a JSON object")
		}
		return nil, 0, nil, err
	}
	return nil, 0, nil, nil // created, in_progress, output_item.added, …: nothing to take
}

var responsesDelta = [][]byte{[]byte(`"delta":`)}

// Done is never an event: the stream ends with its body, after
// response.completed, whose usage is read first.
func (Responses) Done([]byte) bool { return false }

// Auth is a bearer token.
func (Responses) Auth(apiKey string) [][2]string { return openAI{}.Auth(apiKey) }

type responsesObject struct {
	Status string `json:"status"`
	Output []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Summary []struct {
			Text string `json:"text"`
		} `json:"summary"`
	} `json:"output"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// chunk is what a response object says: its usage, its status as a
// finish, an error; with text, its output too (a whole response, not the
// copy in response.completed).
func (o *responsesObject) chunk(text bool) Chunk {
	var c Chunk
	if hasError(o.Error) {
		c.ServerErr = string(o.Error)
	}
	if o.Usage != nil {
		c.Usage = &Usage{PromptTokens: o.Usage.InputTokens, CompletionTokens: o.Usage.OutputTokens}
	}
	c.Finish = o.Status
	if text {
		for _, item := range o.Output {
			for _, p := range item.Content {
				switch {
				case item.Type == "reasoning":
					c.Reasoning += p.Text
				case p.Type == "output_text":
					c.Content += p.Text
				}
			}
			if item.Type == "reasoning" && len(item.Content) == 0 {
				for _, s := range item.Summary {
					c.Reasoning += s.Text
				}
			}
		}
	}
	return c
}

func parseResponsesEvent(data []byte) (Chunk, error) {
	var ev struct {
		Type     string           `json:"type"`
		Delta    *string          `json:"delta"`
		Response *responsesObject `json:"response"`
		Message  string           `json:"message"` // an error event's
		Code     json.RawMessage  `json:"code"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	switch ev.Type {
	case "response.output_text.delta":
		c.Content = deref(ev.Delta)
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		c.Reasoning = deref(ev.Delta)
	case "error":
		c.ServerErr = string(data)
	case "response.completed", "response.failed", "response.incomplete":
		if ev.Response != nil {
			c = ev.Response.chunk(false)
		}
		if ev.Type == "response.failed" && c.ServerErr == "" {
			c.ServerErr = string(data)
		}
		// (incomplete is a response cut by max_output_tokens: a finish.)
	}
	return c, nil
}
