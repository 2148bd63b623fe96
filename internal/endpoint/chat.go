package endpoint

// Chat is the OpenAI /v1/chat/completions codec.
type Chat struct{ openAI }

var _ Kind = Chat{}

// Build makes a single-turn chat request: one user message.
func (Chat) Build(in Input) ([]byte, error) {
	var user any = in.Prompt
	if len(in.Images) > 0 || len(in.Audios) > 0 || len(in.Videos) > 0 {
		// OpenAI's content parts: the text, then each image, then each clip.
		parts := []map[string]any{}
		if in.Prompt != "" {
			parts = append(parts, map[string]any{"type": "text", "text": in.Prompt})
		}
		for _, u := range in.Images {
			parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": u}})
		}
		for _, a := range in.Audios {
			parts = append(parts, map[string]any{"type": "input_audio", "input_audio": map[string]string{"data": a.Data, "format": a.Format}})
		}
		for _, u := range in.Videos {
			parts = append(parts, map[string]any{"type": "video_url", "video_url": map[string]string{"url": u}})
		}
		user = parts
	}
	var msgs []map[string]any
	if in.System != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": in.System})
	}
	if len(in.Messages) > 0 {
		all := make([]any, 0, len(msgs)+len(in.Messages))
		for _, m := range msgs {
			all = append(all, m)
		}
		for _, m := range in.Messages {
			all = append(all, m)
		}
		return marshalBody(map[string]any{"model": in.Model, "messages": all}, in)
	}
	for _, b := range in.Before {
		msgs = append(msgs, map[string]any{"role": "user", "content": b})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": user})
	return marshalBody(map[string]any{"model": in.Model, "messages": msgs}, in)
}

// ParseChunk reads one chat.completion.chunk.
func (Chat) ParseChunk(data []byte) (Chunk, error) { return parseOpenAI(data) }

// ParseResponse reads one chat.completion.
func (Chat) ParseResponse(body []byte) (Response, error) { return parseOpenAI(body) }
