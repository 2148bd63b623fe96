package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

// Template is the template endpoint type: the request body is the user's
// Go template (text/template) executed for each request, and the text of a
// whole answer, or of each streamed SSE event, is the string at a field
// path in its JSON. It reaches an API no other type knows. The template
// sees .Model, .Prompt, .System, .MaxTokens (0: unset) and .Stream, and
// the function json, which writes a value as JSON ({{json .Prompt}});
// --extra-inputs are merged into a body that is a JSON object. A stream
// ends with [DONE] or with its body.
type Template struct {
	tmpl  *template.Template
	field []string // the path: object keys, and indexes into arrays
}

var _ Kind = (*Template)(nil)

// NewTemplate parses a request template and a response field path
// ("choices.0.delta.content"). Errors name what is wrong.
func NewTemplate(body, field string) (*Template, error) {
	if strings.TrimSpace(body) == "" {
		return nil, fmt.Errorf("the template endpoint type needs a request template")
	}
	t, err := template.New("request").Option("missingkey=error").Funcs(template.FuncMap{
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
	}).Parse(body)
	if err != nil {
		return nil, fmt.Errorf("request template: %w", err)
	}
	path, err := ParseFieldPath(field)
	if err != nil {
		return nil, err
	}
	return &Template{tmpl: t, field: path}, nil
}

// ParseFieldPath splits a dotted field path; every part must be non-empty.
func ParseFieldPath(field string) ([]string, error) {
	if strings.TrimSpace(field) == "" {
		return nil, fmt.Errorf("the template endpoint type needs a response field path (e.g. choices.0.text)")
	}
	parts := strings.Split(field, ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("response field %q: an empty part", field)
		}
	}
	return parts, nil
}

// templateData is what the request template sees.
type templateData struct {
	Model, Prompt, System string
	MaxTokens             int
	Stream                bool
}

// Build executes the template, and merges --extra-inputs into a JSON object.
func (t *Template) Build(in Input) ([]byte, error) {
	var b bytes.Buffer
	if err := t.tmpl.Execute(&b, templateData{Model: in.Model, Prompt: in.Prompt, System: in.System, MaxTokens: in.MaxTokens, Stream: in.Stream}); err != nil {
		return nil, fmt.Errorf("request template: %w", err)
	}
	if len(in.Extra) == 0 {
		return b.Bytes(), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		return nil, fmt.Errorf("request template: --extra-inputs need a body that is a JSON object: %v", err)
	}
	fields := make(map[string]any, len(m))
	for k, v := range m {
		fields[k] = v
	}
	return marshalBody(fields, Input{Extra: in.Extra})
}

// text finds the string at the field path; a missing or null field is
// no text, a number or a bool its JSON.
func (t *Template) text(data []byte) (string, error) {
	v, err := decodeAny(data)
	if err != nil {
		return "", err
	}
	return textAt(v, t.field), nil
}

// decodeAny decodes a JSON value, numbers kept as written.
func decodeAny(data []byte) (any, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	return v, nil
}

// textAt is the string at a field path in a decoded value: a missing or
// null field is no text, a number or a bool its JSON.
func textAt(v any, field []string) string {
	for _, p := range field {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return ""
			}
			v = x[i]
		default:
			return ""
		}
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return "" // an object or array at the path is no text
}

func (t *Template) parse(data []byte) (Chunk, error) {
	s, err := t.text(data)
	if err != nil {
		return Chunk{}, err
	}
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && hasError(e.Error) {
		return Chunk{ServerErr: string(e.Error)}, nil
	}
	return Chunk{Content: s}, nil
}

func (t *Template) ParseChunk(data []byte) (Chunk, error)       { return t.parse(data) }
func (t *Template) ParseResponse(body []byte) (Response, error) { return t.parse(body) }

// Scan reads an event's text at the field path without a decode
// (pathText) when the event is whole (wellFormed) and has no error key;
// any other event, or one the walk can't vouch for, is decoded.
func (t *Template) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	if !bytes.Contains(data, []byte(`"error"`)) && wellFormed(data) {
		if text, ok := pathText(data, t.field); ok {
			return append(buf[:0], text...), 0, nil, nil
		}
	}
	c, err := t.parse(data)
	if err != nil {
		return nil, 0, nil, err
	}
	if c.ServerErr != "" {
		return nil, 0, &c, nil
	}
	return append(buf[:0], c.Content...), 0, nil, nil
}

