package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/dataset"
)

func TestParseSeqDist(t *testing.T) {
	t.Parallel()
	got, err := ParseSeqDist("128,64:25; 512|50,128|10:50;;1024,256:25.5")
	want := []dataset.Bucket{{ISL: 128, OSL: 64, Weight: 25}, {ISL: 512, ISLStd: 50, OSL: 128, OSLStd: 10, Weight: 50}, {ISL: 1024, OSL: 256, Weight: 25.5}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %+v %v, want %+v", got, err, want)
	}
	if b, err := ParseSeqDist("  "); b != nil || err != nil {
		t.Errorf("empty: %v %v", b, err)
	}
	for in, why := range map[string]string{
		"128,64":       "no weight",
		"128,64:0":     "positive number",
		"128,64:-1":    "positive number",
		"128,64:Inf":   "positive number",
		"128,64:NaN":   "positive number",
		"128:5":        "an input and an output length",
		"0,64:5":       "positive whole numbers",
		"12.5,64:5":    "positive whole numbers",
		"128|-1,64:5":  "stddevs not negative",
		"128,64|x:5":   "stddevs not negative",
		";;":           "no buckets",
		"128,64:5;bad": `"bad": no weight`,
	} {
		_, err := ParseSeqDist(in)
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "--sequence-distribution") {
			t.Errorf("%q: %v, want %q named with the flag", in, err, why)
		}
	}
}

// A scenario's mapping becomes flags in sorted order: booleans as
// --flag=v (so false stays false), lists repeat the flag, numbers as YAML
// wrote them; a mapping or an empty value is an error naming the key.
func TestScenarioArgs(t *testing.T) {
	t.Parallel()
	g, err := ParseGate([]byte(`scenarios:
  - name: chat
    streaming: false
    concurrency: 8
    request-rate: 2.5
    header: ["A: 1", "B: 2"]
    model: m
`), "t.yml")
	if err != nil {
		t.Fatal(err)
	}
	s := g.Scenarios[0]
	args, err := ScenarioArgs(s)
	want := []string{"--concurrency", "8", "--header", "A: 1", "--header", "B: 2", "--model", "m", "--request-rate", "2.5", "--streaming=false"}
	if err != nil || !slices.Equal(args, want) || ScenarioName(s) != "chat" {
		t.Fatalf("args %q %v, want %q", args, err, want)
	}
	for src, key := range map[string]string{"{name: a, extra-inputs: {x: 1}}": "extra-inputs: a mapping", "{name: a, model: }": "model has no value"} {
		g, err := ParseGate([]byte("scenarios: ["+src+"]\n"), "t.yml")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ScenarioArgs(g.Scenarios[0]); err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), `scenario "a"`) {
			t.Errorf("%s: %v", src, err)
		}
	}
}

