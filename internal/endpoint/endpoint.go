// Package endpoint knows the wire format of each endpoint type: how to build
// a request body and how to read a response or one streamed chunk.
//
// One file per endpoint type. Builders run once, in the controller, when the
// plan is made; parsers run on the worker's hot path and extract only what a
// metric needs (content text, usage, an error object).
package endpoint

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Input is what a request body is built from.
type Input struct {
	Model     string
	Prompt    string
	System    string // a system prompt before it (chat: a system message; completions: the prompt's start)
	MaxTokens int    // 0: unset
	Stream    bool
	Usage     bool                       // ask a stream for a usage chunk (stream_options.include_usage)
	Extra     map[string]json.RawMessage // --extra-inputs, merged last
	// A rankings request's query (Prompt when empty) and the passages it
	// ranks.
	Query    string
	Passages []string
	// Batch is more text inputs after Prompt, for a kind that takes a
	// list of them (embeddings: AIPerf's --prompt-batch-size).
	Batch []string
	// Before is user messages sent before Prompt's (a dag_jsonl turn of
	// several; chat only).
	Before []string
	// Messages are a turn's messages as its file wrote them, sent as they
	// are in place of the user's (chat only).
	Messages []json.RawMessage
	// Images go with the prompt (chat: image_url content parts), each a
	// URL (http, https or a data URL); so do Audios (input_audio parts).
	Images []string
	Audios []AudioClip
	Videos []string // (chat: video_url parts)
	// TokenIDs are the prompt's ids by the profile's tokenizer, the system
	// prompt's first, for a TokenIn kind (vllm_generate).
	TokenIDs []int
}

// An AudioClip is base64 audio and its format ("wav", "mp3").
type AudioClip struct{ Data, Format string }

// Usage is the OpenAI usage object.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Chunk is what one streamed event carries.
type Chunk struct {
	Content   string // generated answer text in this chunk
	Reasoning string // generated reasoning text (reasoning_content or reasoning), before the answer
	Usage     *Usage
	Finish    string // finish_reason, when the chunk has one
	ServerErr string // an error object the server put in the stream
	Items     int    // a non-token answer's items (embeddings)
}

// Response is a whole non-streaming response.
type Response = Chunk

// Kind is one endpoint type's codec.
type Kind interface {
	Build(in Input) ([]byte, error)
	ParseChunk(data []byte) (Chunk, error)
	ParseResponse(body []byte) (Response, error)
	// Scan is the hot path's reading of one streamed event: its generated
	// text, reasoning first (content[:reasoning]), without a full decode
	// where it can; full is the decoded event where one was needed (usage,
	// an error, a finish). The returned slice may alias data or buf.
	Scan(data, buf []byte) (content []byte, reasoning int, full *Chunk, err error)
	// Done reports the event that ends a stream ([DONE], message_stop).
	Done(data []byte) bool
	// Auth is the headers that carry an API key.
	Auth(apiKey string) [][2]string
}

// LineFramed is a Kind whose streams are newline-delimited JSON (Ollama's)
// rather than SSE.
type LineFramed interface{ LineFramed() }

// Streamed reports whether a response with Content-Type ct is k's stream:
// text/event-stream, or for a line-framed kind application/x-ndjson (or
// application/json, which some servers say of their lines).
func Streamed(k Kind, ct string) bool {
	if _, ok := k.(LineFramed); ok {
		return strings.HasPrefix(ct, "application/x-ndjson") || strings.HasPrefix(ct, "application/json")
	}
	return strings.HasPrefix(ct, "text/event-stream")
}