func (*Template) Done(data []byte) bool { return openAI{}.Done(data) }

func (*Template) Auth(apiKey string) [][2]string { return openAI{}.Auth(apiKey) }

// Make is For with what a template endpoint needs: its request template
// (a Go template) or payload template (AIPerf's Jinja2), and its response
// field (unused by the other types).
func Make(endpointType, requestTemplate, payloadTemplate, responseField string) (Kind, error) {
	t, err := Lookup(endpointType)
	if err != nil {
		return nil, err
	}
	switch t.Name {
	case TypeTemplate:
		if payloadTemplate != "" {
			return NewJinja(payloadTemplate, responseField)
		}
		return NewTemplate(requestTemplate, responseField)
	case TypeRaw:
		return NewRaw(responseField)
	}
	return t.Kind, nil
}

// Raw is AIPerf's raw endpoint type: an input file's raw payloads
// (--custom-dataset-type raw_payload) posted as they are to the URL as
// given (no path appended), and the answer's text found where a known
// API puts it (OpenAI chat and completions, Anthropic, Ollama, TGI,
// Triton, SGLang, a transcript), or at --response-field's path.
type Raw struct{ field []string }

var _ Kind = Raw{}

// rawWhole and rawEvent are where a whole answer's and a streamed
// event's text is looked for, in order.
var (
	rawWhole = [][]string{{"choices", "0", "message", "content"}, {"choices", "0", "text"}, {"content", "0", "text"},
		{"message", "content"}, {"response"}, {"generated_text"}, {"text_output"}, {"text"}, {"output_text"}}
	rawEvent = [][]string{{"choices", "0", "delta", "content"}, {"choices", "0", "text"}, {"delta", "text"},
		{"token", "text"}, {"message", "content"}, {"response"}, {"text_output"}}
)

// NewRaw makes the raw type, with a response field path or none (auto).
func NewRaw(field string) (Raw, error) {
	if strings.TrimSpace(field) == "" {
		return Raw{}, nil
	}
	path, err := ParseFieldPath(field)
	return Raw{field: path}, err
}

// Build is not used: a raw payload is the body.
func (Raw) Build(Input) ([]byte, error) {
	return nil, fmt.Errorf("--endpoint-type raw posts an input file's payloads as they are: give --custom-dataset-type raw_payload")
}

// parse decodes the event once and looks for its text at each path.
func (r Raw) parse(data []byte, where [][]string) (Chunk, error) {
	v, err := decodeAny(data)
	if err != nil {
		return Chunk{}, err
	}
	var c Chunk
	if obj, ok := v.(map[string]any); ok {
		if e, ok := obj["error"]; ok && e != nil {
			b, _ := json.Marshal(e)
			return Chunk{ServerErr: string(b)}, nil
		}
		if u, ok := obj["usage"].(map[string]any); ok {
			n := func(k string) int { i, _ := strconv.Atoi(fmt.Sprint(u[k])); return i }
			c.Usage = &Usage{PromptTokens: n("prompt_tokens"), CompletionTokens: n("completion_tokens")}
		}
	}
	if r.field != nil {
		where = [][]string{r.field}
	}
	for _, path := range where {
		if s := textAt(v, path); s != "" {
			c.Content = s
			break
		}
	}
	return c, nil
}

func (r Raw) ParseChunk(data []byte) (Chunk, error)       { return r.parse(data, rawEvent) }
func (r Raw) ParseResponse(body []byte) (Response, error) { return r.parse(body, rawWhole) }

// Scan decodes each event.
func (r Raw) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	c, err := r.ParseChunk(data)
	if err != nil {
		return nil, 0, nil, err
	}
	if c.ServerErr != "" || c.Usage != nil {
		return append(buf[:0], c.Content...), 0, &c, nil
	}
	return append(buf[:0], c.Content...), 0, nil, nil
}

func (Raw) Done(data []byte) bool { return openAI{}.Done(data) }

func (Raw) Auth(apiKey string) [][2]string { return openAI{}.Auth(apiKey) }
