package judge

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/compare"
)

// A spec's direction and kind come from the metric facts: throughputs get
// worse as they fall, latencies as they rise; a rate has no percentile.
func TestParseSpec(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in        string
		stat      string
		tol       float64
		direction compare.Direction
		err       string
	}{
		{in: "time_to_first_token", stat: "p50", tol: 0.05},
		{in: "inter_token_latency:p99:10%", stat: "p99", tol: 0.10},
		{in: "output_token_throughput", stat: "value", tol: 0.05, direction: compare.LowerIsWorse},
		{in: "request_throughput:3", stat: "value", tol: 0.03, direction: compare.LowerIsWorse},
		{in: "output_token_throughput_per_user:p10", stat: "p10", tol: 0.05, direction: compare.LowerIsWorse},
		{in: "goodput:p99", err: "is a rate"},
		{in: "request_latency:median", err: "not a percentile"},
		{in: ":p50", err: "no metric name"},
		{in: "a:p50:5%:x", err: "metric[:stat][:tolerance]"},
	}
	for _, c := range cases {
		sp, err := ParseSpec(c.in, 0.05)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || sp.Stat != c.stat || sp.Tolerance != c.tol || sp.Direction != c.direction {
			t.Errorf("%s: %+v %v", c.in, sp, err)
		}
	}
}

// The defaults are compare's, and a default config parses.
func TestDefaultIsCompares(t *testing.T) {
	t.Parallel()
	st, err := Default.Parse()
	if err != nil {
		t.Fatal(err)
	}
	o := compare.DefaultOptions
	got := st.Options
	if got.Alpha != o.Alpha || got.NoiseFloor != o.NoiseFloor || got.JobNoiseFloor != o.JobNoiseFloor || got.JobNoisePrior != o.JobNoisePrior || got.Seed != o.Seed || got.Resamples != o.Resamples || reflect.ValueOf(got.Estimator).Pointer() != reflect.ValueOf(o.Estimator).Pointer() {
		t.Errorf("options %+v, compare.DefaultOptions %+v", st.Options, o)
	}
	if len(st.Specs) != len(DefaultGated) || st.MaxErrorRate != 0.01 {
		t.Errorf("%d specs, max error rate %v", len(st.Specs), st.MaxErrorRate)
	}
}

// A job-noise prior is a number of jobs; anything else names the flag.
func TestJobNoisePrior(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want float64
		err  bool
	}{{"0", 0, false}, {"3.5", 3.5, false}, {"", compare.DefaultOptions.JobNoisePrior, false}, {"-1", 0, true}, {"2%", 0, true}, {"NaN", 0, true}} {
		cfg := Default
		cfg.JobNoisePrior = c.in
		st, err := cfg.Parse()
		switch {
		case c.err && (err == nil || !strings.Contains(err.Error(), "--job-noise-prior")):
			t.Errorf("%q: error %v, want one naming --job-noise-prior", c.in, err)
		case !c.err && (err != nil || st.Options.JobNoisePrior != c.want):
			t.Errorf("%q: %v, %v; want %v", c.in, st, err, c.want)
		}
	}
}
