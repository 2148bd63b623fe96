package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Messages is Anthropic's /v1/messages codec (AIPerf's `messages`, also
// `anthropic_messages`). A stream is SSE with an event type on every event
// (message_start, content_block_start, content_block_delta, ping,
// content_block_stop, message_delta, message_stop, error); the text comes in
// content_block_delta events, as text_delta (the answer) or thinking_delta
// (extended thinking: the reasoning). It ends with message_stop, not [DONE].
type Messages struct{}

var _ Kind = Messages{}

// DefaultMaxTokens is the max_tokens a messages request gets when the
// profile sets none: the API requires one, and 1024 is what AIPerf sends.
const DefaultMaxTokens = 1024

// Build makes a messages request: one user message, the system prompt in
// its own field, max_tokens always.
func (Messages) Build(in Input) ([]byte, error) {
	fields := map[string]any{"model": in.Model, "messages": []map[string]string{{"role": "user", "content": in.Prompt}}}
	if in.System != "" {
		fields["system"] = in.System
	}
	if in.MaxTokens <= 0 {
		in.MaxTokens = DefaultMaxTokens
	}
	in.Usage = false // a stream always reports usage; stream_options is OpenAI's
	return marshalBody(fields, in)
}

// ParseChunk reads one streamed event.
func (Messages) ParseChunk(data []byte) (Chunk, error) { return parseMessages(data) }

// ParseResponse reads one whole message.
func (Messages) ParseResponse(body []byte) (Response, error) { return parseMessages(body) }

var messagesKeys = [][]byte{[]byte(`"thinking":`), []byte(`"text":`)}

// Scan reads an event's text without decoding it where it can: a
// content_block_delta's text or thinking (a block's start carries an
// empty one); message_start and message_delta carry usage, and an error
// event an error, so those are decoded.
func (Messages) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	if bytes.Contains(data, []byte(`"stop_reason":"`)) {
		c, err := parseMessages(data)
		if err != nil {
			return nil, 0, nil, err
		}
		return []byte(c.Reasoning + c.Content), len(c.Reasoning), &c, nil
	}
	return scan(data, buf, messagesKeys, 1, parseMessages)
}

// Done is message_stop.
func (Messages) Done(data []byte) bool {
	return bytes.Contains(data, []byte(`"type":"message_stop"`)) || bytes.Contains(data, []byte(`"type": "message_stop"`))
}

// Auth is Anthropic's: the key in x-api-key, with the API version.
func (Messages) Auth(apiKey string) [][2]string {
	return [][2]string{{"x-api-key", apiKey}, {"anthropic-version", "2023-06-01"}}
}

// messagesWire covers the events and the whole message.
type messagesWire struct {
	Type  string          `json:"type"`
	Error json.RawMessage `json:"error"`
	Delta *struct {
		Type       string  `json:"type"`
		Text       *string `json:"text"`
		Thinking   *string `json:"thinking"`
		StopReason *string `json:"stop_reason"`
	} `json:"delta"`
	Message *messagesWire `json:"message"` // message_start's
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"content"`
	StopReason *string `json:"stop_reason"`
	Usage      *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func parseMessages(data []byte) (Chunk, error) {
	var o messagesWire
	if err := json.Unmarshal(data, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	if o.Type == "error" || (hasError(o.Error)) {
		c.ServerErr = string(o.Error)
		if c.ServerErr == "" {
			c.ServerErr = string(data)
		}
		return c, nil
	}
	usage := o.Usage
	if o.Message != nil && usage == nil {
		usage = o.Message.Usage
	}
	if usage != nil {
		c.Usage = &Usage{PromptTokens: usage.InputTokens, CompletionTokens: usage.OutputTokens}
	}
	if d := o.Delta; d != nil {
		c.Reasoning, c.Content = deref(d.Thinking), deref(d.Text)
		if d.StopReason != nil {
			c.Finish = *d.StopReason
		}
	}
	for _, b := range o.Content { // a whole message
		c.Reasoning += b.Thinking
		c.Content += b.Text
	}
	if o.StopReason != nil {
		c.Finish = *o.StopReason
	}
	return c, nil
}
