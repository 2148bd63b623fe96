package cli

import (
	"math"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// Anthropic's messages API end to end against serve: AIPerf's name and its
// alias, streamed (through the event loop and net/http) and whole, with
// extended thinking (the first 4 of 12 tokens): the path, the auth headers,
// TTFT, TTFO 4 ITLs later, the server's usage, and no errors.
func TestMessagesEndpoint(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL, cfg.ReasoningTokens = 15*time.Millisecond, 3*time.Millisecond, 4
	s := sim.New(cfg)
	var keyed, unkeyed atomic.Int64
	url := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/messages" {
			if r.Header.Get("x-api-key") == "sk-test" && r.Header.Get("anthropic-version") != "" && r.Header.Get("Authorization") == "" {
				keyed.Add(1)
			} else {
				unkeyed.Add(1)
			}
		}
		s.ServeHTTP(w, r)
	}))
	for _, c := range []struct {
		name, typ string
		stream    bool
		env       string
	}{{"stream, loop", "messages", true, ""}, {"stream, net/http", "anthropic_messages", true, "nethttp"}, {"whole", "messages", false, ""}} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("AIPERF_ACTION_CLIENT", c.env)
			}
			dir := filepath.Join(t.TempDir(), "run")
			args := []string{"profile", "-m", "claude-sim", "-u", url, "--endpoint-type", c.typ, "--api-key", "sk-test",
				"--concurrency", "2", "--request-count", "6", "--isl", "24", "--osl", "12", "--shared-system-prompt-length", "8",
				"--use-server-token-count", "--random-seed", "9", "--no-server-metrics", "--artifact-dir", dir}
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
			if run.Counts.OK != 6 || run.Counts.Errors != 0 || run.Target.EndpointType != "messages" {
				t.Fatalf("counts %+v, type %q", run.Counts, run.Target.EndpointType)
			}
			for _, r := range readRecords(t, dir) {
				if r.OSL != 12 || r.ServerOSL != 12 || r.ReasoningTokens != 4 || r.ServerISL != r.ISL || r.ISL != 32 {
					t.Errorf("request %d: OSL %d (server %d), reasoning %d, ISL %d (server %d); want 12, 12, 4, 32, 32", r.Index, r.OSL, r.ServerOSL, r.ReasoningTokens, r.ISL, r.ServerISL)
				}
			}
			if !c.stream {
				return
			}
			ttft, ttfo := run.Metrics[metrics.TTFT].Dist, run.Metrics[metrics.TTFO].Dist
			t.Logf("TTFT p50 %.2f ms, TTFO p50 %.2f ms, ITL p50 %.2f ms", ttft.P50, ttfo.P50, run.Metrics[metrics.ITL].Dist.P50)
			if math.Abs(ttft.P50-15) > 2 || math.Abs(ttfo.P50-ttft.P50-12) > 2 {
				t.Errorf("TTFT p50 %.2f ms (want 15), TTFO %.2f ms after it (want 12)", ttft.P50, ttfo.P50-ttft.P50)
			}
		})
	}
	// (serve answers a kept-alive connection's later requests itself, past
	// this wrapper: it sees every whole request and each connection's first.)
	if keyed.Load() < 6+2 || unkeyed.Load() != 0 {
		t.Errorf("%d requests with Anthropic's headers, %d without", keyed.Load(), unkeyed.Load())
	}
}
