package config

import (
	"strings"
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

// workers.kubernetes: the image and the worker count are needed, the
// server must be a url: the pods reach, and a capacity search stays on
// the runner; each problem named at once.
func TestGateKubernetesWorkers(t *testing.T) {
	t.Parallel()
	ok := "url: http://vllm.perf.svc:8000\nmodel: m\nworkers:\n  kubernetes: {image: ghcr.io/a/b:1, namespace: perf, workers: 4}\nscenarios: [{name: a, concurrency: 8}]\n"
	g, err := ParseGate([]byte(ok), "t.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil || g.Workers.Kubernetes.Workers != 4 || g.Workers.Kubernetes.Namespace != "perf" {
		t.Fatalf("%v %+v", err, g.Workers)
	}
	bad := "server: simulator\nworkers:\n  kubernetes: {workers: 0, timeout: -1s}\nscenarios: [{name: a, search: {ttft-sla-ms: 200}}]\n"
	g, err = ParseGate([]byte(bad), "t.yml")
	if err != nil {
		t.Fatal(err)
	}
	err = g.Validate()
	for _, want := range []string{"workers.kubernetes.image", "workers.kubernetes.workers 0", "timeout -1s", "give it as url:", "scenarios[0]: a capacity search"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
	if _, err := ParseGate([]byte("url: http://x\nworkers:\n  kubernetes: {image: i, workers: 1, nodes: 3}\nscenarios: [{name: a}]\n"), "t.yml"); err == nil || !strings.Contains(err.Error(), "nodes") {
		t.Errorf("an unknown key: %v", err)
	}
}
