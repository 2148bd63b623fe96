package endpoint

import (
	"encoding/json"
	"fmt"
)

// Embeddings is OpenAI's /v1/embeddings (AIPerf's embeddings), as vLLM,
// TEI's OpenAI route and OpenAI serve it; NIMEmbeddings is NVIDIA NIM's,
// the same request with the input_type its retrieval models need
// ("query"). One input a request, never streamed: an embedding endpoint
// generates no tokens, so a run reports request latency and throughput
// (inputs/s: one input a request), and the server's prompt count.
//
// ChatEmbeddings is vLLM's chat-style embeddings (AIPerf's
// chat_embeddings): the request a chat's messages, sent to
// /v1/embeddings, as vLLM takes them for multimodal embedding models; the
// answer an embeddings list.
type (
	Embeddings     struct{ embeddings }
	NIMEmbeddings  struct{ embeddings }
	ChatEmbeddings struct{ embeddings }
)

var (
	_ Kind     = Embeddings{}
	_ NonToken = NIMEmbeddings{}
	_ NonToken = ChatEmbeddings{}
)

// NonToken is a Kind whose answers are not generated text (embeddings,
// rankings): a response is good when it holds Items; it cannot stream.
type NonToken interface{ Unit() string }

type embeddings struct{}

func (embeddings) Unit() string { return "inputs" }

func (embeddings) ParseChunk(data []byte) (Chunk, error) {
	return Chunk{}, fmt.Errorf("an embeddings response is not streamed")
}

func (embeddings) ParseResponse(body []byte) (Response, error) {
	var o struct {
		Data []struct {
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage *Usage          `json:"usage"`
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
	c.Usage = o.Usage
	for _, d := range o.Data {
		if len(d.Embedding) > 2 && string(d.Embedding) != "null" { // a vector, or base64
			c.Items++
		}
	}
	return c, nil
}

func (embeddings) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	return nil, 0, nil, fmt.Errorf("an embeddings response is not streamed")
}

func (embeddings) Done([]byte) bool { return false }

func (embeddings) Auth(apiKey string) [][2]string { return openAI{}.Auth(apiKey) }

func embeddingsBody(fields map[string]any, in Input) ([]byte, error) {
	text := in.Prompt
	if in.System != "" {
		text = in.System + " " + text
	}
	fields["model"], fields["input"], fields["encoding_format"] = in.Model, append([]string{text}, in.Batch...), "float"
	in.MaxTokens, in.Stream, in.Usage = 0, false, false
	return marshalBody(fields, in)
}

// Build makes an embeddings request of one input, or of the prompt and
// its Batch.
func (Embeddings) Build(in Input) ([]byte, error) { return embeddingsBody(map[string]any{}, in) }

// Build makes a chat-style embeddings request: the chat's messages, no
// output length and no stream.
func (ChatEmbeddings) Build(in Input) ([]byte, error) {
	in.MaxTokens, in.Stream, in.Usage = 0, false, false
	return Chat{}.Build(in)
}

// Build makes a NIM embeddings request of one query.
func (NIMEmbeddings) Build(in Input) ([]byte, error) {
	return embeddingsBody(map[string]any{"input_type": "query"}, in)
}
