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

// Ollama's native APIs end to end against serve: NDJSON streams through
// both client paths, and whole answers, of ollama_chat and
// ollama_generate, with a thinking model (the first 2 of 8 tokens): TTFT,
// TTFO 2 ITLs later, options.num_predict, the counts of the done line.
func TestOllamaEndpoints(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL, cfg.ReasoningTokens = 12*time.Millisecond, 3*time.Millisecond, 2
	url := serveHandler(t, sim.New(cfg))
	for _, typ := range []string{"ollama_chat", "ollama_generate"} {
		for _, c := range []struct {
			name   string
			stream bool
			env    string
		}{{"stream, loop", true, ""}, {"stream, net/http", true, "nethttp"}, {"whole", false, ""}} {
			t.Run(typ+", "+c.name, func(t *testing.T) {
				if c.env != "" {
					t.Setenv("AIPERF_ACTION_CLIENT", c.env)
				}
				dir := filepath.Join(t.TempDir(), "run")
				args := []string{"profile", "-m", "llama3.2", "-u", url, "--endpoint-type", typ,
					"--concurrency", "2", "--request-count", "6", "--isl", "20", "--osl", "8",
					"--extra-inputs", "ignore_eos:true", "--use-server-token-count", "--random-seed", "6", "--no-server-metrics", "--artifact-dir", dir}
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
					if r.OSL != 8 || r.ServerOSL != 8 || r.ReasoningTokens != 2 || r.ServerISL != r.ISL || r.ISL != 20 {
						t.Errorf("request %d: OSL %d (server %d), reasoning %d, ISL %d (server %d); want 8, 8, 2, 20, 20", r.Index, r.OSL, r.ServerOSL, r.ReasoningTokens, r.ISL, r.ServerISL)
					}
				}
				if !c.stream {
					return
				}
				ttft, ttfo := run.Metrics[metrics.TTFT].Dist, run.Metrics[metrics.TTFO].Dist
				t.Logf("TTFT p50 %.2f ms, TTFO p50 %.2f ms", ttft.P50, ttfo.P50)
				if math.Abs(ttft.P50-12) > 2 || math.Abs(ttfo.P50-ttft.P50-6) > 2 {
					t.Errorf("TTFT p50 %.2f ms (want 12), TTFO %.2f ms after it (want 6)", ttft.P50, ttfo.P50-ttft.P50)
				}
			})
		}
	}
}
