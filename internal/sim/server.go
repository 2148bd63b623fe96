// Package sim is the inference simulator behind `aiperf-action serve`.
//
// It is a simulation, not a model: it speaks the OpenAI API byte-for-byte in
// the shape real servers stream it, and in exact mode every token is due on
// an absolute schedule from the request's arrival:
//
//	token k is written at  arrival + TTFT + k·ITL      (k = 0, 1, ...)
//
// never after a chain of sleeps, so lateness does not accumulate. What the
// server actually did (when each chunk was flushed) is kept per request as
// its Truth, readable at GET /sim/truth and through Server.Truths, so tests
// and `calibrate` can compare the client's measurements with the server's.
package sim

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/sim/pace"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"

	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
)

// Config is the simulator's behaviour.
type Config struct {
	Model      string        // the name /v1/models lists; requests may name any model
	TTFT       time.Duration // time to first token, from arrival
	ITL        time.Duration // time between tokens
	MinLen     int           // natural output length range, used without max_tokens+ignore_eos
	MaxLen     int
	TruthLimit int // truths kept (oldest dropped)
	// CloseAfterStream reproduces llama-server's keep-alive quirk: after a
	// streamed response the connection looks reusable, but the next
	// request on it is read and answered by a close.
	CloseAfterStream bool
	// ReasoningTokens: in chat, the first this many tokens of an answer
	// are reasoning (reasoning_content), as a reasoning model's are.
	ReasoningTokens int
	// Mode is "exact" (the default: every token on TTFT + k·ITL) or
	// "engine": every token when the engine model (Engine) produces it.
	Mode   string
	Engine engine.Config
	Faults Faults
	// SpeedJitter is the relative spread of a per-process speed factor,
	// drawn once from SpeedSeed: every step (engine mode) or TTFT and ITL
	// (exact mode) is scaled by it, so the runs of one process share one
	// slowdown, the way a CI machine's do.
	SpeedJitter float64
	SpeedSeed   uint64
}

// EngineConfig is DefaultConfig in engine mode with the named preset
// (engine.DefaultPreset for ""), its jitter seeded with 1.
func EngineConfig(preset string) (Config, error) {
	if preset == "" {
		preset = engine.DefaultPreset
	}
	p, err := engine.PresetNamed(preset)
	if err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig
	cfg.Mode, cfg.Engine = "engine", p.Config
	cfg.Engine.Seed = 1
	return cfg, nil
}

// DefaultConfig is exact mode with modest timings.
var DefaultConfig = Config{Model: "aiperf-sim", TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond, MinLen: 16, MaxLen: 256, TruthLimit: 200000}

// Truth is the server-side record of one request, in nanoseconds.
type Truth struct {
	ID         string  `json:"id"` // the X-Request-ID header, when sent
	Endpoint   string  `json:"endpoint"`
	Streaming  bool    `json:"streaming"`
	ArrivalNs  int64   `json:"arrival_unix_ns"` // the kernel's receive time of the request (through Listener), else the handler's start
	FirstToken int64   `json:"first_token_ns"`  // first content flushed, since arrival
	Gaps       []int64 `json:"chunk_gaps_ns"`   // between consecutive content flushes
	ISL        int     `json:"isl"`
	OSL        int     `json:"osl"`
	Aborted    bool    `json:"aborted,omitempty"` // the client went away first
}

// chunk records that content chunk k went out at now (the previous one at
// last).
func (t *Truth) chunk(k int, arrival, last, now time.Time) {
	if k == 0 {
		t.FirstToken = int64(now.Sub(arrival))
	} else {
		t.Gaps = append(t.Gaps, int64(now.Sub(last)))
	}
}

// Server is the simulator.
type Server struct {
	cfg     Config
	created int64
	// /v1/videos jobs, by id.
	videoMu   sync.Mutex
	videoN    int
	videoJobs map[string]*videoJob
	mu        sync.Mutex
	truths    []Truth
	dropped   int
	mux       *http.ServeMux
	metrics   simMetrics

	pace   *pace.Pacer     // one for all streams: see pace
	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	connMu sync.Mutex
	conns  map[net.Conn]struct{} // taken over from net/http

	engine *engineRun // engine mode
	speed  float64    // the process's speed factor (1: none)

	rx        sync.Map // remote address → *rxtime.Conn (see Listener)
	rxOnce    sync.Once
	rxRelease func()
}

