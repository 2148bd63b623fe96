package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jmespath/go-jmespath"
	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// NamedTemplates are AIPerf's payload templates known by name.
var NamedTemplates = map[string]string{
	"nv-embedqa": `{"text": {{ texts|tojson }}}`,
}

// Jinja is AIPerf's template endpoint type as AIPerf writes it: the body
// is a Jinja2 template (--extra-inputs payload_template:…) rendered with
// autoescape on, as AIPerf's jinja2.Environment(autoescape=True) does, over
// AIPerf's variables (text, texts, image, images, audio, audios, video,
// videos, query, queries, passage, passages, model, max_tokens, role,
// stream); --extra-inputs are merged into the JSON object it renders. The
// answer is found by a JMESPath query (--extra-inputs response_field:…),
// or, without one, where AIPerf's auto-detection looks: embeddings,
// rankings, then text (text, content, response, output, result, or an
// OpenAI choice's text, message or delta).
type Jinja struct {
	tmpl  *exec.Template
	query *jmespath.JMESPath // nil: auto-detect
}

var _ Kind = (*Jinja)(nil)

// noIncludes is the template's loader: it holds the one template and
// refuses any {% include %} or {% import %}, so a template reads no file.
type noIncludes struct{ src string }

func (l noIncludes) Read(path string) (io.Reader, error) {
	if path != "payload" {
		return nil, fmt.Errorf("%q: a payload template reads no other template or file", path)
	}
	return strings.NewReader(l.src), nil
}
func (l noIncludes) Resolve(path string) (string, error) { return path, nil }
func (l noIncludes) Inherit(string) (loaders.Loader, error) {
	return l, nil
}

// NewJinja parses a Jinja2 payload template (a name in NamedTemplates is
// its template) and a JMESPath response field ("" or "text": auto).
func NewJinja(src, field string) (*Jinja, error) {
	if named, ok := NamedTemplates[strings.TrimSpace(src)]; ok {
		src = named
	}
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("the template endpoint type needs a payload template")
	}
	cfg := config.New()
	cfg.AutoEscape = true // AIPerf's Environment(autoescape=True): {{ text }} is HTML-escaped, {{ text|tojson }} is JSON
	cfg.KeepTrailingNewline = false
	t, err := exec.NewTemplate("payload", cfg, noIncludes{src}, gonja.DefaultEnvironment)
	if err != nil {
		return nil, fmt.Errorf("payload template: %w", err)
	}
	j := &Jinja{tmpl: t}
	if f := strings.TrimSpace(field); f != "" && f != "text" {
		if j.query, err = jmespath.Compile(f); err != nil {
			return nil, fmt.Errorf("response_field %q: not a JMESPath query: %v", f, err)
		}
	}
	return j, nil
}

// vars are AIPerf's template variables for one request.
func (j *Jinja) vars(in Input) map[string]any {
	first := func(xs []string) any {
		if len(xs) == 0 {
			return nil
		}
		return xs[0]
	}
	texts := []string{}
	if in.Prompt != "" {
		texts = append(texts, in.Prompt)
	}
	images, videos := append([]string{}, in.Images...), append([]string{}, in.Videos...)
	audios := make([]string, len(in.Audios))
	for i, a := range in.Audios {
		audios[i] = a.Format + "," + a.Data // AIPerf's "fmt,base64" audio content
	}
	var queries, passages []string
	if in.Query != "" {
		queries = []string{in.Query}
	}
	passages = append([]string{}, in.Passages...)
	var maxTokens any
	if in.MaxTokens > 0 {
		maxTokens = in.MaxTokens
	}
	return map[string]any{
		"texts": texts, "images": images, "audios": audios, "videos": videos,
		"text": first(texts), "image": first(images), "audio": first(audios), "video": first(videos),
		"queries": orEmpty(queries), "passages": passages, "query": first(queries), "passage": first(passages),
		"model": in.Model, "max_tokens": maxTokens, "role": "user", "stream": in.Stream,
	}
}

