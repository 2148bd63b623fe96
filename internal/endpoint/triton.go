package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// TritonGenerate is Triton Inference Server's generate extension (AIPerf's
// triton_generate), as its TensorRT-LLM and vLLM backends serve it:
// /v2/models/{model}/generate answers whole, /generate_stream streams SSE
// events each with the next text_output. The prompt is text_input, the
// output length max_tokens.
type TritonGenerate struct{ openAI }

var _ Kind = TritonGenerate{}

// Build makes a generate request.
func (TritonGenerate) Build(in Input) ([]byte, error) {
	prompt := in.Prompt
	if in.System != "" {
		prompt = in.System + " " + prompt
	}
	fields := map[string]any{"text_input": prompt}
	if in.Stream {
		fields["stream"] = true // (the path streams; the TensorRT-LLM backend also wants it said)
	}
	in.Stream, in.Usage = false, false
	return marshalBody(fields, in) // max_tokens, when set, as marshalBody writes it
}

type tritonWire struct {
	TextOutput json.RawMessage `json:"text_output"`
	Error      string          `json:"error"`
}

func parseTriton(data []byte) (Chunk, error) {
	var o tritonWire
	if err := json.Unmarshal(data, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	if o.Error != "" {
		return Chunk{ServerErr: o.Error}, nil
	}
	var c Chunk
	if len(o.TextOutput) > 0 {
		var s string
		if err := json.Unmarshal(o.TextOutput, &s); err == nil {
			c.Content = s
		} else {
			var list []string // (a batch of one)
			if err := json.Unmarshal(o.TextOutput, &list); err == nil && len(list) > 0 {
				c.Content = list[0]
			}
		}
	}
	return c, nil
}

func (TritonGenerate) ParseChunk(data []byte) (Chunk, error)       { return parseTriton(data) }
func (TritonGenerate) ParseResponse(body []byte) (Response, error) { return parseTriton(body) }

// Scan decodes each event.
var tritonKeys = [][]byte{[]byte(`"text_output":`)}

func (TritonGenerate) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	if bytes.Contains(data, []byte(`"text_output":"`)) && !bytes.Contains(data, []byte(`"error"`)) {
		return scan(data, buf, tritonKeys, 0, parseTriton) // (a string's text without a decode; a batch's list is decoded)
	}
	c, err := parseTriton(data)
	if err != nil {
		return nil, 0, nil, err
	}
	if c.ServerErr != "" {
		return nil, 0, &c, nil
	}
	return append(buf[:0], c.Content...), 0, nil, nil
}

// Done is never an event: the stream ends with its body.
func (TritonGenerate) Done([]byte) bool { return false }

// EndsWithBody: Triton's events carry no finish, so a body that ends
// cleanly (its chunked end) is a whole stream; one cut mid-event is not.
func (TritonGenerate) EndsWithBody() {}

// BodyEnded is a Kind whose streams say nothing at their end: the clean
// end of the body is the stream's.
type BodyEnded interface{ EndsWithBody() }

// KServe is the KServe v2 (Open Inference Protocol) infer API of Triton
// and KServe (AIPerf's kserve): /v2/models/{model}/infer with the prompt
// as a BYTES tensor named text_input and max_tokens as another; the answer
// is the text_output tensor. It does not stream.
type KServe struct{ openAI }

var _ Kind = KServe{}

// Build makes an infer request of one prompt.
func (KServe) Build(in Input) ([]byte, error) {
	prompt := in.Prompt
	if in.System != "" {
		prompt = in.System + " " + prompt
	}
	inputs := []map[string]any{{"name": "text_input", "datatype": "BYTES", "shape": []int{1, 1}, "data": []string{prompt}}}
	if in.MaxTokens > 0 {
		inputs = append(inputs, map[string]any{"name": "max_tokens", "datatype": "INT32", "shape": []int{1, 1}, "data": []int{in.MaxTokens}})
	}
	in.MaxTokens, in.Stream, in.Usage = 0, false, false
	return marshalBody(map[string]any{"inputs": inputs}, in)
}

func (KServe) ParseChunk([]byte) (Chunk, error) {
	return Chunk{}, fmt.Errorf("a KServe v2 infer answer is not streamed")
}

// ParseResponse takes the text_output tensor (or the only output).
func (KServe) ParseResponse(body []byte) (Response, error) {
	var o struct {
		Outputs []struct {
			Name string            `json:"name"`
			Data []json.RawMessage `json:"data"`
		} `json:"outputs"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	if o.Error != "" {
		return Chunk{ServerErr: o.Error}, nil
	}
	var c Chunk
	for _, out := range o.Outputs {
		if (out.Name == "text_output" || len(o.Outputs) == 1) && len(out.Data) > 0 {
			var s string
			if json.Unmarshal(out.Data[0], &s) == nil {
				c.Content = s
			}
		}
	}
	return c, nil
}

func (KServe) Scan([]byte, []byte) ([]byte, int, *Chunk, error) {
	return nil, 0, nil, fmt.Errorf("a KServe v2 infer answer is not streamed")
}

func (KServe) Done([]byte) bool { return false }

// Whole reports the types that never stream.
func (KServe) Whole() {}

// WholeOnly is a Kind whose API answers whole, never streamed.
type WholeOnly interface{ Whole() }
