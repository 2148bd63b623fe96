package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The rankings (reranker) APIs: a query and the passages to rank against
// it, answered with a score for each, never streamed. NIMRankings is
// NVIDIA NIM's /v1/ranking ({"query": {"text"}, "passages": [{"text"}]},
// answered {"rankings": [{"index", "logit"}]}); CohereRankings is
// Cohere's /v2/rerank ({"query", "documents"}, answered {"results":
// [{"index", "relevance_score"}]}), which vLLM serves too; TEIRankings is
// Hugging Face TEI's /rerank ({"query", "texts"}, answered with a bare
// list of {"index", "score"}). A rankings request generates no tokens: a
// run reports its latency, queries/s (requests) and passages/s (the
// item throughput), and an answer is good when it ranks a passage.
type (
	NIMRankings    struct{ rankings }
	CohereRankings struct{ rankings }
	TEIRankings    struct{ rankings }
)

var (
	_ NonToken = NIMRankings{}
	_ NonToken = CohereRankings{}
	_ NonToken = TEIRankings{}
	_ Ranking  = TEIRankings{}
)

// Ranking is a Kind that sends a query and passages (Input.Query and
// Input.Passages) rather than one prompt.
type Ranking interface{ Ranking() }

// whole is a kind whose answers are never streamed, with OpenAI's auth.
type whole struct{}

func (whole) ParseChunk([]byte) (Chunk, error) {
	return Chunk{}, fmt.Errorf("this endpoint type's responses are not streamed")
}

func (whole) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	return nil, 0, nil, fmt.Errorf("this endpoint type's responses are not streamed")
}

func (whole) Done([]byte) bool { return false }

func (whole) Auth(apiKey string) [][2]string { return openAI{}.Auth(apiKey) }

type rankings struct{ whole }

func (rankings) Ranking()     {}
func (rankings) Unit() string { return "passages" }

// query is the request's query: Query, or the prompt (after its system
// text) when it has none.
func query(in Input) string {
	if in.Query != "" {
		return in.Query
	}
	if in.System != "" {
		return in.System + " " + in.Prompt
	}
	return in.Prompt
}

func rankingsBody(fields map[string]any, in Input) ([]byte, error) {
	in.MaxTokens, in.Stream, in.Usage = 0, false, false
	return marshalBody(fields, in)
}

// Build makes a NIM rankings request.
func (NIMRankings) Build(in Input) ([]byte, error) {
	ps := make([]map[string]string, len(in.Passages))
	for i, p := range in.Passages {
		ps[i] = map[string]string{"text": p}
	}
	return rankingsBody(map[string]any{"model": in.Model, "query": map[string]string{"text": query(in)}, "passages": ps}, in)
}

// Build makes a Cohere rerank request.
func (CohereRankings) Build(in Input) ([]byte, error) {
	return rankingsBody(map[string]any{"model": in.Model, "query": query(in), "documents": nonNil(in.Passages)}, in)
}

// Build makes a TEI rerank request (TEI serves one model: none is named).
func (TEIRankings) Build(in Input) ([]byte, error) {
	return rankingsBody(map[string]any{"query": query(in), "texts": nonNil(in.Passages)}, in)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// scored counts the items of a ranking list that carry an index.
func scored(items rankItems) int {
	n := 0
	for _, it := range items {
		if it.Index != nil {
			n++
		}
	}
	return n
}

// rankItems is a ranking list: each item an index (and a score).
type rankItems = []struct {
	Index *int `json:"index"`
}

// ParseResponse reads a NIM rankings answer.
func (NIMRankings) ParseResponse(body []byte) (Response, error) {
	var o struct {
		Rankings rankItems       `json:"rankings"`
		Error    json.RawMessage `json:"error"`
		Detail   json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	return rankingsAnswer(o.Rankings, o.Error, o.Detail), nil
}

// ParseResponse reads a Cohere rerank answer.
func (CohereRankings) ParseResponse(body []byte) (Response, error) {
	var o struct {
		Results rankItems       `json:"results"`
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"` // Cohere's errors
		Detail  json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	if o.Results == nil && hasError(o.Message) {
		o.Error = o.Message
	}
	return rankingsAnswer(o.Results, o.Error, o.Detail), nil
}

// ParseResponse reads a TEI rerank answer: a bare list, or an object with
// "results" (or TEI's {"error", "error_type"}).
func (TEIRankings) ParseResponse(body []byte) (Response, error) {
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		var items rankItems
		if err := json.Unmarshal(b, &items); err != nil {
			return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
		}
		return rankingsAnswer(items, nil, nil), nil
	}
	var o struct {
		Results rankItems       `json:"results"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	return rankingsAnswer(o.Results, o.Error, nil), nil
}

func rankingsAnswer(items rankItems, errObj, detail json.RawMessage) Chunk {
	var c Chunk
	switch {
	case hasError(errObj):
		c.ServerErr = string(errObj)
	case items == nil && hasError(detail): // (FastAPI's validation errors)
		c.ServerErr = string(detail)
	default:
		c.Items = scored(items)
	}
	return c
}

// ImageRetrieval is NVIDIA NIM's image retrieval API (AIPerf's
// image_retrieval: object detection, page elements and the like):
// {"input": [{"type": "image_url", "url": ...}]} to /v1/infer, answered
// {"data": [...]}, an item an image; never streamed, no tokens.
type ImageRetrieval struct{ whole }

var _ NonToken = ImageRetrieval{}

// Unit is what a request counts.
func (ImageRetrieval) Unit() string { return "images" }

// Build makes an image retrieval request of the input's images.
func (ImageRetrieval) Build(in Input) ([]byte, error) {
	if len(in.Images) == 0 {
		return nil, fmt.Errorf("an image_retrieval request needs an image (--image-width-mean and --image-height-mean, or an input file's \"image\")")
	}
	items := make([]map[string]string, len(in.Images))
	for i, u := range in.Images {
		items[i] = map[string]string{"type": "image_url", "url": u}
	}
	in.MaxTokens, in.Stream, in.Usage = 0, false, false
	return marshalBody(map[string]any{"input": items}, in)
}

// ParseResponse reads an image retrieval answer.
func (ImageRetrieval) ParseResponse(body []byte) (Response, error) {
	var o struct {
		Data []json.RawMessage `json:"data"`
		errFields
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	if e := o.failed(o.Data != nil); e != "" {
		return Chunk{ServerErr: e}, nil
	}
	return Chunk{Items: len(o.Data)}, nil
}

// errFields are where a non-token API's error sits: "error", or
// FastAPI's validation "detail" (vLLM, SGLang, NIM).
type errFields struct {
	Error  json.RawMessage `json:"error"`
	Detail json.RawMessage `json:"detail"`
}

// failed is the server's error, or "": a "detail" only counts when the
// answer has nothing else (answered false).
func (e errFields) failed(answered bool) string {
	switch {
	case hasError(e.Error):
		return string(e.Error)
	case !answered && hasError(e.Detail):
		return string(e.Detail)
	}
	return ""
}
