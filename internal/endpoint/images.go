package endpoint

import (
	"encoding/json"
	"fmt"
)

// ImageGeneration is OpenAI's /v1/images/generations (AIPerf's
// image_generation), as OpenAI and the servers that copy it (vLLM-Omni,
// SGLang diffusion, NIM) answer: the prompt, one image, base64 back. It
// generates no tokens, so a run reports request latency and throughput
// (images/s: one image a request).
type ImageGeneration struct{ embeddings }

var _ NonToken = ImageGeneration{}

func (ImageGeneration) Unit() string { return "images" }

// Build makes a request for one image.
func (ImageGeneration) Build(in Input) ([]byte, error) {
	prompt := in.Prompt
	if in.System != "" {
		prompt = in.System + " " + prompt
	}
	in.MaxTokens, in.Stream, in.Usage = 0, false, false
	return marshalBody(map[string]any{"model": in.Model, "prompt": prompt, "n": 1, "response_format": "b64_json"}, in)
}

// ParseResponse counts the images (base64 or a URL).
func (ImageGeneration) ParseResponse(body []byte) (Response, error) {
	var o struct {
		Data []struct {
			B64 string `json:"b64_json"`
			URL string `json:"url"`
		} `json:"data"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	if hasError(o.Error) {
		c.ServerErr = string(o.Error)
		return c, nil
	}
	for _, d := range o.Data {
		if d.B64 != "" || d.URL != "" {
			c.Items++
		}
	}
	return c, nil
}