// The action's inputs win over the file; every bad input is reported at
// once; a scenarios filter keeps the named ones in the file's order and
// names any the file lacks.
func TestOverride(t *testing.T) {
	t.Parallel()
	g, err := ParseGate([]byte("server: simulator\nscenarios: [{name: a}, {name: b}, {name: c}]\n"), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]string{"config": "f.yml", "url": "http://127.0.0.1:9/v1", "model": "m2", "repeats": "5", "max-repeats": "9",
		"time-budget": "90s", "fail-on-inconclusive": "true", "baseline-store": "branch", "scenarios": "c, a"}
	if err := g.Override(func(n string) string { return in[n] }); err != nil {
		t.Fatal(err)
	}
	if g.URL != in["url"] || g.Server.Simulator || g.Model != "m2" || g.Repeats != 5 || g.MaxRepeats != 9 || g.TimeBudget != 90*time.Second ||
		!g.Thresholds.FailOnInconclusive || g.Baseline.Store != "branch" || g.Server.ReadyTimeout != DefaultGate.Server.ReadyTimeout {
		t.Errorf("overridden: %+v", g)
	}
	if len(g.Scenarios) != 2 || ScenarioName(g.Scenarios[0]) != "a" || ScenarioName(g.Scenarios[1]) != "c" {
		t.Errorf("scenarios %v", g.Scenarios)
	}
	if err := g.Validate(); err != nil {
		t.Errorf("valid after override: %v", err)
	}

	bad := map[string]string{"config": "f.yml", "repeats": "three", "time-budget": "soon", "fail-on-inconclusive": "maybe",
		"baseline-server-ready-url": "http://127.0.0.1:9/health", "scenarios": "a,zz"}
	err = g.Override(func(n string) string { return bad[n] })
	for _, want := range []string{`repeats "three": not a number`, `time-budget "soon"`, `fail-on-inconclusive "maybe"`, "there is no baseline-server", `"zz" is not in f.yml`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// A baseline server given as a command keeps the file's ready URL; as
// "simulator" it copies the simulated server's settings.
func TestOverrideBaselineServer(t *testing.T) {
	t.Parallel()
	g, _ := ParseGate([]byte("server: {simulator: true, mode: engine, preset: h100-llama8b}\nbaseline-server: {command: old, ready-url: http://127.0.0.1:8/health}\nscenarios: [{name: a}]\n"), "f.yml")
	g.Override(func(n string) string { return map[string]string{"baseline-server": "vllm serve old-build"}[n] })
	if b := g.BaselineServer; b.Command != "vllm serve old-build" || b.ReadyURL != "http://127.0.0.1:8/health" {
		t.Errorf("command: %+v", b)
	}
	g.Override(func(n string) string { return map[string]string{"baseline-server": "simulator"}[n] })
	if b := g.BaselineServer; !b.Simulator || b.Mode != "engine" || b.Preset != "h100-llama8b" || b.Command != "" {
		t.Errorf("simulator: %+v", b)
	}
	if err := g.Validate(); err != nil {
		t.Errorf("valid: %v", err)
	}
}

// Validate names every problem at once, by key.
func TestGateValidateListsAll(t *testing.T) {
	t.Parallel()
	g, err := ParseGate([]byte(`server: {command: "x", mode: fast, speed-jitter: 2}
url: http://127.0.0.1:1
repeats: 0
max-repeats: -1
time-budget: -1s
cache-reset: redis
baseline: {store: s3, keep: 0}
baseline-server: {url: http://127.0.0.1:2, simulator: true}
scenarios: [{name: a}, {name: a}, {name: "../x"}, {concurrency: 1}]
`), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	err = g.Validate()
	for _, want := range []string{`"a" appears twice`, `scenarios[2]: name "../x"`, "scenarios[3]: needs a name", "repeats 0", "time-budget -1s",
		`server.mode "fast"`, "server: mode, preset, speed and speed-jitter are the simulator's", "server.speed-jitter 2", "server.ready-url is needed",
		"exactly one target", `baseline.store "s3"`, "baseline-server: give exactly one", `cache-reset "redis"`, "baseline.keep 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// A file's unknown key or wrong type is an error that names the file and
// the line; a missing file names the path.
func TestLoadGateNamesFileAndLine(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "aiperf.yml")
	os.WriteFile(p, []byte("scenarios: [{name: a}]\nrepeat: 3\n"), 0o644)
	if _, err := LoadGate(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "repeat") {
		t.Errorf("unknown key: %v", err)
	}
	os.WriteFile(p, []byte("server: gpu\n"), 0o644)
	if _, err := LoadGate(p); err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), `want "simulator"`) {
		t.Errorf("server scalar: %v", err)
	}
	if _, err := LoadGate(filepath.Join(t.TempDir(), "none.yml")); err == nil || !strings.Contains(err.Error(), "none.yml") {
		t.Errorf("missing file: %v", err)
	}
}

// Adaptive repeats are on unless the config turns them off: up to three
// times repeats, within a time budget per scenario; `max-repeats: 0` (or
// repeats itself) is a fixed number of runs. The noise history is kept
// beyond the runs compared.
func TestAdaptiveByDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		yaml string
		most int
	}{
		{"", 9},
		{"repeats: 5\n", 15},
		{"repeats: 5\nmax-repeats: 0\n", 5},
		{"repeats: 4\nmax-repeats: 4\n", 4},
		{"max-repeats: 12\n", 12},
	} {
		g, err := ParseGate([]byte("server: simulator\nscenarios: [{name: a}]\n"+c.yaml), "f.yml")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if g.MostRepeats() != c.most || g.TimeBudget != 15*time.Minute {
			t.Errorf("%q: most %d, time budget %s; want %d and 15m", c.yaml, g.MostRepeats(), g.TimeBudget, c.most)
		}
	}
	g, _ := ParseGate([]byte("server: simulator\nscenarios: [{name: a}]\nbaseline: {keep: 30}\n"), "f.yml")
	if g.Baseline.Retain() != 60 {
		t.Errorf("retained %d, want the 60 of history", g.Baseline.Retain())
	}
	g, _ = ParseGate([]byte("server: simulator\nscenarios: [{name: a}]\nbaseline: {keep: 80}\n"), "f.yml")
	if g.Baseline.Retain() != 80 {
		t.Errorf("retained %d, want keep's 80", g.Baseline.Retain())
	}
	g, _ = ParseGate([]byte("server: simulator\nscenarios: [{name: a}]\nbaseline: {history: -1}\n"), "f.yml")
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "baseline.history") {
		t.Errorf("history -1: %v", err)
	}
}
