package client

import (
	"context"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
)

// stream is a 128-token chat stream as the simulator sends it.
func stream() string {
	p := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[`
	var b strings.Builder
	b.WriteString(p + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for i := 0; i < 128; i++ {
		b.WriteString(p + `{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString(p + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// BenchmarkChunkPath is the client's per-chunk work on one 128-token
// stream: SSE framing, timestamping, finding the text, counting tokens.
// Divide ns/op by 130 for the cost per chunk.
func BenchmarkChunkPath(b *testing.B) {
	s := stream()
	c := &Client{Kind: endpoint.Chat{}, Streaming: true, Clock: func() int64 { return 1 }}
	r := strings.NewReader(s)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.Reset(s)
		var rec record.Record
		c.readStream(context.Background(), r, &rec, 128, c.Clock)
		if rec.OSL != 128 || len(rec.Chunks) != 128 {
			b.Fatalf("osl %d chunks %d %s", rec.OSL, len(rec.Chunks), rec.ErrMsg)
		}
	}
}

func TestReadStreamCountsExactly(t *testing.T) {
	t.Parallel()
	c := &Client{Kind: endpoint.Chat{}, Streaming: true, Clock: func() int64 { return 1 }}
	var rec record.Record
	c.readStream(context.Background(), strings.NewReader(stream()), &rec, 128, c.Clock)
	if !rec.OK() || rec.OSL != 128 || len(rec.Chunks) != 128 || rec.FirstToken == 0 {
		t.Fatalf("%+v", rec)
	}
	var cut record.Record
	c.readStream(context.Background(), strings.NewReader(stream()[:500]), &cut, 128, c.Clock)
	if cut.ErrKind != record.ErrStreamCut {
		t.Fatalf("a cut stream gave %q", cut.ErrKind)
	}
	var bad record.Record
	c.readStream(context.Background(), strings.NewReader("data: {\"choices\":[\n\n"), &bad, 0, c.Clock)
	if bad.ErrKind != record.ErrMalformed {
		t.Fatalf("a malformed chunk gave %q", bad.ErrKind)
	}
}
