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

// rankShape is one rankings API: NIM's, Cohere's or TEI's.
type rankShape int

const (
	nimRank rankShape = iota
	cohereRank
	teiRank
)

// rankings answers a rerank request after TTFT, as its API does: a score
// for every passage (from the body's hash), best first, the query's and
// the passages' tokens counted as the prompt's.
func (s *Server) rankings(w http.ResponseWriter, r *http.Request, shape rankShape) {
	arrival := s.arrival(r)
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		Query    json.RawMessage `json:"query"`
		Passages []struct {
			Text string `json:"text"`
		} `json:"passages"`
		Documents []string `json:"documents"`
		Texts     []string `json:"texts"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	var query string
	var passages []string
	switch shape {
	case nimRank:
		var q struct {
			Text *string `json:"text"`
		}
		if json.Unmarshal(req.Query, &q) != nil || q.Text == nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", `query: want {"text": ...}`)
			return
		}
		query = *q.Text
		for _, p := range req.Passages {
			passages = append(passages, p.Text)
		}
	default:
		if json.Unmarshal(req.Query, &query) != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "query: want a string")
			return
		}
		passages = req.Documents
		if shape == teiRank {
			passages = req.Texts
		}
	}
	if len(passages) == 0 {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "no passages to rank")
		return
	}
	isl := tokenizer.Count(query)
	for _, p := range passages {
		isl += tokenizer.Count(p)
	}
	h := hashBody(body)
	if !s.holdNonToken(w, r, arrival, h, isl) {
		return
	}
	// Scores from the hash, best first.
	order := make([]int, len(passages))
	score := make([]float64, len(passages))
	for i := range passages {
		order[i] = i
		score[i] = float64(int32(h*uint32(2*i+1))) / (1 << 31)
	}
	for i := 1; i < len(order); i++ { // (few passages: insertion sort)
		for j := i; j > 0 && score[order[j]] > score[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	var b strings.Builder
	field := map[rankShape]string{nimRank: "logit", cohereRank: "relevance_score", teiRank: "score"}[shape]
	for k, i := range order {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"index":` + strconv.Itoa(i) + `,"` + field + `":` + strconv.FormatFloat(score[i], 'f', 6, 64) + `}`)
	}
	w.Header().Set("Content-Type", "application/json")
	switch shape {
	case nimRank:
		io.WriteString(w, `{"rankings":[`+b.String()+`]}`)
	case cohereRank:
		io.WriteString(w, `{"id":"rerank-`+strconv.FormatUint(uint64(h), 16)+`","results":[`+b.String()+`],"meta":{"billed_units":{"search_units":1}},"usage":{"prompt_tokens":`+strconv.Itoa(isl)+`}}`)
	default:
		io.WriteString(w, `[`+b.String()+`]`)
	}
}

