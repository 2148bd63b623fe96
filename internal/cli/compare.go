package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// compareFlags are compare's settings; the gate reads the same ones.
type compareFlags struct {
	Baseline, Candidate []string
	MaxRegression       string
	Metrics             []string
	NoiseFloor          string
	Alpha               float64
	Seed                uint64
	Resamples           int
	Estimator           string
	Format              string
	FailOnInconclusive  bool
	AllowMismatch       bool
	MaxErrorRate        string
}

// DefaultGated is the default set of gated statistics.
var DefaultGated = []string{
	"time_to_first_token:p50", "time_to_first_token:p99",
	"inter_token_latency:p50", "inter_token_latency:p99",
	"request_latency:p99", "output_token_throughput",
}

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
	f := compareFlags{MaxRegression: "5%", NoiseFloor: "5%", Alpha: 0.05, Seed: 1, Resamples: 200, Estimator: "hd", Format: "text", MaxErrorRate: "1%"}
	fs.StringArrayVar(&f.Baseline, "baseline", nil, "baseline run: a run folder, a run.json, or a folder of run folders (repeatable)")
	fs.StringArrayVar(&f.Candidate, "candidate", nil, "candidate run, same forms (repeatable)")
	fs.StringVar(&f.MaxRegression, "max-regression", f.MaxRegression, "default tolerance: how much worse a metric may get")
	fs.StringArrayVar(&f.Metrics, "metric", nil, "gated statistic metric[:stat][:tolerance], e.g. time_to_first_token:p99:10% (repeatable; default TTFT p50/p99, ITL p50/p99, request_latency p99, output_token_throughput)")
	fs.StringVar(&f.NoiseFloor, "noise-floor", f.NoiseFloor, "run-to-run noise assumed with a single baseline run")
	fs.Float64Var(&f.Alpha, "alpha", f.Alpha, "one-sided significance level of each test (Holm-corrected across metrics)")
	fs.Uint64Var(&f.Seed, "seed", f.Seed, "bootstrap seed")
	fs.IntVar(&f.Resamples, "resamples", f.Resamples, "bootstrap resamples per run")
	fs.StringVar(&f.Estimator, "estimator", f.Estimator, "quantile estimator: hd (Harrell–Davis) | empirical")
	fs.StringVar(&f.Format, "format", f.Format, "text | markdown | json")
	fs.BoolVar(&f.FailOnInconclusive, "fail-on-inconclusive", false, "exit 1 on an inconclusive verdict too")
	fs.BoolVar(&f.AllowMismatch, "allow-mismatch", false, "compare runs whose profile_hash differ")
	fs.StringVar(&f.MaxErrorRate, "max-error-rate", f.MaxErrorRate, "candidate error rate above which the gate fails, whatever the latency")
	if code, ok := parseFlagsArgs(fs, args, stderr); !ok {
		return code
	}
	if len(f.Baseline) == 0 && len(f.Candidate) == 0 && fs.NArg() == 2 {
		f.Baseline, f.Candidate = []string{fs.Arg(0)}, []string{fs.Arg(1)}
	} else if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "aiperf-action compare: unexpected argument %q (use --baseline and --candidate, or two paths)\n", fs.Arg(0))
		return ExitError
	}
	rep, err := doCompare(&f)
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action compare: %v\n", err)
		return ExitError
	}
	if err := report.Compare(stdout, f.Format, rep); err != nil {
		fmt.Fprintf(stderr, "aiperf-action compare: %v\n", err)
		return ExitError
	}
	switch {
	case rep.Verdict == compare.Fail:
		return ExitRegression
	case rep.Verdict == compare.Inconclusive && f.FailOnInconclusive:
		return ExitRegression
	}
	return ExitOK
}

// ParsePercent reads "5%", "5" (percent) or "0.05" (a fraction below 1).
func ParsePercent(flag, s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSuffix(t, "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s %q: want a percentage such as 5%%", flag, s)
	}
	if pct || v >= 1 {
		v /= 100
	}
	return v, nil
}

func isRate(metric string) bool {
	switch metric {
	case metrics.OutputTput, metrics.RequestTput, metrics.Goodput:
		return true
	}
	return false
}

