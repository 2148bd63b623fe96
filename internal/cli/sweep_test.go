package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// AIPerf's parameter sweep from the command line: several --concurrency
// (or --request-rate) values, each a run in its own folder, seeds base+i
// (or one seed), trials in AIPerf's two orders, and the sweep's aggregate
// with the best configurations and the Pareto front.
func TestParameterSweep(t *testing.T) {
	_, url := startSim(t, time.Millisecond, 200*time.Microsecond)
	base := []string{"profile", "-m", "sim", "-u", url, "--streaming", "--request-count", "6", "--isl", "16", "--osl", "4"}
	sweep := func(dir string, args ...string) cliResult {
		return runCLI(t, 2*time.Minute, append(append(append([]string{}, base...), args...), "--artifact-dir", dir)...)
	}
	readSweep := func(dir string) map[string]any {
		b, err := os.ReadFile(filepath.Join(dir, "sweep_aggregate", "profile_export_aiperf_sweep.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	inputs := func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "inputs.json"))
		return string(b)
	}

	dir := filepath.Join(t.TempDir(), "c")
	res := sweep(dir, "--concurrency", "1,2", "4")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	for _, c := range []string{"1", "2", "4"} {
		r, err := result.Read(filepath.Join(dir, "concurrency_"+c))
		if err != nil || r.Counts.OK != 6 || r.Load.Concurrency != atoi(c) || r.Seed != uint64(42+map[string]int{"1": 0, "2": 1, "4": 2}[c]) {
			t.Errorf("concurrency_%s: %v %+v", c, err, r)
		}
	}
	if inputs(filepath.Join(dir, "concurrency_1")) == inputs(filepath.Join(dir, "concurrency_2")) {
		t.Error("values 0 and 1 sent the same prompts: each value's seed is base+i")
	}
	doc := readSweep(dir)
	meta := doc["metadata"].(map[string]any)
	per := doc["per_combination_metrics"].([]any)
	if meta["aggregation_type"] != "sweep" || meta["num_combinations"] != 3.0 || len(per) != 3 || len(doc["pareto_optimal"].([]any)) == 0 {
		t.Errorf("sweep aggregate: %v", doc)
	}
	m := per[0].(map[string]any)["metrics"].(map[string]any)["request_throughput_avg"].(map[string]any)
	if _, has := m["std"]; has || m["mean"] != m["min"] {
		t.Errorf("one trial a value: %v (no spread made up)", m)
	}
	best := doc["best_configurations"].(map[string]any)
	if best["best_throughput"] == nil || best["best_latency_p99"] == nil {
		t.Errorf("best configurations: %v", best)
	}
	if !strings.Contains(res.stdout, "Pareto") || !strings.Contains(res.stdout, "*") {
		t.Errorf("no table\n%s", res.stdout)
	}

	// Trials, independent order, one seed for every value.
	dir = filepath.Join(t.TempDir(), "r")
	if res := sweep(dir, "--request-rate", "20,40", "--num-profile-runs", "2", "--parameter-sweep-mode", "independent", "--parameter-sweep-same-seed", "--random-seed", "7"); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	for _, d := range []string{"request_rate_20/profile_runs/trial_0001", "request_rate_20/profile_runs/trial_0002", "request_rate_40/profile_runs/trial_0002",
		"request_rate_20/aggregate/profile_export_aiperf_aggregate.json", "sweep_aggregate/profile_export_aiperf_sweep.csv"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			t.Error(err)
		}
	}
	if inputs(filepath.Join(dir, "request_rate_20/profile_runs/trial_0001")) != inputs(filepath.Join(dir, "request_rate_40/profile_runs/trial_0002")) {
		t.Error("--parameter-sweep-same-seed: the values sent different prompts")
	}
	if m := readSweep(dir)["per_combination_metrics"].([]any)[1].(map[string]any)["metrics"].(map[string]any)["request_throughput_avg"].(map[string]any); m["ci_low"] == nil {
		t.Errorf("two trials: no interval: %v", m)
	}

	// Repeated order (the default) lays trials outermost.
	dir = filepath.Join(t.TempDir(), "rep")
	if res := sweep(dir, "--concurrency", "1,2", "--num-profile-runs", "2"); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	for _, d := range []string{"profile_runs/trial_0002/concurrency_2", "aggregate/concurrency_1/profile_export_aiperf_aggregate.json"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			t.Error(err)
		}
	}

	// Refused before any load, by name.
	for args, want := range map[string]string{
		"--concurrency 4 --parameter-sweep-mode independent": "--parameter-sweep-mode applies to a sweep",
		"--concurrency 1,2 --parameter-sweep-same-seed":      "needs --random-seed",
		"--concurrency 1,2 --parameter-sweep-mode sideways":  "want repeated or independent",
		"--concurrency 1,1":                    "each positive and given once",
		"--concurrency 1,2 --request-rate 3,4": "one parameter at a time",
		"--concurrency 1,x":                    "not a number",
	} {
		res := runCLI(t, 30*time.Second, append(append([]string{}, base...), strings.Fields(args)...)...)
		if res.code != ExitError || !strings.Contains(res.stderr, want) {
			t.Errorf("%s: exit %d, want %q\n%s", args, res.code, want, res.stderr)
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// AIPerf's prefill-ttft-curve recipe: a run a doubling input length at
// concurrency 1 against engine mode (whose prefill grows with the prompt),
// and sweep_aggregate/prefill_curve.json with the linear fit, its slope
// positive; without --streaming, or with a concurrency of its own, it is
// refused before any load.
func TestPrefillTTFTCurve(t *testing.T) {
	cfg, err := sim.EngineConfig("qwen3-0.6b-h100")
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(cfg)
	t.Cleanup(func() { s.Close() })
	url := serveHandler(t, s)
	dir := filepath.Join(t.TempDir(), "curve")
	base := []string{"profile", "-m", "sim", "-u", url, "--search-recipe", "prefill-ttft-curve", "--isl-min", "256", "--isl-max", "4096",
		"--request-count", "3", "--osl", "2", "--extra-inputs", "ignore_eos:true"}
	res := runCLI(t, 2*time.Minute, append(base, "--streaming", "--artifact-dir", dir)...)
	if res.code != 0 || !strings.Contains(res.stdout, "TTFT(ms) = ") {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	var c run.PrefillCurve
	b, err := os.ReadFile(filepath.Join(dir, "sweep_aggregate", run.PrefillCurveFile))
	if err != nil || json.Unmarshal(b, &c) != nil {
		t.Fatalf("prefill_curve.json: %v", err)
	}
	if c.FitForm != "linear" || len(c.RawPoints) != 5 || c.Coefficients[0] <= 0 || c.RSquared < 0.9 || c.RawPoints[4].ISL != 4096 {
		t.Errorf("the curve: %+v", c)
	}
	t.Logf("%s", strings.TrimSpace(res.stdout[strings.LastIndex(res.stdout, "TTFT(ms)"):]))
	for _, extra := range [][]string{{}, {"--streaming", "--concurrency", "4"}} {
		res := runCLI(t, time.Minute, append(append(base, extra...), "--artifact-dir", filepath.Join(t.TempDir(), "bad"))...)
		if res.code != ExitError || !strings.Contains(res.stderr, "prefill-ttft-curve") {
			t.Errorf("%v: exit %d %s", extra, res.code, res.stderr)
		}
	}
}