func orEmpty(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// Build renders the template; its output must be JSON, an object when
// --extra-inputs are merged in.
func (j *Jinja) Build(in Input) ([]byte, error) {
	s, err := j.tmpl.ExecuteToString(exec.NewContext(j.vars(in)))
	if err != nil {
		return nil, fmt.Errorf("payload template: %w", err)
	}
	b := bytes.TrimSpace([]byte(s))
	if !json.Valid(b) {
		return nil, fmt.Errorf("payload template did not render JSON: %.100q", s)
	}
	if len(in.Extra) == 0 {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("payload template: --extra-inputs need a body that is a JSON object: %v", err)
	}
	fields := make(map[string]any, len(m))
	for k, v := range m {
		fields[k] = v
	}
	return marshalBody(fields, Input{Extra: in.Extra})
}

func (j *Jinja) parse(data []byte) (Chunk, error) {
	v, err := decodeAny(data)
	if err != nil {
		return Chunk{}, err
	}
	if obj, ok := v.(map[string]any); ok {
		if e, ok := obj["error"]; ok && e != nil {
			b, _ := json.Marshal(e)
			return Chunk{ServerErr: string(b)}, nil
		}
	}
	if j.query != nil {
		found, err := j.query.Search(v)
		if err != nil {
			return Chunk{}, fmt.Errorf("response_field: %v", err)
		}
		return answerOf(found), nil
	}
	return autoDetect(v), nil
}

// answerOf is a found value as an answer: a string is text, a list of
// numbers one embedding, a list of lists of numbers embeddings, a list of
// objects rankings (each an item), and a number or bool its text.
func answerOf(v any) Chunk {
	switch x := v.(type) {
	case string:
		return Chunk{Content: x}
	case json.Number:
		return Chunk{Content: x.String()}
	case float64:
		return Chunk{Content: strconv.FormatFloat(x, 'g', -1, 64)}
	case bool:
		return Chunk{Content: strconv.FormatBool(x)}
	case []any:
		if len(x) == 0 {
			return Chunk{}
		}
		switch e := x[0].(type) {
		case json.Number, float64:
			return Chunk{Items: 1}
		case []any:
			if len(e) > 0 {
				if _, ok := e[0].(json.Number); ok {
					return Chunk{Items: len(x)}
				}
			}
		case map[string]any:
			return Chunk{Items: len(x)}
		case string:
			var s strings.Builder
			for _, y := range x {
				if t, ok := y.(string); ok {
					s.WriteString(t)
				}
			}
			return Chunk{Content: s.String()}
		}
	}
	return Chunk{}
}

// autoDetect looks where AIPerf's auto-detection does: OpenAI embeddings,
// {"embeddings"|"embedding": …}, {"rankings"|"results": […]}, then text.
func autoDetect(v any) Chunk {
	obj, ok := v.(map[string]any)
	if !ok {
		return answerOf(v)
	}
	if data, ok := obj["data"].([]any); ok && len(data) > 0 {
		if d, ok := data[0].(map[string]any); ok && d["object"] == "embedding" {
			return Chunk{Items: len(data)}
		}
	}
	for _, k := range []string{"embeddings", "embedding"} {
		if xs, ok := obj[k].([]any); ok && len(xs) > 0 {
			switch xs[0].(type) {
			case json.Number:
				return Chunk{Items: 1}
			case []any:
				return Chunk{Items: len(xs)}
			}
		}
	}
	for _, k := range []string{"rankings", "results"} {
		if xs, ok := obj[k].([]any); ok {
			return Chunk{Items: max(len(xs), 1)}
		}
	}
	for _, k := range []string{"text", "content", "response", "output", "result"} {
		switch x := obj[k].(type) {
		case string:
			return Chunk{Content: x}
		case []any:
			if c := answerOf(x); c.Content != "" {
				return c
			}
		}
	}
	for _, path := range [][]string{{"choices", "0", "text"}, {"choices", "0", "message", "content"}, {"choices", "0", "delta", "content"}} {
		if s := textAt(v, path); s != "" {
			return Chunk{Content: s}
		}
	}
	return Chunk{}
}

func (j *Jinja) ParseChunk(data []byte) (Chunk, error)       { return j.parse(data) }
func (j *Jinja) ParseResponse(body []byte) (Response, error) { return j.parse(body) }

// Scan decodes each event: a template's answers are where a query or the
// auto-detection finds them, with no shortcut to vouch for.
func (j *Jinja) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	c, err := j.parse(data)
	if err != nil {
		return nil, 0, nil, err
	}
	if c.ServerErr != "" {
		return nil, 0, &c, nil
	}
	return append(buf[:0], c.Content...), 0, nil, nil
}

func (*Jinja) Done(data []byte) bool { return openAI{}.Done(data) }

func (*Jinja) Auth(apiKey string) [][2]string { return openAI{}.Auth(apiKey) }