// parseSpec reads metric[:stat][:tolerance].
func parseSpec(s string, defTol float64) (compare.Spec, error) {
	parts := strings.Split(s, ":")
	sp := compare.Spec{Metric: parts[0], Tolerance: defTol}
	if sp.Metric == "" {
		return sp, fmt.Errorf("--metric %q: no metric name", s)
	}
	rest := parts[1:]
	if len(rest) > 0 && !strings.HasSuffix(rest[0], "%") && rest[0] != "" {
		if _, err := strconv.ParseFloat(rest[0], 64); err != nil { // a stat, not a number
			sp.Stat = rest[0]
			rest = rest[1:]
		}
	}
	if len(rest) > 1 {
		return sp, fmt.Errorf("--metric %q: want metric[:stat][:tolerance]", s)
	}
	if len(rest) == 1 {
		t, err := ParsePercent("--metric "+s, rest[0])
		if err != nil {
			return sp, err
		}
		sp.Tolerance = t
	}
	if isRate(sp.Metric) || sp.Metric == metrics.PerUser {
		sp.Direction = compare.LowerIsWorse
	}
	if isRate(sp.Metric) {
		if sp.Stat != "" && sp.Stat != "value" {
			return sp, fmt.Errorf("--metric %q: %s is a rate; it has no %s", s, sp.Metric, sp.Stat)
		}
		sp.Stat = "value"
	} else {
		if sp.Stat == "" {
			sp.Stat = "p50"
		}
		if _, ok := sp.Quantile(); !ok {
			return sp, fmt.Errorf("--metric %q: stat %q is not a percentile like p50 or p99", s, sp.Stat)
		}
	}
	return sp, nil
}

// compareSettings are compareFlags, parsed and checked.
type compareSettings struct {
	specs   []compare.Spec
	opt     compare.Options
	maxErr  float64
	allowMM bool
}

// parse checks every flag at once.
func (f *compareFlags) parse() (*compareSettings, error) {
	var errs []error
	tol, err := ParsePercent("--max-regression", f.MaxRegression)
	errs = append(errs, err)
	nf, err := ParsePercent("--noise-floor", f.NoiseFloor)
	errs = append(errs, err)
	maxErr, err := ParsePercent("--max-error-rate", f.MaxErrorRate)
	errs = append(errs, err)
	if !(f.Alpha > 0 && f.Alpha < 0.5) {
		errs = append(errs, fmt.Errorf("--alpha %g: want a level in (0, 0.5)", f.Alpha))
	}
	if f.Resamples < 0 {
		errs = append(errs, fmt.Errorf("--resamples %d: must not be negative", f.Resamples))
	}
	est := compare.HarrellDavis
	switch f.Estimator {
	case "hd", "":
	case "empirical":
		est = compare.Empirical
	default:
		errs = append(errs, fmt.Errorf("--estimator %q: want hd or empirical", f.Estimator))
	}
	switch f.Format {
	case "text", "markdown", "json", "":
	default:
		errs = append(errs, fmt.Errorf("--format %q: want text, markdown or json", f.Format))
	}
	names := f.Metrics
	if len(names) == 0 {
		names = DefaultGated
	}
	st := &compareSettings{maxErr: maxErr, allowMM: f.AllowMismatch,
		opt: compare.Options{Alpha: f.Alpha, NoiseFloor: nf, Seed: f.Seed, Resamples: f.Resamples, Estimator: est}}
	for _, n := range names {
		sp, err := parseSpec(n, tol)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st.specs = append(st.specs, sp)
	}
	return st, errors.Join(errs...)
}

// doCompare loads the runs, checks them and compares.
func doCompare(f *compareFlags) (*report.CompareReport, error) {
	st, err := f.parse()
	if len(f.Baseline) == 0 || len(f.Candidate) == 0 {
		err = errors.Join(err, errors.New("need --baseline and --candidate runs"))
	}
	if err != nil {
		return nil, err
	}
	load := func(flag string, paths []string) ([]result.Loaded, error) {
		var out []result.Loaded
		for _, p := range paths {
			rs, err := result.ReadAll(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", flag, err)
			}
			out = append(out, rs...)
		}
		return out, nil
	}
	base, err := load("--baseline", f.Baseline)
	if err != nil {
		return nil, err
	}
	cand, err := load("--candidate", f.Candidate)
	if err != nil {
		return nil, err
	}
	return compareRuns(st, base, cand)
}

