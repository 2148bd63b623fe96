package config

import (
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/judge"
)

// The thresholds are judge.Config over judge.Default: a key the file
// gives wins, one it leaves out or leaves empty (or an alpha of 0) is the
// default, and fail-on-inconclusive sits beside them.
func TestGateThresholdsOverDefaults(t *testing.T) {
	t.Parallel()
	g, err := ParseGate([]byte("scenarios: [{name: a}]\nthresholds:\n  max-regression: 7%\n  noise-floor: \"\"\n  alpha: 0\n  metrics: [\"time_to_first_token:p50\"]\n  fail-on-inconclusive: true\n"), "t.yml")
	if err != nil {
		t.Fatal(err)
	}
	th := g.Thresholds
	want := judge.Default
	want.MaxRegression, want.Metrics = "7%", []string{"time_to_first_token:p50"}
	if th.MaxRegression != want.MaxRegression || th.NoiseFloor != want.NoiseFloor || th.Alpha != want.Alpha || th.JobNoisePrior != want.JobNoisePrior ||
		th.Seed != want.Seed || th.Resamples != want.Resamples || th.Estimator != want.Estimator || len(th.Metrics) != 1 || !th.FailOnInconclusive {
		t.Fatalf("thresholds %+v, want %+v over the defaults", th, want)
	}
	if _, err := th.Parse(); err != nil {
		t.Fatal(err)
	}
	// compare's own settings are not the file's.
	if _, err := ParseGate([]byte("scenarios: [{name: a}]\nthresholds:\n  resamples: 5\n"), "t.yml"); err == nil {
		t.Fatal("thresholds.resamples accepted")
	}
}
