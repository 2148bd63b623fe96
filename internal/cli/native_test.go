package cli

import (
	"math"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// TGI's and SGLang's native generate APIs end to end against serve,
// streamed (both client paths) and whole: TGI's stream path, one token an
// event and the whole text only in the last (not counted twice); SGLang's
// cumulative events, each new part counted once; the server's counts.
func TestNativeGenerateEndpoints(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 12*time.Millisecond, 3*time.Millisecond
	url := serveHandler(t, sim.New(cfg))
	for _, typ := range []string{"huggingface_generate", "sglang_generate"} {
		eachEndpointRun(t, typ, url, 6, []string{"-m", "tgi", "--endpoint-type", typ,
			"--concurrency", "2", "--request-count", "6", "--isl", "20", "--osl", "9",
			"--extra-inputs", "ignore_eos:true", "--random-seed", "6"},
			func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record) {
				wantTokens(t, recs, 9, 0, 20, typ == "sglang_generate") // (TGI reports no prompt count)
				if !er.stream {
					return
				}
				for _, r := range recs {
					if len(r.Chunks) != 9 {
						t.Errorf("request %d: %d chunks with text, want 9", r.Index, len(r.Chunks))
					}
				}
				ttft, itl := run.Metrics[metrics.TTFT].Dist, run.Metrics[metrics.ITL].Dist
				t.Logf("TTFT p50 %.2f ms, ITL p50 %.2f ms", ttft.P50, itl.P50)
				if math.Abs(ttft.P50-12) > 2 || math.Abs(itl.P50-3) > 1 {
					t.Errorf("TTFT p50 %.2f ms (want 12), ITL p50 %.2f ms (want 3)", ttft.P50, itl.P50)
				}
			})
	}
}
