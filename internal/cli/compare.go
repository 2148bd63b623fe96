package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/report"
)

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
	c := judge.Default
	var baseline, candidate, history []string
	format, failOnInconclusive := "text", false
	noise, repeats, keep := false, 3, 20
	fs.StringArrayVar(&baseline, "baseline", nil, "baseline run: a run folder, a run.json, or a folder of run folders (repeatable)")
	fs.StringArrayVar(&candidate, "candidate", nil, "candidate run, same forms (repeatable)")
	fs.BoolVar(&noise, "noise", false, "measure the noise instead: the job-to-job and run-to-run noise of each gated statistic in the --baseline runs (a stored history, in its jobs), and the tolerance an unchanged PR passes 4 times in 5 at, unpaired and paired A/B")
	fs.IntVar(&repeats, "repeats", repeats, "with --noise: candidate runs (pairs) a PR makes; the figures are for this and 3x (unpaired) or 7x (paired) as many")
	fs.IntVar(&keep, "keep", keep, "with --noise: baseline runs an unpaired PR is compared with")
	fs.StringArrayVar(&history, "history", nil, "the stored history of the baseline's profile (same forms, repeatable; the gate's baseline folder is one): the job-to-job and run-to-run noise are estimated from all its jobs")
	fs.StringVar(&c.MaxRegression, "max-regression", c.MaxRegression, "default tolerance: how much worse a metric may get")
	fs.StringArrayVar(&c.Metrics, "metric", nil, "gated statistic metric[:stat][:tolerance], e.g. time_to_first_token:p99:10% (repeatable; default TTFT p50/p99, ITL p50/p99, request_latency p99, output_token_throughput)")
	fs.StringVar(&c.NoiseFloor, "noise-floor", c.NoiseFloor, "run-to-run noise assumed with a single baseline run")
	fs.StringVar(&c.JobNoiseFloor, "job-noise-floor", c.JobNoiseFloor, "job-to-job noise assumed at least when the baseline's runs come from fewer than 3 jobs")
	fs.StringVar(&c.JobNoisePrior, "job-noise-prior", c.JobNoisePrior, "with 3 baseline jobs or more, the weight in jobs of the belief that the job-to-job noise is the floor (0: none)")
	fs.Float64Var(&c.Alpha, "alpha", c.Alpha, "one-sided significance level of each test (Hommel-corrected across metrics)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "bootstrap seed")
	fs.IntVar(&c.Resamples, "resamples", c.Resamples, "bootstrap resamples per run")
	fs.StringVar(&c.Estimator, "estimator", c.Estimator, "quantile estimator: hd (Harrell–Davis) | empirical")
	fs.StringVar(&format, "format", format, "text | markdown | json")
	fs.BoolVar(&failOnInconclusive, "fail-on-inconclusive", false, "exit 1 on an inconclusive verdict too")
	fs.BoolVar(&c.AllowMismatch, "allow-mismatch", false, "compare runs whose profile_hash differ")
	fs.StringVar(&c.MaxErrorRate, "max-error-rate", c.MaxErrorRate, "candidate error rate above which the gate fails, whatever the latency")
	if code, ok := parseFlagsArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if len(baseline) == 0 && len(candidate) == 0 && fs.NArg() == 2 {
		baseline, candidate = []string{fs.Arg(0)}, []string{fs.Arg(1)}
	} else if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "aiperf-action compare: unexpected argument %q (use --baseline and --candidate, or two paths)\n", fs.Arg(0))
		return ExitError
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "aiperf-action compare: %v\n", err)
		return ExitError
	}
	st, err := c.Parse()
	switch format {
	case "text", "markdown", "json", "":
	default:
		err = errors.Join(err, fmt.Errorf("--format %q: want text, markdown or json", format))
	}
	switch {
	case noise && len(baseline) == 0:
		err = errors.Join(err, errors.New("--noise: need --baseline runs (a stored history)"))
	case noise && (repeats < 2 || keep < 1):
		err = errors.Join(err, fmt.Errorf("--repeats %d, --keep %d: want at least 2 and 1", repeats, keep))
	case !noise && (len(baseline) == 0 || len(candidate) == 0):
		err = errors.Join(err, errors.New("need --baseline and --candidate runs"))
	}
	if err != nil {
		return fail(err)
	}
	base, err := judge.Load("--baseline", baseline)
	if err != nil {
		return fail(err)
	}
	if noise {
		rows, err := judge.Noise(st, base, repeats, keep)
		if err != nil {
			return fail(err)
		}
		if err := report.Noise(stdout, format, rows); err != nil {
			return fail(err)
		}
		return ExitOK
	}
	cand, err := judge.Load("--candidate", candidate)
	if err != nil {
		return fail(err)
	}
	hist, err := judge.Load("--history", history)
	if err != nil {
		return fail(err)
	}
	rep, err := judge.CompareWithHistory(st, base, cand, hist)
	if err != nil {
		return fail(err)
	}
	if err := report.Compare(stdout, format, rep); err != nil {
		return fail(err)
	}
	if rep.Regressed(failOnInconclusive) {
		return ExitRegression
	}
	return ExitOK
}
