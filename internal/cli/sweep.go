package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

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
		fmt.Fprintf(stdout, "\n%-16s %12s %14s %14s %14s  %s\n", res.Param, "requests/s", "output tok/s", "TTFT p99 ms", "latency p99 ms", "Pareto")
		for i, v := range res.Values {
			if len(v.Runs) == 0 {
				fmt.Fprintf(stdout, "%-16s %12s\n", strconv.FormatFloat(v.Value, 'g', -1, 64), "(no run)")
				continue
			}
			get := func(k string) string {
				if st, ok := v.Stats[k]; ok {
					return strconv.FormatFloat(st.Mean, 'f', 2, 64)
				}
				return "-"
			}
			mark := ""
			if slices.Contains(res.Pareto, i) {
				mark = "*"
			}
			fmt.Fprintf(stdout, "%-16s %12s %14s %14s %14s  %s\n", strconv.FormatFloat(v.Value, 'g', -1, 64), get("request_throughput_avg"),
				get("output_token_throughput_avg"), get("time_to_first_token_p99"), get("request_latency_p99"), mark)
		}
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

// prefillRecipe takes AIPerf's `--search-recipe prefill-ttft-curve` and
// its --isl-min and --isl-max (256 and 32768 unless given, its documented
// example's) out of args; ok says it was there.
func prefillRecipe(args []string) (rest []string, isls []float64, ok bool, err error) {
	lo, hi := 256, 32768
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, inline := strings.Cut(a, "=")
		switch name {
		case "--search-recipe", "--isl-min", "--isl-max":
		default:
			rest = append(rest, a)
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				return nil, nil, false, fmt.Errorf("%s needs a value", name)
			}
			i++
			val = args[i]
		}
		switch name {
		case "--search-recipe":
			if val != "prefill-ttft-curve" {
				return nil, nil, false, nil
			}
			ok = true
		case "--isl-min", "--isl-max":
			n, perr := strconv.Atoi(val)
			if perr != nil {
				return nil, nil, false, fmt.Errorf("%s %q: want a whole number of tokens", name, val)
			}
			if name == "--isl-min" {
				lo = n
			} else {
				hi = n
			}
		}
	}
	if !ok {
		return nil, nil, false, nil
	}
	isls, err = run.PrefillISLs(lo, hi)
	return rest, isls, true, err
}

// prefillCurve is the recipe's sweep: its input lengths at concurrency 1,
// then the fit (run.FitPrefillCurve) in sweep_aggregate/prefill_curve.json.
func prefillCurve(p *config.Profile, fs *pflag.FlagSet, isls []float64) (func(*run.SweepResult) error, error) {
	if !p.Streaming {
		return nil, fmt.Errorf("--search-recipe prefill-ttft-curve needs --streaming (a first token is only seen in a stream)")
	}
	for _, f := range []string{"concurrency", "request-rate", "isl", "synthetic-input-tokens-mean", "input-file", "fixed-schedule"} {
		if fs.Lookup(f) != nil && fs.Changed(f) {
			return nil, fmt.Errorf("--search-recipe prefill-ttft-curve sets each run's input length and a concurrency of 1: leave out --%s", f)
		}
	}
	p.Concurrency, p.ConcurrencySet = 1, true
	p.ISLMean = int(isls[0])
	p.Sweep = &config.Sweep{Param: config.SweepISL, Values: isls}
	return func(res *run.SweepResult) error {
		c, err := run.FitPrefillCurve(res)
		if err != nil {
			return err
		}
		path, err := run.WritePrefillCurve(res.Dir, c)
		if err != nil {
			return err
		}
		terms := map[string]string{"linear": "%.4g × ISL + %.4g", "quadratic": "%.4g × ISL² + %.4g × ISL + %.4g"}[c.FitForm]
		args := make([]any, len(c.Coefficients))
		for i, v := range c.Coefficients {
			args[i] = v
		}
		note := ""
		if c.BelowFloor {
			note = fmt.Sprintf(" (below the %.2f floor: a weak fit)", run.CurveFloor)
		}
		fmt.Fprintf(fs.Output(), "TTFT(ms) = "+terms+", %s fit, r² %.3f%s: %s\n", append(args, c.FitForm, c.RSquared, note, path)...)
		return nil
	}, nil
}
