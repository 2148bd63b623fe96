package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// demoRuns are the demo's two profiles, the seed's central example: one
// request at a time with 128 tokens in and out, and Poisson arrivals at 10
// requests/s with prompts around 512 tokens, where requests compete for
// the engine and prefill overlaps decode.
var demoRuns = []struct {
	name, about string
	args        []string
}{
	{"a-c1", "(a) concurrency 1, ISL 128, OSL 128", []string{"--concurrency", "1", "--request-count", "6", "--isl", "128", "--osl", "128"}},
	{"b-poisson", "(b) Poisson 10 req/s, ISL ~512, OSL 128", []string{"--request-rate", "10", "--arrival-pattern", "poisson", "--request-count", "80",
		"--isl", "512", "--synthetic-input-tokens-stddev", "64", "--osl", "128"}},
}

// runDemo starts the simulator in engine mode in process and runs both
// profiles against it, then shows them side by side. Extra args are
// profile flags that override the demo's, in both runs.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := sim.EngineConfig(sim.DefaultPreset)
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action demo: %v\n", err)
		return ExitError
	}
	about, _ := sim.PresetAbout(sim.DefaultPreset)
	sv, err := sim.Start(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action demo: %v\n", err)
		return ExitError
	}
	defer sv.Stop()
	fmt.Fprintf(stdout, "demo: simulator in engine mode, preset %s (%s) on %s; this is a simulation, not a model\n\n", sim.DefaultPreset, about, sv.URL)
	var done, heads []string
	for _, d := range demoRuns {
		dir := filepath.Join("artifacts", "demo", d.name)
		fmt.Fprintf(stdout, "demo: %s\n", d.about)
		full := append([]string{"-m", "aiperf-sim", "--endpoint-type", "chat", "--streaming", "--extra-inputs", "ignore_eos:true",
			"--random-seed", "42", "--artifact-dir", dir, "-u", sv.URL}, d.args...)
		if code := runProfile(ctx, append(full, args...), stdout, stderr); code != ExitOK {
			return code
		}
		done, heads = append(done, dir), append(heads, d.about)
		fmt.Fprintln(stdout)
	}
	if err := report.SideBySide(stdout, heads, done); err != nil {
		fmt.Fprintf(stdout, "demo: %v\n", err)
		return ExitError
	}
	fmt.Fprintf(stdout, "\nruns in %s; `aiperf-action compare` takes run.json files or folders; `aiperf-action report %s -o report.html` draws them\n", filepath.Join("artifacts", "demo"), filepath.Join("artifacts", "demo"))
	return ExitOK
}