// Endpoint type names, AIPerf's.
const (
	TypeChat        = "chat"
	TypeCompletions = "completions"
	TypeMessages    = "messages"
	TypeResponses   = "responses"
	TypeOllamaChat  = "ollama_chat"
	TypeOllamaGen   = "ollama_generate"
	TypeEmbeddings  = "embeddings"
	TypeNIMEmbed    = "nim_embeddings"
	TypeChatEmbed   = "chat_embeddings"
	TypeTGI         = "huggingface_generate"
	TypeSGLang      = "sglang_generate"
	TypeTemplate    = "template"
	TypeRaw         = "raw"
	TypeTriton      = "triton_generate"
	TypeKServe      = "kserve"
	TypeImageGen    = "image_generation"
	TypeNIMRank     = "nim_rankings"
	TypeCohereRank  = "cohere_rankings"
	TypeTEIRank     = "hf_tei_rankings"
	TypeImageRetr   = "image_retrieval"
	TypeAudioTrans  = "audio_transcription"
	TypeImageEdit   = "image_edit"
	TypeVideoGen    = "video_generation"
	TypeSolido      = "solido_rag"
	TypeVLLMGen     = "vllm_generate"
)

// A Type is one endpoint type: its name (AIPerf's), the names it is also
// known by, the path its API has, and its codec.
// (A path's {model} is the profile's model, escaped.)
type Type struct {
	Name       string
	Aliases    []string
	Path       string
	StreamPath string // where streaming requests go, when the API has its own path for them
	Kind       Kind
	Traits     Traits // TraitsOf(Kind), set once (the template type's: TraitsOf of Make's Kind)
}

func init() {
	for i := range Types {
		if Types[i].Kind != nil {
			Types[i].Traits = TraitsOf(Types[i].Kind)
		}
	}
}

// Types are the endpoint types, in --help's order.
var Types = []Type{
	{Name: TypeChat, Path: "/v1/chat/completions", Kind: Chat{}},
	{Name: TypeCompletions, Path: "/v1/completions", Kind: Completions{}},
	{Name: TypeResponses, Path: "/v1/responses", Kind: Responses{}},
	{Name: TypeMessages, Aliases: []string{"anthropic_messages"}, Path: "/v1/messages", Kind: Messages{}},
	{Name: TypeOllamaChat, Path: "/api/chat", Kind: OllamaChat{}},
	{Name: TypeOllamaGen, Path: "/api/generate", Kind: OllamaGenerate{}},
	{Name: TypeEmbeddings, Path: "/v1/embeddings", Kind: Embeddings{}},
	{Name: TypeNIMEmbed, Path: "/v1/embeddings", Kind: NIMEmbeddings{}},
	{Name: TypeChatEmbed, Path: "/v1/embeddings", Kind: ChatEmbeddings{}},
	{Name: TypeImageGen, Path: "/v1/images/generations", Kind: ImageGeneration{}},
	{Name: TypeImageEdit, Path: "/v1/images/edits", Kind: ImageEdit{}},
	{Name: TypeVideoGen, Path: "/v1/videos", Kind: VideoGeneration{}},
	{Name: TypeNIMRank, Path: "/v1/ranking", Kind: NIMRankings{}},
	{Name: TypeCohereRank, Path: "/v2/rerank", Kind: CohereRankings{}},
	{Name: TypeTEIRank, Path: "/rerank", Kind: TEIRankings{}},
	{Name: TypeImageRetr, Path: "/v1/infer", Kind: ImageRetrieval{}},
	{Name: TypeAudioTrans, Aliases: []string{"audio_transcriptions"}, Path: "/v1/audio/transcriptions", Kind: AudioTranscription{}},
	{Name: TypeTGI, Path: "/generate", StreamPath: "/generate_stream", Kind: TGIGenerate{}},
	{Name: TypeSGLang, Path: "/generate", Kind: SGLangGenerate{}},
	{Name: TypeTriton, Path: "/v2/models/{model}/generate", StreamPath: "/v2/models/{model}/generate_stream", Kind: TritonGenerate{}},
	{Name: TypeKServe, Path: "/v2/models/{model}/infer", Kind: KServe{}},
	{Name: TypeVLLMGen, Path: "/inference/v1/generate", Kind: VLLMGenerate{}},
	{Name: TypeSolido, Path: "/rag/api/prompt", Kind: SolidoRAG{}},
	{Name: TypeTemplate, Kind: nil}, // its codec is made from the profile (Make); its path is --endpoint
	{Name: TypeRaw, Kind: Raw{}},    // (--response-field, when given, is made in by Make); its path is none: the URL as given
}

