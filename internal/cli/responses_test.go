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

// OpenAI's Responses API end to end against serve: streamed through both
// client paths and whole, with reasoning (the first 3 of 10 tokens, in
// response.reasoning_text.delta): TTFT, TTFO 3 ITLs later, the usage of
// response.completed (not its repeated output), and no errors.
func TestResponsesEndpoint(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL, cfg.ReasoningTokens = 15*time.Millisecond, 3*time.Millisecond, 3
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
			args := []string{"profile", "-m", "gpt-sim", "-u", url + "/v1", "--endpoint-type", "responses",
				"--concurrency", "2", "--request-count", "6", "--isl", "20", "--osl", "10", "--shared-system-prompt-length", "4",
				"--extra-inputs", "ignore_eos:true", "--use-server-token-count", "--random-seed", "4", "--no-server-metrics", "--artifact-dir", dir}
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
			if run.Counts.OK != 6 || run.Counts.Errors != 0 {
				t.Fatalf("counts %+v", run.Counts)
			}
			for _, r := range readRecords(t, dir) {
				if r.OSL != 10 || r.ServerOSL != 10 || r.ReasoningTokens != 3 || r.ServerISL != r.ISL || r.ISL != 24 {
					t.Errorf("request %d: OSL %d (server %d), reasoning %d, ISL %d (server %d); want 10, 10, 3, 24, 24", r.Index, r.OSL, r.ServerOSL, r.ReasoningTokens, r.ISL, r.ServerISL)
				}
			}
			if !c.stream {
				return
			}
			ttft, ttfo := run.Metrics[metrics.TTFT].Dist, run.Metrics[metrics.TTFO].Dist
			t.Logf("TTFT p50 %.2f ms, TTFO p50 %.2f ms", ttft.P50, ttfo.P50)
			if math.Abs(ttft.P50-15) > 2 || math.Abs(ttfo.P50-ttft.P50-9) > 2 {
				t.Errorf("TTFT p50 %.2f ms (want 15), TTFO %.2f ms after it (want 9)", ttft.P50, ttfo.P50-ttft.P50)
			}
		})
	}
}
