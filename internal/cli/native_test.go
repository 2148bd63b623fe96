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

// TGI's and SGLang's native generate APIs end to end against serve,
// streamed (both client paths) and whole: TGI's stream path, one token an
// event and the whole text only in the last (not counted twice); SGLang's
// cumulative events, each new part counted once; the server's counts.
func TestNativeGenerateEndpoints(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 12*time.Millisecond, 3*time.Millisecond
	url := serveHandler(t, sim.New(cfg))
	for _, typ := range []string{"huggingface_generate", "sglang_generate"} {
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
				args := []string{"profile", "-m", "tgi", "-u", url, "--endpoint-type", typ,
					"--concurrency", "2", "--request-count", "6", "--isl", "20", "--osl", "9",
					"--extra-inputs", "ignore_eos:true", "--random-seed", "6", "--no-server-metrics", "--artifact-dir", dir}
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
					if r.OSL != 9 || r.ServerOSL != 9 || (typ == "sglang_generate" && r.ServerISL != r.ISL) {
						t.Errorf("request %d: OSL %d (server %d), ISL %d (server %d); want 9, 9", r.Index, r.OSL, r.ServerOSL, r.ISL, r.ServerISL)
					}
					if c.stream && len(r.Chunks) != 9 {
						t.Errorf("request %d: %d chunks with text, want 9", r.Index, len(r.Chunks))
					}
				}
				if !c.stream {
					return
				}
				ttft, itl := run.Metrics[metrics.TTFT].Dist, run.Metrics[metrics.ITL].Dist
				t.Logf("TTFT p50 %.2f ms, ITL p50 %.2f ms", ttft.P50, itl.P50)
				if math.Abs(ttft.P50-12) > 2 || math.Abs(itl.P50-3) > 1 {
					t.Errorf("TTFT p50 %.2f ms (want 12), ITL p50 %.2f ms (want 3)", ttft.P50, itl.P50)
				}
			})
		}
	}
}
