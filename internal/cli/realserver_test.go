package cli

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// realServer is the URL of a running llama-server (.ci/llama-server.sh
// prints one); the real-server tests skip without it.
func realServer(t *testing.T) string {
	t.Helper()
	u := os.Getenv("AIPERF_LLAMA_URL")
	if testing.Short() {
		t.Skip("real-server tests run in the long pass")
	}
	if u == "" {
		t.Skip("AIPERF_LLAMA_URL is not set: start llama-server with .ci/llama-server.sh and export its URL")
	}
	return u
}

func realProfile(t *testing.T, url, dir, endpoint string, streaming bool, conc int, extra ...string) *result.Run {
	t.Helper()
	args := []string{"profile", "-m", "testmodel", "-u", url, "--endpoint-type", endpoint, "--concurrency", fmt.Sprint(conc),
		"--request-count", fmt.Sprint(4 * conc), "--isl", "24", "--osl", "16", "--extra-inputs", "ignore_eos:true",
		"--random-seed", "3", "--artifact-dir", dir}
	if streaming {
		args = append(args, "--streaming")
	}
	start := time.Now()
	res := runCLI(t, 5*time.Minute, append(args, extra...)...)
	if res.code != 0 {
		t.Fatalf("%s streaming=%v c=%d: exit %d\n%s\n%s", endpoint, streaming, conc, res.code, res.stdout, res.stderr)
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%-11s streaming=%-5v c=%d: %d requests in %s, errors %d, conn retries %d", endpoint, streaming, conc,
		run.Counts.Requests, time.Since(start).Round(time.Millisecond), run.Counts.Errors, run.ToolHealth.ConnRetries)
	if run.Counts.Errors != 0 {
		t.Fatalf("errors: %v", run.Counts.ErrorsByKind)
	}
	return run
}

// Every endpoint shape at concurrency 1, 4 and 8 (the server has 4 slots,
// so 8 queues): zero errors, OSL exactly the requested max tokens, and
// with --use-server-token-count the server's own count.
func TestRealServerProfiles(t *testing.T) {
	url := realServer(t)
	base := t.TempDir()
	for _, ep := range []string{"chat", "completions"} {
		for _, streaming := range []bool{true, false} {
			for _, c := range []int{1, 4, 8} {
				dir := filepath.Join(base, fmt.Sprintf("%s-%v-%d", ep, streaming, c))
				realProfile(t, url, dir, ep, streaming, c)
				for _, r := range readRecords(t, dir) {
					if r.OSL != 16 {
						t.Fatalf("%s: request %d has OSL %d, want 16", dir, r.Index, r.OSL)
					}
				}
			}
		}
	}
	dir := filepath.Join(base, "server-count")
	realProfile(t, url, dir, "chat", true, 4, "--use-server-token-count")
	for _, r := range readRecords(t, dir) {
		if r.ServerOSL != 16 {
			t.Fatalf("request %d: server usage says %d tokens, want 16", r.Index, r.ServerOSL)
		}
	}
}

// Queueing is visible: with 4 slots, concurrency 8 waits for a slot.
func TestRealServerQueueingAndMetrics(t *testing.T) {
	url := realServer(t)
	base := t.TempDir()
	one := realProfile(t, url, filepath.Join(base, "c1"), "chat", true, 1)
	eight := realProfile(t, url, filepath.Join(base, "c8"), "chat", true, 8)
	t1, t8 := one.Metrics[metrics.TTFT].Dist.P50, eight.Metrics[metrics.TTFT].Dist.P50
	t.Logf("TTFT p50: %.2f ms at c=1, %.2f ms at c=8", t1, t8)
	if t8 < 1.5*t1 {
		t.Errorf("TTFT p50 at c=8 (%.2f ms) is not well above c=1 (%.2f ms)", t8, t1)
	}
	sm, ok := eight.ServerMetrics[strings.TrimSuffix(url, "/")+"/metrics"]
	if !ok || sm.Scrapes < 2 {
		t.Fatalf("no server metrics in run.json: %+v", eight.ServerMetrics)
	}
	var names []string
	for name := range sm.Metrics {
		if strings.HasPrefix(name, "llamacpp:") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("no llamacpp:* metrics among %d", len(sm.Metrics))
	}
	t.Logf("scraped %d times: %s", sm.Scrapes, strings.Join(names, ", "))
}

