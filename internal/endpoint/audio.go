package endpoint

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"sort"
	"strings"
	"time"
)

// AudioTranscription is OpenAI's /v1/audio/transcriptions (AIPerf's
// audio_transcription, as vLLM, SGLang and NIM serve Whisper-style
// models): the request's first audio clip uploaded as a multipart form's
// "file", with the model, answered {"text": ...}; never streamed, no
// tokens counted (a run reports latency and clips/s), good when the
// transcript is not empty.
type AudioTranscription struct{ whole }

var (
	_ NonToken = AudioTranscription{}
	_ FormBody = AudioTranscription{}
)

// A FormBody is a Kind whose requests are not sent as the JSON the plan
// keeps: Wire makes what is sent, of ContentType.
type FormBody interface {
	ContentType() string
	Wire(body []byte) ([]byte, error)
}

// formBoundary separates a transcription form's parts (checked not to
// occur in what it separates).
const formBoundary = "aiperf-action-form-7c1e5b0d93a44f26"

// ContentType is a multipart form's, with its boundary.
func (AudioTranscription) ContentType() string {
	return "multipart/form-data; boundary=" + formBoundary
}

// Unit is what a request counts.
func (AudioTranscription) Unit() string { return "clips" }

// Build makes the upload of the input's first clip, as JSON the plan and
// inputs.json keep ({"fields": {...}, "file": {"name", "type", "data"}}:
// the data base64); Wire makes the multipart form that is sent of it.
func (AudioTranscription) Build(in Input) ([]byte, error) {
	if len(in.Audios) == 0 {
		return nil, fmt.Errorf("an audio_transcription request needs an audio clip (--audio-length-mean, or an input file's \"audio\")")
	}
	clip := in.Audios[0]
	if _, err := base64.StdEncoding.DecodeString(clip.Data); err != nil {
		return nil, fmt.Errorf("audio clip: not base64: %v", err)
	}
	fields := map[string]string{"model": in.Model, "response_format": "json"}
	for k, v := range in.Extra { // --extra-inputs as form fields (a JSON string as its text)
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		fields[k] = s
	}
	return json.Marshal(formJSON{Fields: fields, File: formFile{Name: "audio." + clip.Format,
		Type: "audio/" + map[string]string{"wav": "wav", "mp3": "mpeg"}[clip.Format], Data: clip.Data}})
}

type formJSON struct {
	Fields map[string]string `json:"fields"`
	File   formFile          `json:"file"`
}

type formFile struct {
	Field string `json:"field,omitempty"` // the form field ("file" when empty)
	Name  string `json:"name,omitempty"`
	Type  string `json:"type,omitempty"`
	Data  string `json:"data,omitempty"` // base64; none: no file part
}

// Wire is the multipart form a built body is sent as.
func (AudioTranscription) Wire(body []byte) ([]byte, error) { return wireForm(body) }

// wireForm makes the multipart form of a form body's JSON: its fields in
// key order, then its file, if it has one.
func wireForm(body []byte) ([]byte, error) {
	var f formJSON
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, fmt.Errorf("a transcription body: %v", err)
	}
	data, err := base64.StdEncoding.DecodeString(f.File.Data)
	if err != nil {
		return nil, fmt.Errorf("a transcription body's file: %v", err)
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(formBoundary); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(f.Fields))
	for k := range f.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.WriteField(k, f.Fields[k])
	}
	parts := len(keys)
	if f.File.Data != "" {
		field := f.File.Field
		if field == "" {
			field = "file"
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+field+`"; filename="`+f.File.Name+`"`)
		h.Set("Content-Type", f.File.Type)
		part, err := w.CreatePart(h)
		if err != nil {
			return nil, err
		}
		part.Write(data)
		parts++
	}
	w.Close()
	if bytes.Count(buf.Bytes(), []byte(formBoundary)) != parts+1 {
		return nil, fmt.Errorf("audio clip: its bytes hold the form's boundary")
	}
	return buf.Bytes(), nil
}

