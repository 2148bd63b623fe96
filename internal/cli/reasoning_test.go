package cli

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
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
	for _, c := range []struct {
		name   string
		stream bool
		env    string
	}{{"stream, loop", true, ""}, {"stream, net/http", true, "nethttp"}, {"whole", false, ""}} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("AIPERF_ACTION_CLIENT", c.env)
			}
			dir := filepath.Join(t.TempDir(), "run")
			args := []string{"profile", "-m", "r1", "-u", url, "--concurrency", "2", "--request-count", "8", "--isl", "16", "--osl", "16",
				"--extra-inputs", "ignore_eos:true", "--use-server-token-count", "--random-seed", "5", "--no-server-metrics", "--artifact-dir", dir}
			if c.stream {
				args = append(args, "--streaming")
			}
			res := runCLI(t, time.Minute, args...)
			if res.code != 0 {
				t.Fatalf("exit %d\n%s", res.code, res.stderr)
			}
			run, err := result.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if run.Counts.OK != 8 {
				t.Fatalf("counts %+v", run.Counts)
			}
			for _, r := range readRecords(t, dir) {
				if r.ReasoningTokens != 6 || r.OSL != 16 || r.ServerOSL != 16 {
					t.Errorf("request %d: reasoning %d, OSL %d, server %d; want 6, 16, 16", r.Index, r.ReasoningTokens, r.OSL, r.ServerOSL)
				}
			}
			if d := run.Metrics[metrics.ReasoningTokens].Dist; d == nil || d.Count != 8 || d.P50 != 6 {
				t.Errorf("reasoning_token_count %+v", d)
			}
			if !c.stream {
				return
			}
			ttft, ttfo := run.Metrics[metrics.TTFT].Dist, run.Metrics[metrics.TTFO].Dist
			if ttfo == nil || ttfo.Count != 8 {
				t.Fatalf("time_to_first_output_token %+v", ttfo)
			}
			t.Logf("TTFT p50 %.2f ms, TTFO p50 %.2f ms", ttft.P50, ttfo.P50)
			if math.Abs(ttfo.P50-ttft.P50-24) > 2 {
				t.Errorf("TTFO p50 %.2f ms is %.2f ms after TTFT p50 %.2f ms; want 6 ITLs (24 ms)", ttfo.P50, ttfo.P50-ttft.P50, ttft.P50)
			}
		})
	}
}
