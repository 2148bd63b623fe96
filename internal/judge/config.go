// Package judge turns run.json files into the statistics that compare
// judges: it parses the gated metric specs, decodes each run's histograms
// and windows, refuses runs of different load profiles, and adds the
// absolute error-rate gate. compare does the statistics and knows nothing
// of files; judge knows the files and does no statistics.
package judge

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/percent"
)

// Config is a comparison as the user asked for it: compare's flags, or a
// gate config's thresholds (its yaml keys; the rest are compare's flags
// alone), bound into the same fields.
type Config struct {
	MaxRegression string   `yaml:"max-regression"`  // default tolerance: how much worse a metric may get
	MaxErrorRate  string   `yaml:"max-error-rate"`  // candidate error rate above which the gate fails, whatever the latency
	NoiseFloor    string   `yaml:"noise-floor"`     // run-to-run noise assumed with a single baseline run
	JobNoiseFloor string   `yaml:"job-noise-floor"` // job-to-job noise assumed at least when the baseline's runs come from fewer than 3 jobs
	JobNoisePrior string   `yaml:"job-noise-prior"` // the weight, in jobs, of the belief that the job-to-job noise is JobNoiseFloor (3 jobs or more)
	Alpha         float64  `yaml:"alpha"`           // one-sided level of each test, Hommel-corrected across metrics
	Metrics       []string `yaml:"metrics"`         // gated statistics metric[:stat][:tolerance]; empty: DefaultGated
	Seed          uint64   `yaml:"-"`               // bootstrap seed
	Resamples     int      `yaml:"-"`               // bootstrap resamples per run
	Estimator     string   `yaml:"-"`               // hd (Harrell–Davis) | empirical
	AllowMismatch bool     `yaml:"-"`               // compare runs whose profile_hash differ
}

// Default is the one set of defaults, compare.DefaultOptions with a 5%
// tolerance and a 1% error-rate limit; compare's flags and the gate config
// fall back to it.
var Default = Config{
	MaxRegression: "5%",
	NoiseFloor:    strconv.FormatFloat(100*compare.DefaultOptions.NoiseFloor, 'g', -1, 64) + "%",
	JobNoiseFloor: strconv.FormatFloat(100*compare.DefaultOptions.JobNoiseFloor, 'g', -1, 64) + "%",
	JobNoisePrior: strconv.FormatFloat(compare.DefaultOptions.JobNoisePrior, 'g', -1, 64),
	MaxErrorRate:  "1%",
	Alpha:         compare.DefaultOptions.Alpha,
	Seed:          compare.DefaultOptions.Seed,
	Resamples:     compare.DefaultOptions.Resamples,
	Estimator:     "hd",
}

// DefaultGated is the default set of gated statistics.
var DefaultGated = []string{
	"time_to_first_token:p50", "time_to_first_token:p99",
	"inter_token_latency:p50", "inter_token_latency:p99",
	"request_latency:p99", "output_token_throughput",
}

// Settings are a Config, parsed and checked.
type Settings struct {
	Specs         []compare.Spec
	Options       compare.Options
	MaxErrorRate  float64
	AllowMismatch bool
	Paired        bool // baseline run i ran next to candidate run i (paired A/B)
}

// Parse checks every field at once; each problem names its flag.
func (c *Config) Parse() (*Settings, error) {
	var errs []error
	tol, err := percent.Parse("--max-regression", c.MaxRegression)
	errs = append(errs, err)
	nf, err := percent.Parse("--noise-floor", c.NoiseFloor)
	errs = append(errs, err)
	jnf := compare.DefaultOptions.JobNoiseFloor
	if c.JobNoiseFloor != "" {
		jnf, err = percent.Parse("--job-noise-floor", c.JobNoiseFloor)
		errs = append(errs, err)
	}
	jnp := compare.DefaultOptions.JobNoisePrior
	if c.JobNoisePrior != "" {
		v, err := strconv.ParseFloat(c.JobNoisePrior, 64)
		if err != nil || !(v >= 0 && v <= 1000) {
			errs = append(errs, fmt.Errorf("--job-noise-prior %q: want a number of jobs from 0 to 1000", c.JobNoisePrior))
		} else {
			jnp = v
		}
	}
	maxErr, err := percent.Parse("--max-error-rate", c.MaxErrorRate)
	errs = append(errs, err)
	if !(c.Alpha > 0 && c.Alpha < 0.5) {
		errs = append(errs, fmt.Errorf("--alpha %g: want a level in (0, 0.5)", c.Alpha))
	}
	if c.Resamples < 0 {
		errs = append(errs, fmt.Errorf("--resamples %d: must not be negative", c.Resamples))
	}
	est := compare.HarrellDavis
	switch c.Estimator {
	case "hd", "":
	case "empirical":
		est = compare.Empirical
	default:
		errs = append(errs, fmt.Errorf("--estimator %q: want hd or empirical", c.Estimator))
	}
	names := c.Metrics
	if len(names) == 0 {
		names = DefaultGated
	}
	st := &Settings{MaxErrorRate: maxErr, AllowMismatch: c.AllowMismatch,
		Options: compare.Options{Alpha: c.Alpha, NoiseFloor: nf, JobNoiseFloor: jnf, JobNoisePrior: jnp, Seed: c.Seed, Resamples: c.Resamples, Estimator: est}}
	for _, n := range names {
		sp, err := ParseSpec(n, tol)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st.Specs = append(st.Specs, sp)
	}
	return st, errors.Join(errs...)
}

// ParseSpec reads metric[:stat][:tolerance]; the metric's direction and
// whether it is a rate come from metrics.Facts.
func ParseSpec(s string, defTol float64) (compare.Spec, error) {
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
		t, err := percent.Parse("--metric "+s, rest[0])
		if err != nil {
			return sp, err
		}
		sp.Tolerance = t
	}
	fact, ok := metrics.Lookup(sp.Metric)
	if !ok {
		// A typo would pass every gate with no baseline and fail every later
		// one on the baseline file: refuse it here, before any run.
		return sp, fmt.Errorf("--metric %q: no metric %q (known: %s)", s, sp.Metric, strings.Join(metrics.Order, ", "))
	}
	if fact.HigherIsBetter {
		sp.Direction = compare.LowerIsWorse
	}
	if fact.Rate {
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
