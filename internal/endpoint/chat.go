package endpoint

// Chat is the OpenAI /v1/chat/completions codec.
type Chat struct{}

var _ Kind = Chat{}

// Build makes a single-turn chat request: one user message.
func (Chat) Build(in Input) ([]byte, error) {
	msgs := []map[string]string{{"role": "user", "content": in.Prompt}}
	if in.System != "" {
		msgs = append([]map[string]string{{"role": "system", "content": in.System}}, msgs...)
	}
	return marshalBody(map[string]any{"model": in.Model, "messages": msgs}, in)
}

// ParseChunk reads one chat.completion.chunk.
func (Chat) ParseChunk(data []byte) (Chunk, error) { return parseOpenAI(data) }

// ParseResponse reads one chat.completion.
func (Chat) ParseResponse(body []byte) (Response, error) { return parseOpenAI(body) }