// New returns a simulator with cfg.
func New(cfg Config) *Server {
	if cfg.MaxLen < cfg.MinLen || cfg.MinLen < 1 {
		cfg.MinLen, cfg.MaxLen = DefaultConfig.MinLen, DefaultConfig.MaxLen
	}
	if cfg.TruthLimit <= 0 {
		cfg.TruthLimit = DefaultConfig.TruthLimit
	}
	if cfg.Model == "" {
		cfg.Model = DefaultConfig.Model
	}
	// The tokenizer counts prompts and gives the words of every response:
	// loaded here, before the first request arrives, not lazily inside the
	// first request's modelled time (where it made a fresh server's first
	// TTFT the load's length, and its next tokens catch up microseconds
	// apart).
	tokenizer.Builtin()
	s := &Server{cfg: cfg, created: time.Now().Unix(), mux: http.NewServeMux(), pace: pace.New(cfg.Mode == "engine"), speed: 1}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.SpeedJitter > 0 {
		s.speed = math.Exp(cfg.SpeedJitter * rand.New(rand.NewPCG(cfg.SpeedSeed, 0x5bd1e995)).NormFloat64())
	}
	if cfg.Mode == "engine" {
		ec := cfg.Engine
		if ec.Speed == 0 {
			ec.Speed = 1
		}
		ec.Speed *= s.speed
		s.engine = newEngineRun(ec, s.pace)
		go s.engine.loop(s.ctx)
		s.mux.HandleFunc("POST /reset_prefix_cache", func(w http.ResponseWriter, r *http.Request) {
			s.engine.resetPrefixCache()
			w.WriteHeader(http.StatusOK)
		})
		s.mux.HandleFunc("GET /sim/engine", s.engineHandler)
	} else {
		s.cfg.TTFT = time.Duration(float64(cfg.TTFT) * s.speed)
		s.cfg.ITL = time.Duration(float64(cfg.ITL) * s.speed)
	}
	s.mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, chatShape) })
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, completionShape) })
	s.mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, ollamaChatShape) })
	s.mux.HandleFunc("POST /api/generate", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, ollamaGenerateShape) })
	s.mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	s.mux.HandleFunc("POST /v1/images/generations", s.images)
	s.mux.HandleFunc("POST /v1/ranking", func(w http.ResponseWriter, r *http.Request) { s.rankings(w, r, nimRank) })
	s.mux.HandleFunc("POST /v2/rerank", func(w http.ResponseWriter, r *http.Request) { s.rankings(w, r, cohereRank) })
	s.mux.HandleFunc("POST /rerank", func(w http.ResponseWriter, r *http.Request) { s.rankings(w, r, teiRank) })
	s.mux.HandleFunc("POST /v1/infer", s.imageRetrieval)
	s.mux.HandleFunc("POST /v1/audio/transcriptions", s.transcription)
	s.mux.HandleFunc("POST /v1/images/edits", s.imageEdit)
	s.mux.HandleFunc("POST /v1/videos", s.videos)
	s.mux.HandleFunc("GET /v1/videos/{id}", s.video)
	s.mux.HandleFunc("POST /generate", s.nativeGenerate)
	s.mux.HandleFunc("POST /inference/v1/generate", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, vllmGenShape) })
	s.mux.HandleFunc("POST /rag/api/prompt", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, solidoShape) })
	s.mux.HandleFunc("POST /v2/models/{model}/generate", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, tritonShape) })
	s.mux.HandleFunc("POST /v2/models/{model}/generate_stream", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, tritonShape) })
	s.mux.HandleFunc("POST /v2/models/{model}/infer", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, kserveShape) })
	s.mux.HandleFunc("POST /generate_stream", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, tgiShape) })
	s.mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, responsesShape) })
	s.mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, messagesShape) })
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET /sim/truth", s.truthHandler)
	s.mux.HandleFunc("GET /metrics", s.metricsHandler)
	s.mux.HandleFunc("DELETE /sim/truth", func(w http.ResponseWriter, r *http.Request) { s.Reset(); w.WriteHeader(http.StatusNoContent) })
	return s
}

// Truths returns a copy of the kept truths, oldest first.
func (s *Server) Truths() []Truth {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Truth(nil), s.truths...)
}

// Settle waits (up to d) until no request is being generated. A client
// can see a stream's last bytes a moment before its truth is kept.
func (s *Server) Settle(d time.Duration) {
	for end := time.Now().Add(d); s.metrics.running.Load() > 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
}