// The gate end to end on llama-server started by the gate itself: two
// scenarios, three runs each, against baselines recorded by the same flow.
// The same server passes; the server with one slot instead of four (so the
// scenarios queue) fails on TTFT.
func TestRealServerGate(t *testing.T) {
	realServer(t)
	bin, model := os.Getenv("AIPERF_LLAMA_BIN"), os.Getenv("AIPERF_LLAMA_MODEL")
	if bin == "" || model == "" {
		t.Skip("AIPERF_LLAMA_BIN and AIPERF_LLAMA_MODEL are not set (.ci/run sets them)")
	}
	dir := t.TempDir()
	port := freePort(t)
	config := func(slots int) string {
		p := filepath.Join(dir, fmt.Sprintf("gate-%d.yml", slots))
		os.WriteFile(p, []byte(fmt.Sprintf(`server:
  command: %s -m %s --host 127.0.0.1 --port %d -t 1 -tb 1 -np %d -c 8192 --no-webui --metrics --alias testmodel
  ready-url: http://127.0.0.1:%d/health
  ready-timeout: 60s
model: testmodel
repeats: 3
seed: 5
scenarios:
  - name: chat-c4
    endpoint-type: chat
    streaming: true
    concurrency: 4
    request-count: 24
    isl: 32
    osl: 16
    extra-inputs: ["ignore_eos:true"]
    slice-duration: 0.1
  - name: completions-c4
    endpoint-type: completions
    streaming: true
    concurrency: 4
    request-count: 24
    isl: 32
    osl: 16
    extra-inputs: ["ignore_eos:true"]
    slice-duration: 0.1
thresholds:
  max-regression: 25%%
  metrics: ["time_to_first_token:p50", "request_latency:p50"]
baseline:
  store: folder
  path: %s
`, bin, model, port, slots, port, filepath.Join(dir, "baselines"))), 0o644)
		return p
	}
	gate := func(name string, args ...string) (int, string) {
		start := time.Now()
		code, out, errs := runGateLocal(t, append(args, "--results-dir", filepath.Join(dir, name))...)
		t.Logf("gate %s: exit %d in %s", name, code, time.Since(start).Round(time.Millisecond))
		if code == ExitError {
			t.Fatalf("gate %s: %s\n%s", name, out, errs)
		}
		return code, out
	}
	if code, _ := gate("seed", "--config", config(4), "--mode", "refresh", "--commit", "base"); code != 0 {
		t.Fatalf("refresh exit %d", code)
	}
	// The verdicts are statistics over three runs each; on a minute when the
	// hypervisor steals a fifth of the CPU (seen here) the runs spread so
	// far that the honest verdict is inconclusive, or the steal falls on
	// one job's runs and not the other's, and the unchanged server reads
	// slower (CI saw FAIL, request latency p50 +45.7%, with 17-27% steal in
	// the candidate's runs and 3-8% in the baseline's). A gate that missed
	// its verdict with 5% steal or more in its runs is skipped with its
	// figures, not passed; on a quiet machine the verdicts are asserted.
	disturbed := func(name, out string) {
		if steal := maxSteal(t, filepath.Join(dir, name)); steal >= 5 {
			t.Skipf("gate %s: verdict not the one expected, with %.1f%% CPU steal in its runs: the verdicts were not checked\n%s", name, steal, out)
		}
	}
	if code, out := gate("same", "--config", config(4)); code != 0 {
		disturbed("same", out)
		t.Fatalf("the same server did not pass (exit %d):\n%s", code, out)
	}
	code, out := gate("slowed", "--config", config(1))
	if code != ExitRegression || !strings.Contains(out, "time_to_first_token p50 regressed") {
		disturbed("slowed", out)
		t.Fatalf("the one-slot server did not fail on TTFT (exit %d):\n%s", code, out)
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		c.Close()
		t.Error("llama-server still listening after the gate")
	}
}

