package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/kube"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// WorkerBinEnv names a binary to start as the worker processes instead of
// this one (see run.WorkerBinEnv).
const WorkerBinEnv = run.WorkerBinEnv

func runProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if addr := os.Getenv(kube.ServeResultsEnv); addr != "" {
		// The controller pod of `kube run`: its results stay served after
		// the run until kube run takes them.
		return kube.ServeWhile(ctx, addr, os.Getenv(kube.ResultsDirEnv), os.Getenv(kube.TokenEnv), kube.HoldResults, stderr,
			func(ctx context.Context) int { return profileOnce(ctx, args, stdout, stderr) })
	}
	return profileOnce(ctx, args, stdout, stderr)
}

func profileOnce(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmdline := "aiperf-action profile " + strings.Join(args, " ")
	rest, isls, curve, err := run.PrefillRecipe(args)
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action profile: %v\n", err)
		return ExitError
	}
	if curve {
		args = rest // (AIPerf's prefill-ttft-curve: a sweep of input lengths)
	}
	for _, a := range args {
		if a == "--search-recipe" || strings.HasPrefix(a, "--search-recipe=") {
			// AIPerf's `aiperf profile --search-recipe …` is a search.
			return runSearch(ctx, args, stdout, stderr)
		}
	}
	fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
	p := config.DefaultProfile
	p.Bind(fs)
	var multi multiRun
	multi.bind(fs)
	var sweep sweepFlags
	sweep.bind(fs)
	var profileJSON string
	fs.StringVar(&profileJSON, "profile-json", "", "run this resolved profile (a run.json's or kube's profile.json) as it is")
	fs.MarkHidden("profile-json")
	flags, positional := config.SplitArgs(fs, args)
	if code, ok := parseFlags(fs, flags, stdout, stderr); !ok {
		return code
	}
	if profileJSON != "" {
		if err := loadProfileJSON(fs, &p, profileJSON); err != nil {
			fmt.Fprintf(stderr, "aiperf-action profile: --profile-json %s: %v\n", profileJSON, err)
			return ExitError
		}
		return runResolved(ctx, &p, args, stdout, stderr)
	}
	switch {
	case len(positional) == 1 && !fs.Changed("model") && !fs.Changed("model-names"):
		p.Model = positional[0] // AIPerf's `aiperf profile MODEL`
	case len(positional) > 0:
		fmt.Fprintf(stderr, "aiperf-action profile: unexpected argument %q (one positional argument, the model, when -m is not given)\n", strings.Join(positional, " "))
		return ExitError
	}
	if !fs.Changed("url") {
		p.URL = config.DefaultURL // AIPerf's default
	}
	p.NoteSet(fs)
	var then func(*run.SweepResult) error
	if curve {
		changed := func(f string) bool { return fs.Lookup(f) != nil && fs.Changed(f) }
		if then, err = run.PlanPrefillCurve(&p, changed, isls, stdout); err != nil {
			fmt.Fprintf(stderr, "aiperf-action profile: %v\n", err)
			return ExitError
		}
	}
	if err := multi.check(); err != nil {
		fmt.Fprintf(stderr, "aiperf-action profile: %v\n", err)
		return ExitError
	}
	if p.Sweep != nil || fs.Changed("parameter-sweep-mode") || fs.Changed("parameter-sweep-same-seed") || fs.Changed("parameter-sweep-cooldown-seconds") {
		if err := sweep.check(fs, &p); err != nil {
			fmt.Fprintf(stderr, "aiperf-action profile: %v\n", err)
			return ExitError
		}
		if !fs.Changed("random-seed") {
			p.Seed, p.SeedSet = 42, true // (AIPerf's base seed; value i takes 42+i)
		}
		return sweep.executeThen(ctx, p, multi, cmdline, stdout, stderr, then)
	}
	if multi.runs > 1 {
		if !fs.Changed("random-seed") {
			p.Seed, p.SeedSet = 42, true // (AIPerf's: every run the same workload)
		}
		return multi.execute(ctx, p, "aiperf-action profile "+strings.Join(args, " "), stdout, stderr)
	}
	return runResolved(ctx, &p, args, stdout, stderr)
}

// loadProfileJSON replaces p with the profile in path (the controller of
// `kube run` under the gate), keeping where it listens, how many workers
// join and where the results go; no other flag may be given with it.
func loadProfileJSON(fs *pflag.FlagSet, p *config.Profile, path string) error {
	var other []string
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "profile-json", "worker-listen", "workers", "artifact-dir", "output-artifact-dir":
		default:
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return fmt.Errorf("it is the whole profile: %s cannot be given with it", strings.Join(other, ", "))
	}
	q, err := config.ReadProfileJSON(path)
	if err != nil {
		return err
	}
	q.WorkerListen, q.Workers, q.ArtifactDir = p.WorkerListen, p.Workers, p.ArtifactDir
	if err := q.Validate(); err != nil {
		return err
	}
	*p = q
	return nil
}

// runResolved runs one profile and prints its table.
func runResolved(ctx context.Context, p *config.Profile, args []string, stdout, stderr io.Writer) int {
	res, err := run.Profile(ctx, p, run.Options{
		Cmdline:  "aiperf-action profile " + strings.Join(args, " "),
		Stderr:   stderr,
		Logf:     func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) },
		Progress: report.NewProgress(stdout),
	})
	if res != nil {
		report.Console(stdout, res.Run)
		fmt.Fprintf(stdout, "Artifacts: %s\n", res.Dir)
		if p.AutoPlot {
			autoPlot(res.Dir, stdout, stderr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action profile: %v\n", err)
	}
	return run.ExitCode(err)
}