// ParseResponse reads a transcription.
func (AudioTranscription) ParseResponse(body []byte) (Response, error) {
	var o struct {
		Text *string `json:"text"`
		errFields
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	if e := o.failed(o.Text != nil); e != "" {
		return Chunk{ServerErr: e}, nil
	}
	var c Chunk
	if o.Text != nil && *o.Text != "" {
		c.Items = 1
	}
	return c, nil
}

// ImageEdit is OpenAI's /v1/images/edits (AIPerf's image_edit; SGLang
// and FLUX.2 serving): the prompt and the request's first image uploaded
// as a multipart form (its "image" file; an http(s) image as SGLang's
// "url" field), answered as image generation is.
type ImageEdit struct{ whole }

var (
	_ NonToken = ImageEdit{}
	_ FormBody = ImageEdit{}
)

// ContentType is a multipart form's, with its boundary.
func (ImageEdit) ContentType() string { return AudioTranscription{}.ContentType() }

// Unit is what a request counts.
func (ImageEdit) Unit() string { return "images" }

// Wire is the multipart form a built body is sent as.
func (ImageEdit) Wire(body []byte) ([]byte, error) { return wireForm(body) }

// Build makes the upload of the prompt and the first image.
func (ImageEdit) Build(in Input) ([]byte, error) {
	if len(in.Images) == 0 || in.Prompt == "" {
		return nil, fmt.Errorf("an image_edit request needs a prompt and an image (--image-width-mean and --image-height-mean, or an input file's \"text\" and \"image\")")
	}
	fields := map[string]string{"model": in.Model, "prompt": in.Prompt, "response_format": "b64_json", "n": "1"}
	for k, v := range in.Extra {
		switch k {
		case "prompt", "image", "url", "mask": // (the endpoint's own)
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		fields[k] = s
	}
	var file formFile
	u := in.Images[0]
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		fields["url"] = u
	} else {
		head, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
		mt, _, _ := strings.Cut(head, ";")
		if !ok || !strings.HasPrefix(mt, "image/") {
			return nil, fmt.Errorf("image_edit: the image is not an image data URL")
		}
		ext := strings.TrimPrefix(mt, "image/")
		if ext == "jpeg" {
			ext = "jpg"
		}
		file = formFile{Field: "image", Name: "image." + ext, Type: mt, Data: data}
	}
	return json.Marshal(formJSON{Fields: fields, File: file})
}

// ParseResponse reads the edited images, as image generation's.
func (ImageEdit) ParseResponse(body []byte) (Response, error) {
	return ImageGeneration{}.ParseResponse(body)
}

// VideoGeneration is OpenAI's and SGLang's /v1/videos (AIPerf's
// video_generation): the prompt (with --extra-inputs such as size and
// seconds) submitted as a multipart form, answered with a job, which the
// client polls (GET /v1/videos/{id}) until it is completed or failed; the
// request's latency runs from the submission to the answer that says it
// is done. Non-token: videos/s.
type VideoGeneration struct{ whole }

var (
	_ NonToken = VideoGeneration{}
	_ FormBody = VideoGeneration{}
	_ Polled   = VideoGeneration{}
)

// A Polled Kind answers with a job to poll: Job reads a submission's or a
// poll's answer (its id, and whether it is done), and PollEvery is how
// long the client waits between polls.
type Polled interface {
	Job(body []byte) (id string, done bool, err error)
	PollEvery() time.Duration
}

// ContentType is a multipart form's, with its boundary.
func (VideoGeneration) ContentType() string { return AudioTranscription{}.ContentType() }

// Unit is what a request counts.
func (VideoGeneration) Unit() string { return "videos" }

// Wire is the multipart form a built body is sent as.
func (VideoGeneration) Wire(body []byte) ([]byte, error) { return wireForm(body) }

// PollEvery is the wait between polls.
func (VideoGeneration) PollEvery() time.Duration { return 100 * time.Millisecond }

// Build makes the submission of the prompt.
func (VideoGeneration) Build(in Input) ([]byte, error) {
	if in.Prompt == "" {
		return nil, fmt.Errorf("a video_generation request needs a prompt")
	}
	fields := map[string]string{"model": in.Model, "prompt": in.Prompt}
	for k, v := range in.Extra {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		fields[k] = s
	}
	return json.Marshal(formJSON{Fields: fields})
}

type videoJob struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Error  json.RawMessage `json:"error"`
	Detail json.RawMessage `json:"detail"`
}

// Job reads a video job: done when completed, an error when failed.
func (VideoGeneration) Job(body []byte) (string, bool, error) {
	var j videoJob
	if err := json.Unmarshal(body, &j); err != nil {
		return "", false, fmt.Errorf("malformed JSON: %w", err)
	}
	switch {
	case j.Status == "failed" || j.Status == "cancelled" || hasError(j.Error):
		return j.ID, true, nil // (ParseResponse names the failure)
	case j.Status == "completed":
		return j.ID, true, nil
	case j.ID == "":
		if hasError(j.Detail) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("a video job without an id")
	}
	return j.ID, false, nil
}

// ParseResponse reads the last answer of a job: a completed video is an
// item, a failed one the server's error.
func (VideoGeneration) ParseResponse(body []byte) (Response, error) {
	var j videoJob
	if err := json.Unmarshal(body, &j); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	switch {
	case hasError(j.Error):
		c.ServerErr = string(j.Error)
	case j.Status == "failed" || j.Status == "cancelled":
		c.ServerErr = "the video job " + j.Status
	case j.ID == "" && hasError(j.Detail):
		c.ServerErr = string(j.Detail)
	case j.Status == "completed":
		c.Items = 1
	}
	return c, nil
}