// maxSteal is the highest CPU steal recorded by the runs under dir.
func maxSteal(t *testing.T, dir string) float64 {
	t.Helper()
	steal := 0.0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == result.RunFile {
			if run, err := result.Read(filepath.Dir(path)); err == nil && run.ToolHealth.CPUStealPct != nil {
				steal = max(steal, *run.ToolHealth.CPUStealPct)
			}
		}
		return nil
	})
	return steal
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func runGateLocal(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := Gate(ctx, args, GateOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	return code, out.String() + errb.String(), errb.String()
}

// The gate against a server that outlives its jobs (url:, the llama-server
// CI starts, which caches prompts by default and is not restarted here):
// a refresh, then a pull request's gate on the unchanged server, then a
// paired A/A with both arms on that one server. Every run sends prompts
// of its own (no job, repeat or arm resends another's), so every run's
// share of prompt tokens served from the cache is the baseline's within
// a few points (the chat template's ~4%), and no verdict is one the cache
// made. The control: a run's prompts, rebuilt from its run.json (profile
// --random-seed --payload-seed) and sent again, are served from the cache
// and its TTFT falls by an order of magnitude, so a replay would show.
// (Before each job drew its own prompts, the pull request's runs resent
// the refresh's: 99.8% cached, TTFT p50 5.5 ms against 60 ms.) A verdict
// missed with 5% CPU steal or more in the runs is skipped with its
// figures, as TestRealServerGate does; the cache figures are asserted
// whatever the steal.
func TestRealServerGateOnALongLivedServer(t *testing.T) {
	url := realServer(t)
	dir := t.TempDir()
	seed := time.Now().UnixNano() % 1_000_000_007
	config := func(name, extra string) string {
		p := filepath.Join(dir, name+".yml")
		os.WriteFile(p, []byte(fmt.Sprintf(`url: %s
model: testmodel
repeats: 3
max-repeats: 3
seed: %d
%sscenarios:
  - name: chat-c2
    endpoint-type: chat
    streaming: true
    concurrency: 2
    request-count: 24
    isl: 384
    osl: 8
    extra-inputs: ["ignore_eos:true"]
thresholds:
  max-regression: 25%%
  metrics: ["time_to_first_token:p50", "request_latency:p50"]
baseline:
  store: folder
  path: %s
`, url, seed, extra, filepath.Join(dir, "baselines"))), 0o644)
		return p
	}
	type runFig struct {
		name        string
		payloadSeed uint64
		p50, cached float64
	}
	runs := func(job, prefix string) []runFig {
		var out []runFig
		for i := 1; i <= 3; i++ {
			name := fmt.Sprintf("%s-%d", prefix, i)
			run, err := result.Read(filepath.Join(dir, job, "chat-c2", name))
			if err != nil {
				t.Fatal(err)
			}
			pc := run.ToolHealth.PromptCache
			if pc == nil {
				t.Fatalf("%s %s: no prompt_cache in run.json (the server's /metrics has llamacpp:prompt_tokens_cached_total)", job, name)
			}
			f := runFig{name, run.PayloadSeed, run.Metrics[metrics.TTFT].Dist.P50, pc.CachedFraction}
			t.Logf("%-7s %-10s payload_seed %-20d TTFT p50 %6.1f ms, cached %5.1f%%", job, name, f.payloadSeed, f.p50, 100*f.cached)
			out = append(out, f)
		}
		return out
	}
	gate := func(job string, args ...string) (int, string) {
		code, out, errs := runGateLocal(t, append(args, "--results-dir", filepath.Join(dir, job))...)
		if code == ExitError {
			t.Fatalf("gate %s: exit %d\n%s\n%s", job, code, out, errs)
		}
		return code, out
	}
	verdict := func(job string, code int, out string) {
		rep, _ := os.ReadFile(filepath.Join(dir, job, "report.md"))
		if strings.Contains(string(rep), "Prefix cache differs") || strings.Contains(out, "again with fresh prompts") {
			t.Errorf("%s: the prefix cache served the runs unlike the baseline's:\n%s", job, rep)
		}
		if code == ExitRegression {
			if steal := maxSteal(t, filepath.Join(dir, job)); steal >= 5 {
				t.Skipf("%s: FAIL on the unchanged server with %.1f%% CPU steal in its runs: the verdict was not checked\n%s", job, steal, rep)
			}
			t.Errorf("%s: the unchanged server FAILed:\n%s", job, rep)
		}
	}
	alike := func(what string, a, b float64) {
		if math.Abs(a-b) > 0.05 {
			t.Errorf("%s: %.1f%% of its prompt tokens were served from the cache against %.1f%%", what, 100*a, 100*b)
		}
	}

	if code, out := gate("main", "--config", config("gate", ""), "--mode", "refresh", "--commit", "main0001"); code != 0 {
		t.Fatalf("refresh: exit %d\n%s", code, out)
	}
	base := runs("main", "run")
	code, out := gate("pr", "--config", config("gate", ""), "--mode", "run")
	pr := runs("pr", "run")
	ref := []float64{base[0].cached, base[1].cached, base[2].cached}
	sort.Float64s(ref)
	for i := range pr {
		alike("pr "+pr[i].name, pr[i].cached, ref[1])
		for _, b := range base {
			if pr[i].payloadSeed == b.payloadSeed {
				t.Errorf("pr %s resends the refresh's %s prompts (payload_seed %d)", pr[i].name, b.name, b.payloadSeed)
			}
		}
	}
	verdict("pr", code, out)

	code, out = gate("ab", "--config", config("ab", "baseline-server:\n  url: "+url+"\n"), "--mode", "run")
	cand, arm := runs("ab", "run"), runs("ab", "baseline")
	for i := range cand {
		alike(fmt.Sprintf("ab pair %d", i+1), cand[i].cached, arm[i].cached)
		if cand[i].payloadSeed == arm[i].payloadSeed {
			t.Errorf("ab pair %d: both arms send the prompts of payload_seed %d", i+1, cand[i].payloadSeed)
		}
	}
	verdict("ab", code, out)

	// The control: pr run 2's prompts again, rebuilt from its run.json.
	replay := filepath.Join(dir, "replay")
	res := runCLI(t, 5*time.Minute, "profile", "-m", "testmodel", "-u", url, "--endpoint-type", "chat", "--streaming", "--concurrency", "2",
		"--request-count", "24", "--isl", "384", "--osl", "8", "--extra-inputs", "ignore_eos:true",
		"--random-seed", fmt.Sprint(seed), "--payload-seed", fmt.Sprint(pr[1].payloadSeed), "--artifact-dir", replay)
	if res.code != 0 {
		t.Fatalf("replay: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	again, err := result.Read(replay)
	if err != nil {
		t.Fatal(err)
	}
	pc := again.ToolHealth.PromptCache
	if pc == nil || pc.CachedFraction < 0.9 || again.PayloadSeed != pr[1].payloadSeed {
		t.Fatalf("control: pr run-2's prompts again (payload_seed %d): %+v (does the server cache prompts?)", again.PayloadSeed, pc)
	}
	p50 := again.Metrics[metrics.TTFT].Dist.P50
	t.Logf("control: pr run-2's prompts again: TTFT p50 %.1f ms, cached %.1f%% (%.1f ms fresh)", p50, 100*pc.CachedFraction, pr[1].p50)
	if pr[1].p50 < 4*p50 {
		t.Errorf("pr run-2's TTFT p50 %.1f ms is not far above its replay's %.1f ms", pr[1].p50, p50)
	}
}
