package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/config"
)

var updateFingerprints = flag.Bool("update", false, "rewrite testdata/fingerprints.txt")

// TestPlanFingerprints pins the plan that a seed and flags make: its
// profile_hash and the sha256 of its inputs.json, for a profile of each
// shape. A change here changes every stored baseline's key, so it must be
// on purpose (go test ./internal/schedule -run Fingerprints -update).
func TestPlanFingerprints(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.jsonl")
	os.WriteFile(file, []byte(`{"text":"hello there world","timestamp":0}
{"input_length":12,"output_length":3,"timestamp":40}
{"input_length":5,"timestamp":15}
`), 0o644)
	cases := []struct {
		name string
		set  func(p *config.Profile)
	}{
		{"closed-count", func(p *config.Profile) {}},
		{"closed-duration-cycle", func(p *config.Profile) { p.BenchmarkDuration, p.NumDatasetEntries, p.RequestCount = 2, 7, 0 }},
		{"open-poisson-ramp", func(p *config.Profile) {
			p.RequestRate, p.BenchmarkDuration, p.RateRampDuration, p.RequestCount = 40, 1.5, 0.5, 0
		}},
		{"open-gamma-count-ceiling", func(p *config.Profile) {
			p.RequestRate, p.ArrivalPattern, p.ArrivalSmoothness, p.Concurrency, p.ConcurrencySet = 30, "gamma", 0.5, 3, true
		}},
		{"warmup-cancel", func(p *config.Profile) {
			p.WarmupRequestCount, p.CancellationRate, p.CancellationDelay = 5, 30, 0.2
		}},
		{"repeat-2", func(p *config.Profile) { p.Repeat = 2 }},
		{"input-file", func(p *config.Profile) { p.InputFile = file }},
		{"fixed-schedule", func(p *config.Profile) { p.InputFile, p.FixedSchedule, p.FixedScheduleAutoOffset = file, true, true }},
		{"completions-extra", func(p *config.Profile) {
			p.EndpointType, p.Streaming, p.ExtraInputs = "completions", true, []string{"ignore_eos:true"}
		}},
	}
	var b strings.Builder
	for _, c := range cases {
		p := profile()
		c.set(p)
		pl, err := Build(p, 42)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		in, err := inputsJSON(pl)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sum := sha256.Sum256(in)
		fmt.Fprintf(&b, "%s %s inputs:%s\n", c.name, pl.Hash(p), hex.EncodeToString(sum[:8]))
	}
	checkPlans(t, "fingerprints.txt", b.String())
}

// checkPlans checks got against testdata/name (-update rewrites it).
func checkPlans(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateFingerprints {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("the plans changed:\ngot\n%swant\n%s", got, want)
	}
}
