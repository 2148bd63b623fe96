package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// Non-token endpoints end to end against serve: embeddings,
// nim_embeddings and image_generation, request latency the server's 10 ms,
// request throughput as inputs (images) a second, the server's prompt count
// equal to ours where it reports one, no token metrics; --streaming is
// refused before any load, naming the flag.
func TestEmbeddingsEndpoint(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT = 10 * time.Millisecond
	url := serveHandler(t, sim.New(cfg))
	for _, typ := range []string{"embeddings", "nim_embeddings", "image_generation"} {
		dir := filepath.Join(t.TempDir(), "run")
		res := runCLI(t, time.Minute, "profile", "-m", "e5", "-u", url, "--endpoint-type", typ, "--concurrency", "2", "--request-count", "8",
			"--isl", "32", "--use-server-token-count", "--random-seed", "2", "--no-server-metrics", "--artifact-dir", dir)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s", typ, res.code, res.stderr)
		}
		run, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		if run.Counts.OK != 8 || run.Counts.Errors != 0 {
			t.Fatalf("%s: counts %+v", typ, run.Counts)
		}
		for _, r := range readRecords(t, dir) {
			if (typ != "image_generation" && r.ServerISL != r.ISL) || r.ISL != 32 || r.OSL != 0 {
				t.Errorf("%s: request %d: ISL %d (server %d), OSL %d", typ, r.Index, r.ISL, r.ServerISL, r.OSL)
			}
		}
		lat := run.Metrics[metrics.RequestLatency].Dist
		// The server answers 10 ms after arrival, on a Go timer: never early
		// (how late depends on the machine, so no upper bound but a gross one).
		t.Logf("%s: request latency p50 %.2f ms, %.1f inputs/s", typ, lat.P50, run.Metrics[metrics.RequestTput].Rate.Value)
		if lat.P50 < 10 || lat.P50 > 500 {
			t.Errorf("%s: request latency p50 %.2f ms, want at least the server's 10", typ, lat.P50)
		}
		for _, m := range []string{metrics.TTFT, metrics.OutputTput, metrics.ITL} {
			if _, ok := run.Metrics[m]; ok {
				t.Errorf("%s: a token metric %s", typ, m)
			}
		}
	}
	res := runCLI(t, time.Minute, "profile", "-m", "e5", "-u", url, "--endpoint-type", "embeddings", "--streaming", "--request-count", "2")
	if res.code != 2 || !strings.Contains(res.stderr, "--streaming") {
		t.Errorf("embeddings with --streaming: exit %d\n%s", res.code, res.stderr)
	}
}
