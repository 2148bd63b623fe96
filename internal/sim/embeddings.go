package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// embeddings answers /v1/embeddings as OpenAI's API does: one vector an
// input (8 floats, from the input's hash), the prompt tokens in usage,
// after TTFT (with the speed factor, as a prefill has).
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	arrival := s.arrival(r)
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		Model    string          `json:"model"`
		Input    json.RawMessage `json:"input"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"` // vLLM's chat-style embeddings: one input of the messages
	}
	if err := json.Unmarshal(body, &req); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	var inputs []string
	if req.Input == nil && len(req.Messages) > 0 {
		var parts []string
		for _, m := range req.Messages {
			parts = append(parts, m.Content)
		}
		inputs = []string{strings.Join(parts, " ")}
	} else if json.Unmarshal(req.Input, &inputs) != nil {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "input: want a string or a list of strings")
			return
		}
		inputs = []string{one}
	}
	h := hashBody(body)
	isl := 0
	for _, in := range inputs {
		isl += tokenizer.Count(in)
	}
	if !s.holdNonToken(w, r, arrival, h, isl) {
		return
	}
	model := req.Model
	if model == "" {
		model = s.cfg.Model
	}
	mj, _ := json.Marshal(model)
	out := `{"object":"list","data":[`
	for i := range inputs {
		if i > 0 {
			out += ","
		}
		out += `{"object":"embedding","index":` + strconv.Itoa(i) + `,"embedding":[`
		for d := range 8 {
			if d > 0 {
				out += ","
			}
			out += strconv.FormatFloat(float64(int32(h*uint32(d+1+i)))/(1<<31), 'f', 6, 64)
		}
		out += `]}`
	}
	out += `],"model":` + string(mj) + `,"usage":{"prompt_tokens":` + strconv.Itoa(isl) + `,"total_tokens":` + strconv.Itoa(isl) + `}}`
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, out)
}

// tinyPNG is a 1×1 PNG, base64: the image serve generates.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// images answers /v1/images/generations as OpenAI's API does: n images
// (default 1) as base64, after TTFT.
func (s *Server) images(w http.ResponseWriter, r *http.Request) {
	arrival := s.arrival(r)
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		Prompt *string `json:"prompt"`
		N      *int    `json:"n"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Prompt == nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "want a JSON body with a prompt")
		return
	}
	n := 1
	if req.N != nil {
		n = max(1, min(*req.N, 10))
	}
	if !s.holdNonToken(w, r, arrival, hashBody(body), tokenizer.Count(*req.Prompt)) {
		return
	}
	out := `{"created":` + strconv.FormatInt(arrival.Unix(), 10) + `,"data":[`
	for i := range n {
		if i > 0 {
			out += ","
		}
		out += `{"b64_json":"` + tinyPNG + `"}`
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, out+`]}`)
}

// holdNonToken is a non-token answer's wait: the request's fault (false:
// answered with it), its prompt tokens counted and it running until TTFT
// after arrival (TTFT has the speed factor in it); false when the client
// went away first. The caller writes the answer after a true.
func (s *Server) holdNonToken(w http.ResponseWriter, r *http.Request, arrival time.Time, h uint32, isl int) bool {
	if s.refused(w, s.cfg.Faults.pick(h)) {
		return false
	}
	s.metrics.running.Add(1)
	s.metrics.promptTokens.Add(int64(isl))
	defer func() {
		s.metrics.running.Add(-1)
		s.metrics.requests.Add(1)
	}()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	return waitUntil(r, t, arrival.Add(s.cfg.TTFT))
}

// readBody is a request's body (up to 64 MiB); false when it could not be
// read, answered 400.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "read body")
		return nil, false
	}
	return body, true
}
