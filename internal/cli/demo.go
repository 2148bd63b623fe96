package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action demo: listen on loopback: %v\n", err)
		return ExitError
	}
	p, err := engine.PresetNamed(engine.DefaultPreset)
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action demo: %v\n", err)
		return ExitError
	}
	cfg, _ := sim.EngineConfig(p.Name)
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(sctx, ln, sim.New(cfg)) }()
	defer func() { stop(); <-served }()
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "demo: simulator in engine mode, preset %s (%s) on %s; this is a simulation, not a model\n\n", p.Name, p.About, url)
	var done []string
	for _, d := range demoRuns {
		dir := filepath.Join("artifacts", "demo", d.name)
		fmt.Fprintf(stdout, "demo: %s\n", d.about)
		full := append([]string{"-m", "aiperf-sim", "--endpoint-type", "chat", "--streaming", "--extra-inputs", "ignore_eos:true",
			"--random-seed", "42", "--artifact-dir", dir, "-u", url}, d.args...)
		if code := runProfile(ctx, append(full, args...), stdout, stderr); code != ExitOK {
			return code
		}
		done = append(done, dir)
		fmt.Fprintln(stdout)
	}
	return demoTable(stdout, done)
}

// demoTable shows the two runs side by side.
func demoTable(w io.Writer, dirs []string) int {
	fmt.Fprintf(w, "| | %s | %s |\n|---|---|---|\n", demoRuns[0].about, demoRuns[1].about)
	var runs []*result.Run
	for _, d := range dirs {
		r, err := result.Read(d)
		if err != nil {
			fmt.Fprintf(w, "demo: %v\n", err)
			return ExitError
		}
		runs = append(runs, r)
	}
	row := func(name string, f func(r *result.Run) string) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", name, f(runs[0]), f(runs[1]))
	}
	dist := func(metric string, pick func(d *metrics.Dist) float64) func(*result.Run) string {
		return func(r *result.Run) string {
			m, ok := r.Metrics[metric]
			if !ok || m.Dist == nil {
				return "n/a"
			}
			return fmt.Sprintf("%.3g", pick(m.Dist))
		}
	}
	row("TTFT p50 (ms)", dist("time_to_first_token", func(d *metrics.Dist) float64 { return d.P50 }))
	row("TTFT p99 (ms)", dist("time_to_first_token", func(d *metrics.Dist) float64 { return d.P99 }))
	row("TTFT p99 / p50", dist("time_to_first_token", func(d *metrics.Dist) float64 { return d.P99 / d.P50 }))
	row("ITL p50 (ms)", dist("inter_token_latency", func(d *metrics.Dist) float64 { return d.P50 }))
	row("ITL p99 (ms)", dist("inter_token_latency", func(d *metrics.Dist) float64 { return d.P99 }))
	row("output tokens/s", func(r *result.Run) string {
		if m, ok := r.Metrics["output_token_throughput"]; ok && m.Rate != nil {
			return fmt.Sprintf("%.0f", m.Rate.Value)
		}
		return "n/a"
	})
	fmt.Fprintf(w, "\nruns in %s; `aiperf-action compare` takes run.json files or folders\n", filepath.Join("artifacts", "demo"))
	return ExitOK
}
