//go:build linux

package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Stream fixtures written as the real servers emit them (testdata/streams:
// Anthropic's event: lines, \r\n delimiters, a ping, a thinking block with
// a signature, usage at the start and the end, an error event; OpenAI's
// Responses events, whose response.completed repeats the output; vLLM's
// chat with a keep-alive comment, reasoning_content, null content, a
// usage-only chunk, and an error in the stream; Ollama's NDJSON with
// thinking, a last line without its newline, an error line; TGI's token
// events, "data:" without its space, a special end token and the whole
// text at the end; SGLang's cumulative events; Triton's TensorRT-LLM
// ensemble events, which end with the body; vLLM's tokens-in API, whose
// events carry token ids, two in one, "usage":null, then a usage chunk,
// and an error in the stream; SOLIDO's content events, the last with
// sources whose documents have a content of their own), read by both
// client paths into the same record. (A token-id answer's OSL is its ids,
// not a tokenizer's count.)
func TestStreamFixtures(t *testing.T) {
	tok := tokenizer.Builtin()
	for _, c := range []struct {
		file            string
		kind            endpoint.Kind
		answer, thought string
		serverISL       int
		serverOSL       int
		errKind         string
		ids             int // a token-id answer's OSL
	}{
		{file: "anthropic_thinking.sse", kind: endpoint.Messages{}, answer: "Hello, \"world\"\n", thought: " The user wants a", serverISL: 12, serverOSL: 9},
		{file: "anthropic_error.sse", kind: endpoint.Messages{}, errKind: record.ErrServer},
		{file: "openai_responses.sse", kind: endpoint.Responses{}, answer: "Hi there, \"friend\"!", serverISL: 37, serverOSL: 7},
		{file: "vllm_chat_reasoning.sse", kind: endpoint.Chat{}, answer: "Hello there", thought: "Okay, the user said hi.", serverISL: 10, serverOSL: 9},
		{file: "vllm_chat_error.sse", kind: endpoint.Chat{}, errKind: record.ErrServer},
		{file: "ollama_chat_thinking.ndjson", kind: endpoint.OllamaChat{}, answer: "Hello! \"Hi\"\n", thought: "Okay, a greeting.", serverISL: 26, serverOSL: 11},
		{file: "ollama_generate.ndjson", kind: endpoint.OllamaGenerate{}, answer: "The sky", serverISL: 26, serverOSL: 2},
		{file: "ollama_error.ndjson", kind: endpoint.OllamaGenerate{}, errKind: record.ErrServer},
		{file: "tgi_generate_stream.sse", kind: endpoint.TGIGenerate{}, answer: " The sky is", serverOSL: 4},
		{file: "sglang_generate.sse", kind: endpoint.SGLangGenerate{}, answer: " The sky is blue", serverISL: 7, serverOSL: 4},
		{file: "triton_generate_stream.sse", kind: endpoint.TritonGenerate{}, answer: " Machine learning is"},
		{file: "vllm_generate.sse", kind: endpoint.VLLMGenerate{}, ids: 4, serverISL: 7, serverOSL: 4},
		{file: "vllm_generate_error.sse", kind: endpoint.VLLMGenerate{}, errKind: record.ErrServer},
		{file: "solido_rag.sse", kind: endpoint.SolidoRAG{}, answer: `The sky is "blue".`},
	} {
		body, err := os.ReadFile(filepath.Join("testdata", "streams", c.file))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ct := "text/event-stream"
			if filepath.Ext(c.file) == ".ndjson" {
				ct = "application/x-ndjson"
			}
			w.Header().Set("Content-Type", ct)
			w.Write(body)
		}))
		for _, path := range []string{"loop", "net/http"} {
			cl := loopClient(t, srv.URL)
			cl.Kind = c.kind
			if path == "net/http" {
				cl.Loop, cl.HTTP = nil, &http.Client{}
			}
			var rec record.Record
			cl.Do(context.Background(), []byte(`{}`), "", 0, 0, &rec)
			if c.errKind != "" {
				if rec.ErrKind != c.errKind {
					t.Errorf("%s, %s: error kind %q (%s), want %q", c.file, path, rec.ErrKind, rec.ErrMsg, c.errKind)
				}
				continue
			}
			wantR := tok.Count(c.thought)
			if c.thought == "" && rec.FirstOutput != 0 {
				t.Errorf("%s, %s: a first output stamp without reasoning", c.file, path)
			}
			if c.thought == "" {
				rec.FirstOutput = rec.FirstToken
			}
			wantOSL := wantR + tok.Count(c.answer)
			if c.ids > 0 {
				wantOSL = c.ids
			}
			if !rec.OK() || rec.ReasoningTokens != wantR || rec.OSL != wantOSL || rec.ServerISL != c.serverISL || rec.ServerOSL != c.serverOSL ||
				rec.FirstToken == 0 || rec.FirstOutput < rec.FirstToken {
				t.Errorf("%s, %s: %+v", c.file, path, rec)
			}
		}
		srv.Close()
	}
}