// imageRetrieval answers NIM's /v1/infer after TTFT: an item an image, a
// bounding box found in each.
func (s *Server) imageRetrieval(w http.ResponseWriter, r *http.Request) {
	arrival := s.arrival(r)
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		Input []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Input) == 0 {
		apiError(w, http.StatusBadRequest, "invalid_request_error", `want {"input": [{"type": "image_url", "url": ...}]}`)
		return
	}
	for _, in := range req.Input {
		if in.Type != "image_url" || in.URL == "" {
			apiError(w, http.StatusBadRequest, "invalid_request_error", `an input item is {"type": "image_url", "url": ...}`)
			return
		}
	}
	if !s.holdNonToken(w, r, arrival, hashBody(body), 0) {
		return
	}
	var b strings.Builder
	for i := range req.Input {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"index":` + strconv.Itoa(i) + `,"bounding_boxes":{"table":[{"x_min":0.1,"y_min":0.1,"x_max":0.5,"y_max":0.4,"confidence":0.9}]}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"data":[`+b.String()+`],"usage":{"images_size_mb":0.01}}`)
}

// transcription answers /v1/audio/transcriptions after TTFT as OpenAI's
// API does: the multipart upload's "file" and "model" read, a transcript
// of a word for every tenth of a second of WAV audio (at least one).
func (s *Server) transcription(w http.ResponseWriter, r *http.Request) {
	arrival := s.arrival(r)
	if !readForm(w, r) {
		return
	}
	defer r.MultipartForm.RemoveAll()
	f, hdr, err := r.FormFile("file")
	if err != nil || r.FormValue("model") == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", `want the form's "file" and "model"`)
		return
	}
	data, _ := io.ReadAll(f)
	f.Close()
	words := 1
	if len(data) > 44 && string(data[:4]) == "RIFF" {
		rate := int(uint32(data[24]) | uint32(data[25])<<8 | uint32(data[26])<<16 | uint32(data[27])<<24)
		block := int(uint16(data[32]) | uint16(data[33])<<8)
		if rate > 0 && block > 0 {
			words = max(1, (len(data)-44)/block*10/rate)
		}
	}
	if !s.holdNonToken(w, r, arrival, hashBody([]byte(hdr.Filename+strconv.Itoa(len(data)))), 0) {
		return
	}
	text := strings.TrimSpace(strings.Repeat("word ", words))
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"text":"`+text+`","usage":{"type":"duration","seconds":`+strconv.Itoa(max(1, words/10))+`}}`)
}

// imageEdit answers /v1/images/edits after TTFT as OpenAI's API does: the
// multipart upload's "prompt" and its "image" file (or SGLang's "url"),
// one edited image as base64.
func (s *Server) imageEdit(w http.ResponseWriter, r *http.Request) {
	arrival := s.arrival(r)
	if !readForm(w, r) {
		return
	}
	defer r.MultipartForm.RemoveAll()
	prompt := r.FormValue("prompt")
	_, _, ferr := r.FormFile("image")
	if prompt == "" || (ferr != nil && r.FormValue("url") == "") {
		apiError(w, http.StatusBadRequest, "invalid_request_error", `want the form's "prompt" and its "image" (or "url")`)
		return
	}
	if !s.holdNonToken(w, r, arrival, hashBody([]byte(prompt)), tokenizer.Count(prompt)) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"created":`+strconv.FormatInt(arrival.Unix(), 10)+`,"data":[{"b64_json":"`+tinyPNG+`"}]}`)
}

// videoJob is one /v1/videos job: done when its generation time is up
// (kept until a minute after, once there are many).
type videoJob struct {
	model string
	at    time.Time // submitted
	done  time.Time
}

// videos takes a /v1/videos submission (a multipart form, or JSON, with
// a prompt) and answers with a queued job, which takes 4 × TTFT (the
// speed factor in it) to generate; GET /v1/videos/{id} answers its
// status, in_progress with its progress until it is completed.
func (s *Server) videos(w http.ResponseWriter, r *http.Request) {
	arrival := s.arrival(r)
	prompt, model := "", ""
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if !readForm(w, r) {
			return
		}
		defer r.MultipartForm.RemoveAll()
		prompt, model = r.FormValue("prompt"), r.FormValue("model")
	} else {
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		var req struct{ Prompt, Model string }
		json.Unmarshal(body, &req)
		prompt, model = req.Prompt, req.Model
	}
	if prompt == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", `want a "prompt"`)
		return
	}
	if s.refused(w, s.cfg.Faults.pick(hashBody([]byte(prompt)))) {
		return
	}
	s.metrics.promptTokens.Add(int64(tokenizer.Count(prompt)))
	s.videoMu.Lock()
	s.videoN++
	id := "video_" + strconv.Itoa(s.videoN)
	if s.videoJobs == nil {
		s.videoJobs = map[string]*videoJob{}
	}
	if len(s.videoJobs) >= 10_000 { // (bounded: done a minute ago, forgotten)
		for k, old := range s.videoJobs {
			if time.Since(old.done) > time.Minute {
				delete(s.videoJobs, k)
			}
		}
	}
	s.videoJobs[id] = &videoJob{model: model, at: arrival, done: arrival.Add(4 * s.cfg.TTFT)}
	s.videoMu.Unlock()
	s.writeVideo(w, id)
}

// video answers a job's status.
func (s *Server) video(w http.ResponseWriter, r *http.Request) {
	s.writeVideo(w, r.PathValue("id"))
}

func (s *Server) writeVideo(w http.ResponseWriter, id string) {
	s.videoMu.Lock()
	j, ok := s.videoJobs[id]
	s.videoMu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "invalid_request_error", "no video "+id)
		return
	}
	status, progress := "in_progress", 0
	if now := time.Now(); !now.Before(j.done) {
		status, progress = "completed", 100
	} else if total := j.done.Sub(j.at); total > 0 {
		progress = int(100 * now.Sub(j.at) / total)
	}
	mj, _ := json.Marshal(j.model)
	out := `{"id":"` + id + `","object":"video","model":` + string(mj) + `,"status":"` + status + `","progress":` + strconv.Itoa(progress) +
		`,"created_at":` + strconv.FormatInt(j.at.Unix(), 10)
	if status == "completed" {
		out += `,"completed_at":` + strconv.FormatInt(j.done.Unix(), 10) + `,"url":"/v1/videos/` + id + `/content"`
		s.metrics.requests.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, out+`}`)
}

// readForm parses a multipart upload (up to 64 MiB); false when it is not
// one, answered 400. The caller removes its files.
func readForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<20)
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "want a multipart form: "+err.Error())
		return false
	}
	return true
}
