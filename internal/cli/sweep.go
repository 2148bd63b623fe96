package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// sweepFlags are AIPerf's parameter sweep's own flags; the sweep itself
// is several values of --concurrency or --request-rate.
type sweepFlags struct {
	mode     string
	sameSeed bool
	cooldown float64
}

func (s *sweepFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&s.mode, "parameter-sweep-mode", run.SweepRepeated, "with a sweep and --num-profile-runs: repeated (every value within trial 1, then trial 2, …) or independent (every trial of a value before the next)")
	fs.BoolVar(&s.sameSeed, "parameter-sweep-same-seed", false, "every value of a sweep with the same seed (needs --random-seed); else value i takes seed+i")
	fs.Float64Var(&s.cooldown, "parameter-sweep-cooldown-seconds", 0, "seconds between a sweep's values")
	for _, n := range []string{"parameter-sweep-mode", "parameter-sweep-same-seed", "parameter-sweep-cooldown-seconds"} {
		fs.SetAnnotation(n, config.GroupAnnotation, []string{"Load generator"})
	}
}

func (s *sweepFlags) check(fs *pflag.FlagSet, p *config.Profile) error {
	return run.CheckSweep(p, run.SweepOptions{Mode: s.mode, SameSeed: s.sameSeed, Cooldown: s.cooldown}, fs.Changed)
}

// executeSweep runs every value of the sweep (run.ProfileSweep) and
// prints a line a value, the Pareto front marked.
func (s *sweepFlags) execute(ctx context.Context, p config.Profile, m multiRun, cmdline string, stdout, stderr io.Writer) int {
	return s.executeThen(ctx, p, m, cmdline, stdout, stderr, nil)
}

// executeThen is execute, with then run on the sweep's result before its
// exit code is decided (a recipe's post-process).
func (s *sweepFlags) executeThen(ctx context.Context, p config.Profile, m multiRun, cmdline string, stdout, stderr io.Writer, then func(*run.SweepResult) error) int {
	res, err := run.ProfileSweep(ctx, p, run.SweepOptions{
		Repeat: run.Repeat{Runs: m.runs, Confidence: m.confidence, Cooldown: m.cooldown, WarmupFirstOnly: m.warmupFirstOnly},
		Mode:   s.mode, SameSeed: s.sameSeed, Cooldown: s.cooldown,
	}, run.Options{Cmdline: cmdline, Stderr: stderr}, func(label, dir string) { fmt.Fprintf(stdout, "sweep %s: %s\n", label, dir) })
	if res != nil {
		for _, f := range res.Failed {
			fmt.Fprintf(stderr, "aiperf-action profile: %s: %s\n", f["label"], f["error"])
		}
		res.WriteTable(stdout)
		fmt.Fprintf(stdout, "Artifacts: %s (sweep_aggregate/profile_export_aiperf_sweep.json)\n", res.Dir)
		if then != nil && !res.Interrupted {
			if terr := then(res); terr != nil && err == nil {
				err = terr
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action profile: %v\n", err)
		if res != nil && res.Interrupted {
			return ExitInterrupted
		}
		return ExitError
	}
	if res.Interrupted {
		return ExitInterrupted
	}
	if len(res.Failed) > 0 {
		return ExitError
	}
	return ExitOK
}
