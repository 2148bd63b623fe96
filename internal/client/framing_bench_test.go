package client

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/sse"
)

// framingStreams are 128-token streams in each framing, as their servers
// write them: OpenAI chat SSE, Anthropic's typed SSE events, the Responses
// API's, Ollama's NDJSON lines, vLLM's tokens-in events (ids, not text)
// and SOLIDO's content events.
func framingStreams() map[string]struct {
	kind endpoint.Kind
	body string
} {
	var chat, msgs, resp, ollama, ids, solido strings.Builder
	msgs.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n")
	msgs.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for k := range 128 {
		w := fmt.Sprintf(" w%d", k)
		chat.WriteString(sseEvent(w))
		msgs.WriteString(`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + w + `"}}` + "\n\n")
		resp.WriteString(`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":` + fmt.Sprint(k+4) + `,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c5","output_index":0,"content_index":0,"delta":"` + w + `","logprobs":[]}` + "\n\n")
		ollama.WriteString(`{"model":"llama3.2","created_at":"2025-06-05T19:22:45.031245Z","message":{"role":"assistant","content":"` + w + `"},"done":false}` + "\n")
		finish := "null"
		if k == 127 {
			finish = `"length"`
		}
		ids.WriteString(`data: {"request_id":"generate-tokens-5b9b6d2e1c0a4f8e","choices":[{"index":0,"logprobs":null,"finish_reason":` + finish + `,"token_ids":[` + fmt.Sprint(10000+k*7) + `]}],"usage":null}` + "\n\n")
		solido.WriteString(`data: {"content":"` + w + `"}` + "\n\n")
	}
	ids.WriteString("data: [DONE]\n\n")
	chat.WriteString("data: [DONE]\n\n")
	msgs.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":128}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	resp.WriteString("event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":200,\"response\":{\"status\":\"incomplete\",\"output\":[],\"usage\":{\"input_tokens\":12,\"output_tokens\":128}}}\n\n")
	ollama.WriteString(`{"model":"llama3.2","created_at":"2025-06-05T19:22:45Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","prompt_eval_count":12,"eval_count":128}` + "\n")
	return map[string]struct {
		kind endpoint.Kind
		body string
	}{
		"sse-chat":      {endpoint.Chat{}, chat.String()},
		"sse-anthropic": {endpoint.Messages{}, msgs.String()},
		"sse-responses": {endpoint.Responses{}, resp.String()},
		"ndjson-ollama": {endpoint.OllamaChat{}, ollama.String()},
		"sse-vllm-ids":  {endpoint.VLLMGenerate{}, ids.String()},
		"sse-solido":    {endpoint.SolidoRAG{}, solido.String()},
	}
}

// BenchmarkFraming is the stream parser per framing: a whole 128-token
// stream fed to the decoder in one read and taken event by event into a
// record (the client's onEvent: the end test, the scan, the stamps), in
// ns and allocations per event.
func BenchmarkFraming(b *testing.B) {
	for name, s := range framingStreams() {
		b.Run(name, func(b *testing.B) {
			c := &Client{Kind: s.kind, Streaming: true, Clock: func() int64 { return 1 }}
			dec := sse.NewDecoder()
			body := []byte(s.body)
			events := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dec.Reset()
				tr := endpoint.TraitsOf(s.kind)
				if tr.LineFramed {
					dec.Lines()
				}
				var rec record.Record
				var st streamState
				st.start(&rec, 128, &tr)
				dec.Feed(body, 1)
				n := 0
				for {
					ev, ok := dec.Scan()
					if !ok {
						break
					}
					n++
					if over, failed := c.onEvent(ev, &rec, &st); failed {
						b.Fatalf("%s: %s", name, rec.ErrMsg)
					} else if over {
						break
					}
				}
				if len(rec.Chunks) != 128 {
					b.Fatalf("%s: %d chunks", name, len(rec.Chunks))
				}
				events = n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
		})
	}
}