// Reset forgets all truths.
func (s *Server) Reset() {
	s.mu.Lock()
	s.truths, s.dropped = nil, 0
	s.mu.Unlock()
}

func (s *Server) keep(t Truth) {
	s.mu.Lock()
	if len(s.truths) >= s.cfg.TruthLimit {
		n := copy(s.truths, s.truths[len(s.truths)/2:])
		s.dropped += len(s.truths) - n
		s.truths = s.truths[:n]
	}
	s.truths = append(s.truths, t)
	s.mu.Unlock()
}

func (s *Server) truthHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("settle") {
		s.Settle(5 * time.Second)
	}
	s.mu.Lock()
	body := struct {
		TTFTNs  int64   `json:"ttft_ns"`
		ITLNs   int64   `json:"itl_ns"`
		Dropped int     `json:"dropped"`
		Truths  []Truth `json:"truths"`
	}{int64(s.cfg.TTFT), int64(s.cfg.ITL), s.dropped, s.truths}
	b, err := json.Marshal(body)
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	model, _ := json.Marshal(s.cfg.Model)
	io.WriteString(w, `{"object":"list","data":[{"id":`+string(model)+`,"object":"model","created":`+strconv.FormatInt(s.created, 10)+`,"owned_by":"aiperf-action"}]}`)
}

// request is what the simulator reads from a body.
type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Prompt       json.RawMessage `json:"prompt"`
	System       json.RawMessage `json:"system"`       // Anthropic's system prompt
	Input        json.RawMessage `json:"input"`        // the Responses API's prompt
	Instructions json.RawMessage `json:"instructions"` // and its system prompt
	MaxOutput    *int            `json:"max_output_tokens"`
	Options      *struct {
		NumPredict *int `json:"num_predict"`
	} `json:"options"` // Ollama's
	Inputs     json.RawMessage `json:"inputs"` // TGI's prompt
	Parameters *struct {
		MaxNewTokens *int `json:"max_new_tokens"`
	} `json:"parameters"` // and its length
	Text           json.RawMessage `json:"text"`       // SGLang's prompt
	TextInput      json.RawMessage `json:"text_input"` // Triton generate's
	SamplingParams *struct {
		MaxNewTokens *int `json:"max_new_tokens"`
		MaxTokens    *int `json:"max_tokens"` // (vLLM's tokens-in API)
		IgnoreEOS    bool `json:"ignore_eos"`
	} `json:"sampling_params"`
	TokenIDs       []int           `json:"token_ids"`       // vLLM's tokens-in prompt
	Query          json.RawMessage `json:"query"`           // SOLIDO's prompt texts
	InferenceModel string          `json:"inference_model"` // and its model
	Stream         bool            `json:"stream"`
	StreamOptions  *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	MinTokens           *int `json:"min_tokens"`
	IgnoreEOS           bool `json:"ignore_eos"`
}

// outputLen decides how many tokens to generate: a natural length derived
// from the body's hash (where "EOS" would fall), then max/min tokens.
func (s *Server) outputLen(req *request, h uint32) (n int, finish string) {
	span := s.cfg.MaxLen - s.cfg.MinLen + 1
	natural := s.cfg.MinLen + int(h%uint32(span))
	limit := -1
	if req.MaxTokens != nil {
		limit = *req.MaxTokens
	}
	if req.MaxCompletionTokens != nil {
		limit = *req.MaxCompletionTokens
	}
	if req.MaxOutput != nil {
		limit = *req.MaxOutput
	}
	if req.Options != nil && req.Options.NumPredict != nil {
		limit = *req.Options.NumPredict
	}
	if req.Parameters != nil && req.Parameters.MaxNewTokens != nil {
		limit = *req.Parameters.MaxNewTokens
	}
	if sp := req.SamplingParams; sp != nil {
		if sp.MaxNewTokens != nil {
			limit = *sp.MaxNewTokens
		}
		if sp.MaxTokens != nil {
			limit = *sp.MaxTokens
		}
		req.IgnoreEOS = req.IgnoreEOS || sp.IgnoreEOS
	}
	n, finish = natural, "stop"
	if req.IgnoreEOS && limit > 0 {
		n = limit
	}
	if req.MinTokens != nil && n < *req.MinTokens {
		n = *req.MinTokens
	}
	if limit > 0 && n >= limit {
		n, finish = limit, "length"
	}
	return max(n, 1), finish
}

func hashBody(b []byte) uint32 {
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}