// Lookup finds an endpoint type by its name or an alias.
func Lookup(name string) (Type, error) {
	var names []string
	for _, t := range Types {
		if t.Name == name {
			return t, nil
		}
		for _, a := range t.Aliases {
			if a == name {
				return t, nil
			}
		}
		names = append(names, t.Name)
	}
	return Type{}, fmt.Errorf("unknown endpoint type %q (known: %s)", name, strings.Join(names, ", "))
}

// For returns the codec for an endpoint type (the template type's needs
// Make).
func For(endpointType string) (Kind, error) {
	t, err := Lookup(endpointType)
	if err != nil {
		return nil, err
	}
	if t.Kind == nil {
		return nil, fmt.Errorf("endpoint type %s is made from a request template and a response field (Make)", t.Name)
	}
	return t.Kind, nil
}

// openAI is what the OpenAI-style kinds share: the fast scanner, [DONE] and
// a bearer token.
type openAI struct{}

func (openAI) Scan(data, buf []byte) ([]byte, int, *Chunk, error) { return Scan(data, buf) }

func (openAI) Done(data []byte) bool { return len(data) == 6 && string(data) == "[DONE]" }

func (openAI) Auth(apiKey string) [][2]string {
	return [][2]string{{"Authorization", "Bearer " + apiKey}}
}

// marshalBody marshals fields plus extra (extra wins) with sorted keys, so
// the same input always gives the same bytes.
func marshalBody(fields map[string]any, in Input) ([]byte, error) {
	m := make(map[string]json.RawMessage, len(fields)+len(in.Extra)+3)
	for k, v := range fields {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		m[k] = b
	}
	if in.MaxTokens > 0 {
		m["max_tokens"] = json.RawMessage(fmt.Sprint(in.MaxTokens))
	}
	if in.Stream {
		m["stream"] = json.RawMessage("true")
		if in.Usage {
			m["stream_options"] = json.RawMessage(`{"include_usage":true}`)
		}
	}
	extra := make(map[string]bool, len(in.Extra))
	for k, v := range in.Extra {
		m[k] = v
		extra[k] = true
	}
	// The bytes json.Marshal(m) makes, without its second pass over every
	// value (it compacts each RawMessage again: 45% of a 2,048-token
	// body's cost): keys sorted, the values json.Marshal made written as
	// they are, and only --extra-inputs' own JSON put through Marshal.
	keys := make([]string, 0, len(m))
	size := 2
	for k, v := range m {
		keys = append(keys, k)
		size += len(k) + len(v) + 4
	}
	sort.Strings(keys)
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		out = append(append(out, kb...), ':')
		v := m[k]
		if extra[k] {
			if v, err = json.Marshal(v); err != nil {
				return nil, err
			}
		}
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// wireChoice covers the fields both OpenAI shapes use in a choice.
type wireChoice struct {
	Delta        *wireMessage `json:"delta"`
	Message      *wireMessage `json:"message"`
	Text         *string      `json:"text"`
	FinishReason *string      `json:"finish_reason"`
}

// wireMessage is a delta or a message: the answer, and the reasoning as
// DeepSeek and vLLM's reasoning parsers send it (reasoning_content), or as
// newer vLLM and OpenRouter do (reasoning).
type wireMessage struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"`
}

type wireObject struct {
	Choices []wireChoice    `json:"choices"`
	Usage   *Usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// parseOpenAI reads a chat or completions object (chunk or whole).
func parseOpenAI(data []byte) (Chunk, error) {
	var o wireObject
	if err := json.Unmarshal(data, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	c.Usage = o.Usage
	if hasError(o.Error) {
		c.ServerErr = string(o.Error)
	}
	for _, ch := range o.Choices {
		for _, m := range []*wireMessage{ch.Delta, ch.Message} {
			if m != nil {
				c.Reasoning += deref(m.ReasoningContent) + deref(m.Reasoning)
				c.Content += deref(m.Content)
			}
		}
		c.Content += deref(ch.Text)
		if ch.FinishReason != nil {
			c.Finish = *ch.FinishReason
		}
	}
	return c, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// hasError reports an error object a server put in its answer (absent and
// null are none).
func hasError(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
