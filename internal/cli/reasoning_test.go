package cli

import (
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// A reasoning model (serve --reasoning-tokens 6: the first 6 of each
// answer's 16 tokens come as reasoning_content): TTFT counts the first
// token of any kind, time_to_first_output_token the first answer token,
// 6 ITLs later; reasoning_token_count is 6 a request and OSL all 16, as the
// server's usage says, streaming and not, on both client paths.
func TestReasoningOutput(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL, cfg.ReasoningTokens = 20*time.Millisecond, 4*time.Millisecond, 6
	url := serveHandler(t, sim.New(cfg))
	eachEndpointRun(t, "chat", url, 8, []string{"-m", "r1", "--concurrency", "2", "--request-count", "8", "--isl", "16", "--osl", "16",
		"--extra-inputs", "ignore_eos:true", "--use-server-token-count", "--random-seed", "5"},
		func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record) {
			wantTokens(t, recs, 16, 6, 16, true)
			if d := run.Metrics[metrics.ReasoningTokens].Dist; d == nil || d.Count != 8 || d.P50 != 6 {
				t.Errorf("reasoning_token_count %+v", d)
			}
			if er.stream {
				wantFirstTokens(t, run, recs, 20, 6)
			}
		})
}
