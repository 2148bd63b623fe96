package judge

import (
	"errors"
	"fmt"
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// Report is a comparison with what it compared.
type Report struct {
	*compare.Comparison
	ProfileHash   string   `json:"profile_hash"`
	BaselineRuns  []string `json:"baseline_runs"`
	CandidateRuns []string `json:"candidate_runs"`
	Units         []string `json:"units"` // per result, the unit of baseline and candidate
	Warnings      []string `json:"-"`     // already folded into Comparison.Warnings
}

// Regressed reports whether the comparison fails the gate: a regression,
// or with strict an inconclusive verdict too.
func (r *Report) Regressed(strict bool) bool {
	return r.Verdict == compare.Fail || (strict && r.Verdict == compare.Inconclusive)
}

// Load reads the runs at each path (see result.ReadAll); errors name flag.
func Load(flag string, paths []string) ([]result.Loaded, error) {
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

// Compare checks that the runs ran one profile and compares them: every
// gated statistic, then the error rate.
func Compare(st *Settings, base, cand []result.Loaded) (*Report, error) {
	return CompareWithHistory(st, base, cand, nil)
}

// CompareWithHistory is Compare with the stored history of the baseline's
// profile on its testbed (the baseline's runs among them, in their jobs):
// the job-to-job and run-to-run noise are estimated from all of its jobs
// when they are more than the baseline's. A history run of another profile
// or without a gated statistic leaves the history out, and says so.
func CompareWithHistory(st *Settings, base, cand, hist []result.Loaded) (*Report, error) {
	if len(base) == 0 || len(cand) == 0 {
		return nil, errors.New("need baseline and candidate runs")
	}
	rep := &Report{ProfileHash: base[0].Run.ProfileHash}
	for _, l := range base {
		rep.BaselineRuns = append(rep.BaselineRuns, l.Path)
	}
	for _, l := range cand {
		rep.CandidateRuns = append(rep.CandidateRuns, l.Path)
	}
	for _, l := range append(append([]result.Loaded{}, base...), cand...) {
		if l.Run.ProfileHash != rep.ProfileHash {
			msg := fmt.Sprintf("%s has profile_hash %s, but %s has %s: they ran different load profiles", l.Path, short(l.Run.ProfileHash), base[0].Path, short(rep.ProfileHash))
			if !st.AllowMismatch {
				return nil, errors.New(msg + " (--allow-mismatch compares them anyway)")
			}
			rep.Warnings = append(rep.Warnings, msg)
		}
	}
	for _, l := range hist {
		if l.Run.ProfileHash != rep.ProfileHash && !st.AllowMismatch {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("the stored history is left out of the noise estimate: %s has profile_hash %s", l.Path, short(l.Run.ProfileHash)))
			hist = nil
			break
		}
	}
	var inputs []compare.Input
	for _, sp := range st.Specs {
		in := compare.Input{Spec: sp, Paired: st.Paired}
		for _, l := range hist {
			s, _, err := sampleOf(l, sp)
			if err != nil {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: the stored history is left out of its noise estimate: %v", sp.Name(), err))
				in.History = nil
				break
			}
			in.History = append(in.History, s)
		}
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
	rep.Comparison = compare.Compare(inputs, st.Options)
	er := compare.ErrorRate(errorPairs(base), errorPairs(cand), st.MaxErrorRate)
	rep.Comparison.Results = append(rep.Comparison.Results, er)
	rep.Units = append(rep.Units, "%")
	rep.Comparison.Verdict = compare.Overall(rep.Comparison.Results)
	rep.Comparison.Warnings = append(rep.Comparison.Warnings, rep.Warnings...)
	return rep, nil
}

// errorPairs are each run's failed requests (cancellations not counted)
// and requests.
func errorPairs(ls []result.Loaded) [][2]int {
	var out [][2]int
	for _, l := range ls {
		c := l.Run.Counts
		out = append(out, [2]int{c.FailedNotCancelled(), c.Requests})
	}
	return out
}

func short(h string) string {
	if len(h) > 19 {
		return h[:19] + "…"
	}
	return h
}

// sampleOf extracts one run's data for a spec: a rate and its windows, or
// a distribution's whole histogram and its windows'. A field the statistic
// needs that is missing or impossible is an error naming the file and the
// field, never a NaN further on.
func sampleOf(l result.Loaded, sp compare.Spec) (compare.Sample, string, error) {
	m, ok := l.Run.Metrics[sp.Metric]
	if !ok {
		return compare.Sample{}, "", fmt.Errorf("%s: run.json has no metric %q (non-streaming runs have no token timings)", l.Path, sp.Metric)
	}
	field := func(name, problem string) error {
		return fmt.Errorf("%s: run.json metrics.%s.%s %s", l.Path, sp.Metric, name, problem)
	}
	if m.Rate != nil {
		if sp.Stat != "value" {
			return compare.Sample{}, "", fmt.Errorf("%s: %s is a rate", l.Path, sp.Metric)
		}
		if !finitePositive(m.Rate.Value) {
			return compare.Sample{}, "", field("value", fmt.Sprintf("is %v: a rate must be a positive number", m.Rate.Value))
		}
		for i, w := range m.Rate.Windows {
			if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
				return compare.Sample{}, "", field(fmt.Sprintf("windows[%d]", i), fmt.Sprintf("is %v: a window's rate must be a number, not negative", w))
			}
		}
		return compare.Sample{Value: m.Rate.Value, Rates: m.Rate.Windows, Job: l.Run.Job}, m.Rate.Unit, nil
	}
	d := m.Dist
	if d == nil {
		return compare.Sample{}, "", field("hdr", "is missing: neither a distribution nor a rate")
	}
	switch {
	case d.HDRUnit == "":
		return compare.Sample{}, "", field("hdr_unit", "is missing: the histogram's unit is unknown")
	case !finitePositive(d.Scale):
		return compare.Sample{}, "", field("scale", fmt.Sprintf("is %v: want the positive number the histogram's values are divided by", d.Scale))
	case d.HDR == "":
		return compare.Sample{}, "", field("hdr", "is missing")
	}
	decode := func(name, s string) (compare.Hist, error) {
		h, err := hdr.Decode([]byte(s))
		if err != nil {
			return compare.Hist{}, field(name, fmt.Sprintf("is not a histogram: %v", err))
		}
		out := compare.FromHDR(h, d.Scale)
		for _, v := range out.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return compare.Hist{}, field(name, fmt.Sprintf("decodes to %v with scale %v", v, d.Scale))
			}
		}
		return out, nil
	}
	total, err := decode("hdr", d.HDR)
	if err != nil {
		return compare.Sample{}, "", err
	}
	if total.N == 0 {
		return compare.Sample{}, "", field("hdr", "holds no values")
	}
	if hi := total.Values[len(total.Values)-1]; hi == 0 {
		return compare.Sample{}, "", field("hdr", fmt.Sprintf("decodes to zero everywhere with scale %v", d.Scale))
	}
	s := compare.Sample{Total: total, Job: l.Run.Job}
	for i, w := range d.Windows {
		h, err := decode(fmt.Sprintf("windows[%d]", i), w)
		if err != nil {
			return compare.Sample{}, "", err
		}
		if h.N > 0 {
			s.Windows = append(s.Windows, h)
		}
	}
	return s, d.Unit, nil
}

func finitePositive(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
