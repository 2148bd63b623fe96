package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// multiRun is AIPerf's --num-profile-runs: the same seeded profile run N
// times, each in profile_runs/run_NNNN, and each metric's statistics across
// the runs in aggregate/profile_export_aiperf_aggregate.json (.csv), with
// the t interval of the mean at --confidence-level.
type multiRun struct {
	runs            int
	confidence      float64
	cooldown        float64
	warmupFirstOnly bool
}

func (m *multiRun) bind(fs interface {
	IntVar(*int, string, int, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
	SetAnnotation(string, string, []string) error
}) {
	fs.IntVar(&m.runs, "num-profile-runs", 1, "run the profile this many times (each its folder under profile_runs/, the same seeded workload) and write each metric's mean and t interval across them in aggregate/ (AIPerf's)")
	fs.Float64Var(&m.confidence, "confidence-level", 0.95, "of --num-profile-runs' intervals")
	fs.Float64Var(&m.cooldown, "profile-run-cooldown-seconds", 0, "seconds between --num-profile-runs' runs")
	fs.BoolVar(&m.warmupFirstOnly, "profile-run-disable-warmup-after-first", true, "warm up before the first of --num-profile-runs' runs only (false: before each)")
	for _, n := range []string{"num-profile-runs", "confidence-level", "profile-run-cooldown-seconds", "profile-run-disable-warmup-after-first"} {
		fs.SetAnnotation(n, config.GroupAnnotation, []string{"Output"})
	}
}

func (m *multiRun) check() error {
	switch {
	case m.runs < 1:
		return fmt.Errorf("--num-profile-runs %d: want at least 1", m.runs)
	case !(m.confidence > 0 && m.confidence < 1):
		return fmt.Errorf("--confidence-level %g: want strictly between 0 and 1", m.confidence)
	case m.cooldown < 0:
		return fmt.Errorf("--profile-run-cooldown-seconds %g: must not be negative", m.cooldown)
	}
	return nil
}

// execute runs the profile m.runs times (run.ProfileRuns) and prints
// the aggregate.
func (m *multiRun) execute(ctx context.Context, p config.Profile, cmdline string, stdout, stderr io.Writer) int {
	agg, err := run.ProfileRuns(ctx, p, run.Repeat{Runs: m.runs, Confidence: m.confidence, Cooldown: m.cooldown, WarmupFirstOnly: m.warmupFirstOnly},
		run.Options{Cmdline: cmdline, Stderr: stderr}, func(i int, dir string) { fmt.Fprintf(stdout, "profile run %d of %d: %s\n", i, m.runs, dir) })
	for _, f := range agg.Failed {
		fmt.Fprintf(stderr, "aiperf-action profile: %s: %s\n", f["label"], f["error"])
	}
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action profile: %v\n", err)
		if agg.Interrupted {
			return ExitInterrupted
		}
		return ExitError
	}
	report.Console(stdout, agg.Runs[len(agg.Runs)-1])
	fmt.Fprintf(stdout, "\nAcross %d runs (%.0f%% t intervals of the mean):\n", len(agg.Runs), 100*m.confidence)
	for _, k := range []string{"time_to_first_token_p50", "time_to_first_token_p99", "inter_token_latency_p50", "request_latency_p99", "output_token_throughput_avg", "request_throughput_avg"} {
		if s, ok := agg.Stats[k]; ok {
			fmt.Fprintf(stdout, "  %-30s %10.3f %s  [%.3f, %.3f]  cv %.1f%%\n", k, s.Mean, s.Unit, s.CILow, s.CIHigh, 100*s.CV)
		}
	}
	fmt.Fprintf(stdout, "Artifacts: %s\n", agg.Dir)
	if agg.Interrupted {
		return ExitInterrupted
	}
	return ExitOK
}
