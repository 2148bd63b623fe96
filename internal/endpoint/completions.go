package endpoint

// Completions is the OpenAI /v1/completions codec.
type Completions struct{ openAI }

var _ Kind = Completions{}

// Build makes a completions request with the prompt as one string.
func (Completions) Build(in Input) ([]byte, error) {
	prompt := in.Prompt
	if in.System != "" {
		prompt = in.System + " " + prompt
	}
	return marshalBody(map[string]any{"model": in.Model, "prompt": prompt}, in)
}

// ParseChunk reads one streamed text_completion object.
func (Completions) ParseChunk(data []byte) (Chunk, error) { return parseOpenAI(data) }

// ParseResponse reads one text_completion object.
func (Completions) ParseResponse(body []byte) (Response, error) { return parseOpenAI(body) }
