package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// freePort is a loopback port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// engineServer is a server: mapping that runs this test binary's serve in
// engine mode as its own process (so the gate's controller and the
// engine's clock do not share a Go runtime), at speed (1.1: every step
// 10% slower). Its front end serves a request in 2 ms, so that a closed
// loop holds a TTFT of 200 ms up to about a hundred streams, a capacity
// whole numbers resolve to 1%.
func engineServer(t *testing.T, key string, speed float64) string {
	port := freePort(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`%s:
  command: env %s=serve %s serve --mode engine --preset qwen3-0.6b-h100 --frontend-serial 2ms --speed %g --port %d
  ready-url: http://127.0.0.1:%d/v1/models
`, key, controller.RoleEnv, self, speed, port, port)
}

// The capacity gate, paired A/B on engine mode: a candidate whose engine
// is 10% slower FAILs on capacity (its capacity at TTFT ≤ 200 ms for 95%
// of requests about 9% lower, past the 5% tolerance), and an unchanged
// one PASSes; each side's search, probe by probe in turn, is in the
// results with its run folders.
func TestGateCapacityPairedAB(t *testing.T) {
	skipVerdictUnderShort(t)
	dir := t.TempDir()
	cfg := func(name string, speed float64) string {
		p := filepath.Join(dir, name+".yml")
		os.WriteFile(p, []byte(engineServer(t, "server", speed)+engineServer(t, "baseline-server", 1)+`model: aiperf-sim
seed: 3
scenarios:
  - name: capacity
    streaming: true
    isl: 128
    osl: 2
    extra-inputs: ["ignore_eos:true"]
    request-count: 800
    concurrency-ramp-duration: 1
    search:
      search-by: concurrency
      ttft-sla-ms: 200
      concurrency-min: 32
      search-precision: 0.005
      search-max-iterations: 40
thresholds:
  max-regression: 5%
`), 0o644)
		return p
	}
	gateAt := func(speed float64) func(string) (int, string, string) {
		return func(results string) (int, string, string) {
			var out, errb bytes.Buffer
			code := Gate(context.Background(), []string{"--config", cfg(filepath.Base(results), speed), "--results-dir", results, "--mode", "run"},
				GateOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
			return code, out.String(), errb.String()
		}
	}
	code, out, errs, slower := decide(t, filepath.Join(dir, "slower"), gateAt(1.1), nil)
	rep := read(t, filepath.Join(slower, "report.md"))
	if code != ExitRegression || !strings.Contains(out, "verdict FAIL") || !strings.Contains(rep, "Capacity at TTFT ≤ 200 ms for 95% of requests:") {
		t.Fatalf("10%% slower: exit %d\n%s\n%s\n%s", code, capacityLines(out), rep, errs)
	}
	t.Logf("10%% slower:\n%s", capacityLines(out))
	for _, side := range []string{"search", "baseline-search"} {
		doc, err := run.ReadSearch(filepath.Join(slower, "capacity", side))
		if err != nil || len(doc.Probes) < 5 {
			t.Fatalf("%s: %v", side, err)
		}
		if _, err := os.Stat(filepath.Join(slower, "capacity", side, doc.Probes[0].Dir, "run.json")); err != nil {
			t.Errorf("%s's first probe: %v", side, err)
		}
	}
	_, a, err := gate.ReadArtifact(filepath.Join(slower, gate.ArtifactFile))
	if err != nil || a.Verdict != gate.Fail || a.Scenarios[0].Capacity == nil || a.Scenarios[0].Capacity.Baseline == nil {
		t.Fatalf("comparison.json: %v %+v", err, a)
	}
	code, out, errs, _ = decide(t, filepath.Join(dir, "same"), gateAt(1), nil)
	if code != ExitOK || !strings.Contains(out, "verdict PASS") {
		t.Fatalf("unchanged: exit %d\n%s\n%s", code, capacityLines(out), errs)
	}
	t.Logf("unchanged:\n%s", capacityLines(out))
}

// capacityLines are a gate's log lines of each side's capacity and the
// verdict.
func capacityLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " on the ") && strings.Contains(l, "capacity") || strings.Contains(l, "verdict") || strings.Contains(l, "**capacity**") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// The capacity gate against stored baselines, on the built-in simulator
// in exact mode (fast; its capacity is above any load probed): a refresh
// stores the search (search.json, keyed by the profile without its
// server), the next run finds it and says why its verdict is open (no
// load of either side surely missed its objectives, up to
// concurrency-max), and
// comparison.json carries the capacities; a search scenario's mistakes are
// refused before any load, naming the key.
func TestGateCapacityStoredBaseline(t *testing.T) {
	dir := t.TempDir()
	base := `server:
  simulator: true
  ttft: 5ms
  itl: 1ms
model: sim
seed: 3
baseline:
  store: folder
  path: ` + filepath.Join(dir, "baselines") + `
scenarios:
  - name: cap
    streaming: true
    isl: 8
    osl: 4
    extra-inputs: ["ignore_eos:true"]
    request-count: 40
`
	write := func(name, scenario string) string {
		p := filepath.Join(dir, name+".yml")
		os.WriteFile(p, []byte(base+scenario), 0o644)
		return p
	}
	cfg := write("ok", "    search:\n      search-by: concurrency\n      ttft-sla-ms: 1000\n      concurrency-min: 2\n      concurrency-max: 3\n")
	gateRun := func(cfg, mode, results string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Gate(context.Background(), []string{"--config", cfg, "--results-dir", filepath.Join(dir, results), "--mode", mode},
			GateOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
		return code, out.String(), errb.String()
	}
	code, out, errs := gateRun(cfg, "refresh", "main")
	if code != ExitOK || !strings.Contains(out, "recorded 1 run(s) of cap") {
		t.Fatalf("refresh: exit %d\n%s\n%s", code, out, errs)
	}
	stored, _ := filepath.Glob(filepath.Join(dir, "baselines", "cap", "*", "*.json"))
	if len(stored) != 1 {
		t.Fatalf("stored: %v", stored)
	}
	var doc run.SearchDoc
	if b, err := os.ReadFile(stored[0]); err != nil || json.Unmarshal(b, &doc) != nil || doc.Param != "concurrency" || len(doc.Probes) == 0 {
		t.Fatalf("the stored search: %v %+v", err, doc)
	}
	code, out, errs = gateRun(cfg, "run", "pr")
	rep := read(t, filepath.Join(dir, "pr", "report.md"))
	if code != ExitOK || !strings.Contains(out, "verdict INCONCLUSIVE") || !strings.Contains(rep, "surely missed the objectives: its capacity may be above them all") ||
		!strings.Contains(rep, "Capacity at TTFT ≤ 1000 ms for 95% of requests:") || !strings.Contains(rep, "newest baseline search") {
		t.Fatalf("against the stored search: exit %d\n%s\n%s\n%s", code, out, rep, errs)
	}
	if !strings.Contains(rep, "```mermaid") || !strings.Contains(rep, "attainment against load") {
		t.Errorf("no attainment chart:\n%s", rep)
	}
	_, a, err := gate.ReadArtifact(filepath.Join(dir, "pr", gate.ArtifactFile))
	if err != nil || a.Scenarios[0].Capacity == nil || a.Scenarios[0].Capacity.Unit != "streams" || a.Scenarios[0].Compare == nil {
		t.Fatalf("comparison.json: %v", err)
	}
	for _, c := range []struct{ scenario, want string }{
		{"    concurrency: 8\n    search:\n      ttft-sla-ms: 100\n", `concurrency: the search sets each probe's load`},
		{"    search:\n      ttft-sla-ms: 100\n      bogus: 1\n", `search: unknown flag: --bogus`},
		{"    search:\n      search-by: concurrency\n", `give at least one objective`},
		{"    search:\n      ttft-sla-ms: 100\n      confidence-level: 0.9\n", `confidence-level 0.9: the gate compares capacities at α 0.05`},
		{"    search: 3\n", `search: want a mapping`},
	} {
		code, _, errs := gateRun(write("bad", c.scenario), "run", "bad")
		if code != ExitError || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, want %q in\n%s", c.scenario, code, c.want, errs)
		}
	}
}
