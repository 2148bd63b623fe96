package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// llama-server closes a kept-alive connection after a stream; the next
// request on it fails before any response. That is not a server error:
// the client resends it once on a fresh connection, and counts it.
func TestServerClosedKeepAliveIsNotAnError(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL, cfg.CloseAfterStream = time.Millisecond, time.Millisecond, true
	url := serveHandler(t, sim.New(cfg))
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, quickProfile(url, dir, "--random-seed", "1", "--request-count", "30", "--concurrency", "2")...)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	run, _ := result.Read(dir)
	if run.Counts.Errors != 0 || run.ToolHealth.ConnRetries == 0 {
		t.Fatalf("errors %d (%v), connection retries %d", run.Counts.Errors, run.Counts.ErrorsByKind, run.ToolHealth.ConnRetries)
	}
}

func TestUseServerTokenCount(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, quickProfile(url, dir, "--random-seed", "1", "--use-server-token-count")...)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	in, _ := os.ReadFile(filepath.Join(dir, result.InputsFile))
	if !strings.Contains(string(in), `"include_usage": true`) {
		t.Error("streaming requests don't ask for usage")
	}
	for _, r := range readRecords(t, dir) {
		if r.ServerOSL == 0 || r.ServerOSL != r.OSL || r.ServerISL != r.ISL {
			t.Fatalf("record %d: client %d/%d, server %d/%d", r.Index, r.ISL, r.OSL, r.ServerISL, r.ServerOSL)
		}
	}
	run, _ := result.Read(dir)
	for _, w := range run.ToolHealth.Warnings {
		if strings.Contains(w, "count") || strings.Contains(w, "max_tokens") {
			t.Errorf("token-count warning with matching counts: %s", w)
		}
	}

	// A server whose usage disagrees with what it streamed, and that stops
	// before max_tokens: both are warned about; with the flag the server's
	// count is what the metrics use.
	liar := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		p := `data: {"object":"chat.completion.chunk","choices":[`
		fmt.Fprint(w, p+`{"index":0,"delta":{"content":" a b"}}]}`+"\n\n")
		fmt.Fprint(w, p+`],"usage":{"prompt_tokens":20,"completion_tokens":3}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	dir2 := filepath.Join(t.TempDir(), "run")
	res = runCLI(t, time.Minute, quickProfile(liar, dir2, "--random-seed", "1", "--use-server-token-count", "--osl", "8", "--output-tokens-stddev", "0")...)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	run, _ = result.Read(dir2)
	w := strings.Join(run.ToolHealth.Warnings, "\n")
	if !strings.Contains(w, "output count differs from the server's usage") || !strings.Contains(w, "ended before their max_tokens") {
		t.Errorf("warnings:\n%s", w)
	}
	if o := run.Metrics["output_sequence_length"].Dist; o.Min != 3 || o.Max != 3 {
		t.Errorf("OSL %v..%v, want the server's 3", o.Min, o.Max)
	}
}

// /metrics is scraped by default when it answers, and summarised in run.json.
func TestServerMetricsScraped(t *testing.T) {
	_, url := startSim(t, 20*time.Millisecond, 2*time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, quickProfile(url, dir, "--random-seed", "1", "--request-count", "40", "--osl", "10", "--output-tokens-stddev", "0")...)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	run, _ := result.Read(dir)
	sm, ok := run.ServerMetrics[url+"/metrics"]
	if !ok || sm.Scrapes < 2 {
		t.Fatalf("server metrics %+v", run.ServerMetrics)
	}
	gen := sm.Metrics["vllm:generation_tokens_total"]
	if gen.Delta == nil || *gen.Delta != 400 {
		t.Errorf("generation tokens delta %v, want 40 requests × 10", gen.Delta)
	}
	ttft := sm.Metrics["vllm:time_to_first_token_seconds"]
	if ttft.P50 == nil || *ttft.P50 < 0.02 || *ttft.P50 > 0.04 || *ttft.Count != 40 {
		t.Errorf("TTFT histogram %+v", ttft)
	}
	if g := sm.Metrics["vllm:num_requests_running"]; g.Max == nil || *g.Max > 3 {
		t.Errorf("running gauge %+v (concurrency 3)", g)
	}
	dir2 := filepath.Join(t.TempDir(), "run")
	res = runCLI(t, time.Minute, quickProfile(url, dir2, "--random-seed", "1", "--server-metrics", url+"/nope")...)
	run, _ = result.Read(dir2)
	if res.code != 0 || !strings.Contains(strings.Join(run.ToolHealth.Warnings, " "), "--server-metrics "+url+"/nope") {
		t.Errorf("a bad --server-metrics URL: exit %d, warnings %v", res.code, run.ToolHealth.Warnings)
	}
}