// compareRuns checks that the runs ran one profile and compares them.
func compareRuns(st *compareSettings, base, cand []result.Loaded) (*report.CompareReport, error) {
	rep := &report.CompareReport{ProfileHash: base[0].Run.ProfileHash}
	for _, l := range base {
		rep.BaselineRuns = append(rep.BaselineRuns, l.Path)
	}
	for _, l := range cand {
		rep.CandidateRuns = append(rep.CandidateRuns, l.Path)
	}
	for _, l := range append(append([]result.Loaded{}, base...), cand...) {
		if l.Run.ProfileHash != rep.ProfileHash {
			msg := fmt.Sprintf("%s has profile_hash %s, but %s has %s: they ran different load profiles", l.Path, short(l.Run.ProfileHash), base[0].Path, short(rep.ProfileHash))
			if !st.allowMM {
				return nil, errors.New(msg + " (--allow-mismatch compares them anyway)")
			}
			rep.Warnings = append(rep.Warnings, msg)
		}
	}
	var inputs []compare.Input
	for _, sp := range st.specs {
		in := compare.Input{Spec: sp}
		unit := ""
		for i, set := range [][]result.Loaded{base, cand} {
			for _, l := range set {
				s, u, err := sampleOf(l, sp)
				if err != nil {
					return nil, err
				}
				unit = u
				if i == 0 {
					in.Baseline = append(in.Baseline, s)
				} else {
					in.Candidate = append(in.Candidate, s)
				}
			}
		}
		inputs = append(inputs, in)
		rep.Units = append(rep.Units, unit)
	}
	rep.Comparison = compare.Compare(inputs, st.opt)
	errPairs := func(ls []result.Loaded) [][2]int {
		var out [][2]int
		for _, l := range ls {
			c := l.Run.Counts
			out = append(out, [2]int{c.FailedNotCancelled(), c.Requests})
		}
		return out
	}
	er := compare.ErrorRate(errPairs(base), errPairs(cand), st.maxErr)
	rep.Comparison.Results = append(rep.Comparison.Results, er)
	rep.Units = append(rep.Units, "%")
	rep.Comparison.Verdict = compare.Overall(rep.Comparison.Results)
	rep.Comparison.Warnings = append(rep.Comparison.Warnings, rep.Warnings...)
	return rep, nil
}

func short(h string) string {
	if len(h) > 19 {
		return h[:19] + "…"
	}
	return h
}

// sampleOf extracts one run's data for a spec.
func sampleOf(l result.Loaded, sp compare.Spec) (compare.Sample, string, error) {
	m, ok := l.Run.Metrics[sp.Metric]
	if !ok {
		return compare.Sample{}, "", fmt.Errorf("%s: run.json has no metric %q (non-streaming runs have no token timings)", l.Path, sp.Metric)
	}
	if m.Rate != nil {
		if sp.Stat != "value" {
			return compare.Sample{}, "", fmt.Errorf("%s: %s is a rate", l.Path, sp.Metric)
		}
		return compare.Sample{Value: m.Rate.Value, Rates: m.Rate.Windows}, m.Rate.Unit, nil
	}
	d := m.Dist
	decode := func(s string) (compare.Hist, error) {
		h, err := hdr.Decode([]byte(s))
		if err != nil {
			return compare.Hist{}, fmt.Errorf("%s: metric %s: bad histogram: %w", l.Path, sp.Metric, err)
		}
		return compare.FromHDR(h, d.Scale), nil
	}
	total, err := decode(d.HDR)
	if err != nil {
		return compare.Sample{}, "", err
	}
	s := compare.Sample{Total: total}
	for _, w := range d.Windows {
		h, err := decode(w)
		if err != nil {
			return compare.Sample{}, "", err
		}
		if h.N > 0 {
			s.Windows = append(s.Windows, h)
		}
	}
	return s, d.Unit, nil
}
