package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// Direction says which way a metric gets worse.
type Direction int

const (
	HigherIsWorse Direction = iota // latencies
	LowerIsWorse                   // throughputs
)

// MarshalJSON writes the direction as "higher_is_worse" or "lower_is_worse".
func (d Direction) MarshalJSON() ([]byte, error) {
	if d == LowerIsWorse {
		return []byte(`"lower_is_worse"`), nil
	}
	return []byte(`"higher_is_worse"`), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Direction) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"lower_is_worse"`:
		*d = LowerIsWorse
	case `"higher_is_worse"`:
		*d = HigherIsWorse
	default:
		return fmt.Errorf("direction %s: want \"higher_is_worse\" or \"lower_is_worse\"", b)
	}
	return nil
}

// Verdict is a three-way outcome.
type Verdict string

const (
	Pass         Verdict = "pass"
	Fail         Verdict = "fail"
	Inconclusive Verdict = "inconclusive"
	// NotGated is a statistic the runs are too small to estimate (a p99
	// from runs of a few hundred requests): shown, never gated.
	NotGated Verdict = "not-gated"
)

// TailSamples is how many samples a run must hold beyond a quantile (on
// its smaller side) for the quantile to be gated: a p99 needs 1000
// requests per run, a p90 100, a p50 20.
const TailSamples = 10

// SamplesFor is the number of samples per run that quantile q needs.
func SamplesFor(q float64) int64 {
	return int64(math.Ceil(TailSamples/math.Min(q, 1-q) - 1e-9))
}

// Spec is one gated statistic.
type Spec struct {
	Metric    string    `json:"metric"`
	Stat      string    `json:"stat"`      // "p99", "p50", ... or "value" for a rate
	Tolerance float64   `json:"tolerance"` // allowed worsening, as a fraction (0.05 = 5%)
	Direction Direction `json:"direction"`
}

// Name is "metric stat".
func (s Spec) Name() string {
	if s.Stat == "" || s.Stat == "value" {
		return s.Metric
	}
	return s.Metric + " " + s.Stat
}

// Quantile is the probability for a "pNN" stat ("p999" is 0.999), or false.
func (s Spec) Quantile() (float64, bool) {
	if !strings.HasPrefix(s.Stat, "p") {
		return 0, false
	}
	digits := s.Stat[1:]
	v, err := strconv.Atoi(digits)
	if err != nil || v <= 0 {
		return 0, false
	}
	q := float64(v) / math.Pow10(len(digits))
	if len(digits) == 1 {
		q = float64(v) / 100 // "p5" is the 5th percentile
	}
	return q, q > 0 && q < 1
}

// Estimate is the statistic's value in one run: the quantile of its
// whole distribution by est, or its rate.
func (s Spec) Estimate(smp Sample, est Estimator) float64 {
	if p, ok := s.Quantile(); ok {
		return est(smp.Total, p)
	}
	return smp.Value
}

// Sample is one run's data for one metric: windows of a distribution (with
// their merge as Total), or, for a rate, its value and per-window rates.
type Sample struct {
	Total   Hist
	Windows []Hist
	Value   float64
	Rates   []float64
	// Job names the CI job (one machine, one server start) the run came
	// from; runs of one job share its noise. Empty: a job of its own.
	Job string
}

// Input is one statistic to compare.
type Input struct {
	Spec
	Baseline  []Sample
	Candidate []Sample
	// Paired: Baseline[i] and Candidate[i] ran side by side in one job (a
	// paired A/B run, interleaved), so the job's noise cancels in their
	// difference.
	Paired bool
	// History is the stored series' runs of this statistic, in their jobs
	// (the baseline's among them), that the job-to-job and run-to-run
	// noise are estimated from when they hold more jobs than the baseline:
	// the noise is a property of the testbed, its level of the commit.
	History []Sample
}

// Options tune the comparison.
type Options struct {
	Alpha float64 // one-sided level of each test; the interval is 1−2α
	// PassAlpha is the level of the test that says PASS (the worsening is
	// below the tolerance), when it differs from Alpha: at an adaptive
	// gate's looks each error spends its own α (see Looks). 0: Alpha.
	PassAlpha  float64
	NoiseFloor float64 // relative run-to-run noise assumed when K = 1
	// JobNoiseFloor is the relative job-to-job noise assumed, at least,
	// when the baseline's runs come from fewer than 3 jobs.
	JobNoiseFloor float64
	// JobNoisePrior is the weight, in jobs, of a prior belief that the
	// job-to-job noise is JobNoiseFloor, when the baseline's runs come from
	// 3 jobs or more: the job variance is the moderated estimate
	// (ν₀·floor² + ν·ŝ²)/(ν₀ + ν) with ν₀ + ν degrees of freedom, ν the
	// baseline's jobs less one (the prior of limma's moderated t). A few
	// jobs measure their variance badly (3 jobs: a χ² with 2 df), and the
	// t quantile at so few df makes every interval wide. 0: no prior.
	JobNoisePrior float64
	Seed          uint64    // bootstrap seed
	Resamples     int       // bootstrap resamples per run
	Estimator     Estimator // quantile estimator
}

// DefaultOptions: α = 5%, a 5% noise floor for a single baseline run,
// Harrell–Davis point estimates and 200 bootstrap resamples per run.
var DefaultOptions = Options{Alpha: 0.05, NoiseFloor: 0.05, JobNoiseFloor: 0.02, JobNoisePrior: 2, Seed: 1, Resamples: 200, Estimator: HarrellDavis}

// Result is the comparison of one statistic.
type Result struct {
	Spec
	Baseline    float64 `json:"baseline"`  // geometric mean of the baseline runs' estimates
	Candidate   float64 `json:"candidate"` // same for the candidate runs
	Change      float64 `json:"change"`    // candidate/baseline − 1
	Lo          float64 `json:"lo"`        // interval of the change, 1−2α
	Hi          float64 `json:"hi"`
	P           float64 `json:"p"`   // one-sided p-value that it is worse by more than the tolerance
	MDE         float64 `json:"mde"` // worsening this comparison catches with 80% power
	Verdict     Verdict `json:"verdict"`
	Provisional bool    `json:"provisional,omitempty"`
	K           int     `json:"k"`
	R           int     `json:"r"`
	// What an unchanged candidate needs to PASS 4 times in 5 with this
	// noise, when K and R are not enough: NeedR candidate runs, or, when no
	// number of candidate runs will do against these K baseline runs, NeedK
	// baseline runs and as many candidate runs. 0: enough already.
	NeedR int `json:"need_r,omitempty"`
	NeedK int `json:"need_k,omitempty"`
	// Jobs is how many jobs the baseline's runs came from, when runs came
	// in jobs; JobNoise and RunNoise are the relative job-to-job and
	// run-to-run noise estimated from them. NeedTolerance: the tolerance an
	// unchanged candidate from one job would pass 4 times in 5, when no
	// number of runs in that job can reach the one asked for.
	Jobs          int     `json:"jobs,omitempty"`
	JobNoise      float64 `json:"job_noise,omitempty"`
	RunNoise      float64 `json:"run_noise,omitempty"`
	NeedTolerance float64 `json:"need_tolerance,omitempty"`
	// NeedSamples: for a quantile whose uncertainty is mostly its own
	// sampling within runs, the requests a run would need for an unchanged
	// candidate to pass 4 times in 5 with as many runs as now.
	NeedSamples int64    `json:"need_samples,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
}

// Comparison is every result and the overall verdict: FAIL if any failed,
// else INCONCLUSIVE if any was, else PASS.
type Comparison struct {
	Results  []Result `json:"results"`
	Verdict  Verdict  `json:"verdict"`
	Warnings []string `json:"warnings,omitempty"`
}

// Compare runs every input and applies Hommel's correction across them.
func Compare(inputs []Input, opt Options) *Comparison {
	if opt.Estimator == nil {
		opt.Estimator = HarrellDavis
	}
	c := &Comparison{}
	ws := make([]oneWork, len(inputs))
	pvals := make([]float64, len(inputs))
	for i, in := range inputs {
		r, w := one(in, opt, uint64(i))
		c.Results = append(c.Results, r)
		ws[i] = w
		pvals[i] = r.P
	}
	// The correction counts only the statistics that are gated.
	var gated []int
	for i, r := range c.Results {
		if r.Verdict != NotGated {
			gated = append(gated, i)
		}
	}
	gp := make([]float64, len(gated))
	for j, i := range gated {
		gp[j] = pvals[i]
	}
	fail := make([]bool, len(pvals))
	for j, rej := range Hommel(gp, opt.Alpha) {
		fail[gated[j]] = rej
	}
	for i := range c.Results {
		r := &c.Results[i]
		w := ws[i]
		switch {
		case r.Verdict != "": // decided in one (no data, or not gated)
		case fail[i]:
			r.Verdict = Fail
		case w.g+w.qPass*w.se < w.delta:
			r.Verdict = Pass
		default:
			r.Verdict = Inconclusive
			if w.g-w.q*w.se > w.delta {
				r.Warnings = append(r.Warnings, "worse than the tolerance on its own, but not after the correction across the gated metrics (Hommel)")
			}
		}
		if r.Verdict == Inconclusive && w.se > 0 && w.pairVar > 0 {
			z := distuv.UnitNormal.Quantile(0.8)
			for n := r.K + 1; n <= 1000; n++ {
				if (tQuantile(1-opt.Alpha, float64(n-1))+z)*math.Sqrt(w.pairVar/float64(n)) <= w.delta {
					r.NeedR = n
					r.Warnings = append(r.Warnings, fmt.Sprintf("with this noise an unchanged candidate passes a %.3g%% tolerance 4 times in 5 only with %d pairs (now %d)", 100*r.Tolerance, n, r.K))
					break
				}
			}
		} else if r.Verdict == Inconclusive && w.se > 0 && w.jobs != nil {
			if tol := w.jobs.reachable(w); tol > r.Tolerance {
				r.NeedTolerance = tol
				r.Warnings = append(r.Warnings, fmt.Sprintf("its candidate runs share one job, and this job-to-job noise lets an unchanged candidate pass 4 times in 5 only at a %.3g%% tolerance (asked: %.3g%%): more runs in one job cannot reach it", 100*tol, 100*r.Tolerance))
			}
		} else if r.Verdict == Inconclusive && w.se > 0 {
			r.NeedK, r.NeedR = needed(w, r.K, r.R, opt.Alpha)
			switch {
			case r.NeedK > 0:
				r.Warnings = append(r.Warnings, fmt.Sprintf("with this noise an unchanged candidate passes a %.3g%% tolerance 4 times in 5 only with %d baseline and %d candidate runs (now %d and %d)", 100*r.Tolerance, r.NeedK, r.NeedR, r.K, r.R))
			case r.NeedR > r.R:
				r.Warnings = append(r.Warnings, fmt.Sprintf("with this noise an unchanged candidate passes a %.3g%% tolerance 4 times in 5 only with %d candidate runs (now %d)", 100*r.Tolerance, r.NeedR, r.R))
			}
		}
	}
	for i := range c.Results {
		needSamples(&c.Results[i], ws[i], inputs[i].Paired)
	}
	c.Verdict = Overall(c.Results)
	return c
}

// Overall folds verdicts: any FAIL fails, then any INCONCLUSIVE, else PASS.
func Overall(rs []Result) Verdict {
	v := Pass
	for _, r := range rs {
		switch r.Verdict {
		case Fail:
			return Fail
		case Inconclusive:
			v = Inconclusive
		}
	}
	return v
}

type oneWork struct {
	g, se, delta, q, df float64
	qPass               float64 // the t quantile of the PASS test
	between, wb, wc     float64 // run-to-run variance, and the mean within-run variance of each side (log scale)
	exact               bool
	jobs                *jobFit // runs came in jobs
	pairVar             float64 // paired: the variance of one pair's log difference
	minN                int64   // a quantile's: the fewest samples a run has
}

// one computes everything but the corrected verdict.
func one(in Input, opt Options, idx uint64) (Result, oneWork) {
	r := Result{Spec: in.Spec, K: len(in.Baseline), R: len(in.Candidate)}
	var w oneWork
	w.delta = math.Log1p(in.Tolerance)
	if r.K == 0 || r.R == 0 {
		r.Verdict, r.P = Inconclusive, 1
		r.Warnings = append(r.Warnings, "no baseline or no candidate runs")
		return r, w
	}
	p, isQ := in.Quantile()
	yb, okb := logEstimates(in, in.Baseline, opt.Estimator)
	yc, okc := logEstimates(in, in.Candidate, opt.Estimator)
	if !okb || !okc {
		r.Verdict, r.P = Inconclusive, 1
		r.Warnings = append(r.Warnings, "a run has no positive value for this statistic")
		return r, w
	}
	mb, mc := mean(yb), mean(yc)
	r.Baseline, r.Candidate = math.Exp(mb), math.Exp(mc)
	d := mc - mb
	r.Change = math.Expm1(d)

	// Identical data in both sets: the difference is exactly zero.
	if identical(in.Baseline, in.Candidate) {
		w.exact = true
		r.Lo, r.Hi, r.P, r.MDE = 0, 0, 1, in.Tolerance
		w.q, w.qPass = 1, 1
		r.Warnings = append(r.Warnings, "the candidate runs are the baseline runs: the difference is exactly zero")
		return r, w
	}

	wb, wc := withinRuns(&r, in, opt, idx)
	between := runNoise(&r, &w, opt, yb, yc, wb, wc)
	if isQ {
		minN := int64(math.MaxInt64)
		for _, s := range append(append([]Sample{}, in.Baseline...), in.Candidate...) {
			minN = min(minN, s.Total.N)
		}
		w.minN = minN
		if need := SamplesFor(p); minN < need {
			r.Verdict, r.P = NotGated, 1
			r.Warnings = append(r.Warnings, fmt.Sprintf("not gated: a %s needs %d samples per run (%d beyond it), and a run has %d", in.Stat, need, TailSamples, minN))
		}
	}
	w.between, w.wb, w.wc = between, wb, wc
	w.se = math.Sqrt((between+wb)/float64(r.K) + (between+wc)/float64(r.R))
	if in.Paired {
		if !paired(&r, &w, yb, yc, d) {
			return r, w
		}
	} else if jb, jc := jobsOf(in.Baseline), jobsOf(in.Candidate); len(jb) < r.K || len(jc) < r.R {
		// Runs came in jobs: the runs of one job share its noise, so the
		// job-to-job noise is not averaged away by more runs in a job.
		yh, jh, wh := yb, jb, wb
		if hist := jobsOf(in.History); len(hist) > len(jb) {
			if y, ok := logEstimates(in, in.History, opt.Estimator); ok {
				yh, jh, wh = y, hist, withinMean(in, in.History, opt, idx, 2000)
			}
		}
		f := fitJobs(yh, jh, jb, jc, yc, wh, wb, wc, opt.JobNoiseFloor, opt.JobNoisePrior)
		w.jobs, w.se, w.df = f, math.Sqrt(f.vb+f.vc), f.df
		r.Jobs, r.JobNoise, r.RunNoise = f.jobs, math.Sqrt(f.job), math.Sqrt(f.run)
		r.Provisional = r.Provisional || f.floored
		from := "the baseline's"
		if len(jh) > len(jb) {
			from = "the stored history's"
			// The history measured the run-to-run noise, not the baseline's few runs alone.
			r.Warnings = slices.DeleteFunc(r.Warnings, func(w string) bool {
				return strings.HasPrefix(w, "only ") && strings.HasSuffix(w, "the run-to-run noise is barely estimated")
			})
		}
		if f.floored {
			r.Warnings = append(r.Warnings, fmt.Sprintf("provisional: %s runs come from %d job(s), too few to measure job-to-job noise, so at least %.3g%% is assumed", from, f.jobs, 100*opt.JobNoiseFloor))
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("runs come in jobs: %.2g%% job-to-job and %.2g%% run-to-run noise, from %s %d jobs", 100*r.JobNoise, 100*r.RunNoise, from, f.jobs))
		}
	}
	decide(&r, &w, in, opt, d)
	return r, w
}

// logEstimates are the log of each run's statistic; false when a run has
// no positive value for it (its log stands in as the smallest float's).
func logEstimates(in Input, ss []Sample, est Estimator) ([]float64, bool) {
	out := make([]float64, len(ss))
	ok := true
	for i, s := range ss {
		v := in.Estimate(s, est)
		if !(v > 0) {
			ok = false
			v = math.SmallestNonzeroFloat64
		}
		out[i] = math.Log(v)
	}
	return out, ok
}

// runNoise is the run-to-run variance of the log statistic beyond the
// within-run part, and sets w's degrees of freedom: with one baseline run,
// the noise floor assumed (provisional); else the pooled variance of both
// sides' runs about their own means, as a two-sample t-test's.
func runNoise(r *Result, w *oneWork, opt Options, yb, yc []float64, wb, wc float64) float64 {
	if r.K == 1 {
		r.Provisional = true
		r.Warnings = append(r.Warnings, fmt.Sprintf("provisional: one baseline run, so a %.3g%% run-to-run noise floor is assumed", 100*opt.NoiseFloor))
		w.df = math.Inf(1)
		return math.Pow(math.Log1p(opt.NoiseFloor), 2)
	}
	// (The candidate's runs are as informative about it as the
	// baseline's.)
	ss := pooledSS(yb, yc)
	w.df = float64(r.K + r.R - 2)
	within := (float64(r.K)*wb + float64(r.R)*wc) / float64(r.K+r.R)
	if r.K < 3 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("only %d baseline runs: the run-to-run noise is barely estimated", r.K))
	}
	return math.Max(ss/w.df-within, 0)
}

// paired takes the standard error from the pairs' differences: each pair
// ran side by side, so the difference of its logs carries neither its
// job's noise nor the drift between pairs. False (r inconclusive) without
// as many baseline as candidate runs, at least 2 pairs.
func paired(r *Result, w *oneWork, yb, yc []float64, d float64) bool {
	if r.K != r.R || r.K < 2 {
		r.Verdict, r.P = Inconclusive, 1
		r.Warnings = append(r.Warnings, fmt.Sprintf("a paired comparison needs as many baseline as candidate runs, at least 2 pairs (have %d and %d)", r.K, r.R))
		return false
	}
	var ss float64
	for i := range yb {
		e := (yc[i] - yb[i]) - d
		ss += e * e
	}
	n := float64(r.K)
	w.pairVar = ss / (n - 1)
	w.se, w.df = math.Sqrt(w.pairVar/n), n-1
	r.Warnings = append(r.Warnings, fmt.Sprintf("paired A/B: %d pairs of runs side by side in one job", r.K))
	return true
}

// decide sets the interval, the p-value against the tolerance and the
// minimum detectable effect from the change d (log scale) and its
// standard error.
func decide(r *Result, w *oneWork, in Input, opt Options, d float64) {
	w.q = tQuantile(1-opt.Alpha, w.df)
	w.qPass = w.q
	if opt.PassAlpha > 0 && opt.PassAlpha != opt.Alpha {
		w.qPass = tQuantile(1-opt.PassAlpha, w.df)
	}
	// g is the worsening on the log scale, whatever the metric's direction.
	w.g = d
	if in.Direction == LowerIsWorse {
		w.g = -d
	}
	r.Lo, r.Hi = math.Expm1(d-w.q*w.se), math.Expm1(d+w.q*w.se)
	if w.se > 0 {
		r.P = 1 - tCDF((w.g-w.delta)/w.se, w.df)
	} else if w.g > w.delta {
		r.P = 0
	} else {
		r.P = 1
	}
	// The MDE: a true worsening of δ + (t(1−α) + z(0.8))·se fails four times in five.
	m := w.delta + (w.q+distuv.UnitNormal.Quantile(0.8))*w.se
	if in.Direction == LowerIsWorse {
		r.MDE = -math.Expm1(-m)
	} else {
		r.MDE = math.Expm1(m)
	}
}

// pooledSS is the sum of squares of both sides' values about their own
// side's mean, a two-sample t-test's.
func pooledSS(yb, yc []float64) float64 {
	var ss float64
	for _, ys := range [][]float64{yb, yc} {
		m := mean(ys)
		for _, y := range ys {
			ss += (y - m) * (y - m)
		}
	}
	return ss
}

func identical(a, b []Sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Total.Equal(b[i].Total) || a[i].Value != b[i].Value || len(a[i].Windows) != len(b[i].Windows) || len(a[i].Rates) != len(b[i].Rates) {
			return false
		}
		for j := range a[i].Windows {
			if !a[i].Windows[j].Equal(b[i].Windows[j]) {
				return false
			}
		}
		for j := range a[i].Rates {
			if a[i].Rates[j] != b[i].Rates[j] {
				return false
			}
		}
	}
	return true
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// tBig is the degrees of freedom past which Student's t is the normal:
// gonum's t quantile breaks down numerically at enormous df (1e39 gave
// 4e11 for the 95th percentile), which a Satterthwaite df reaches when one
// variance part is all but zero.
const tBig = 1e7

func tQuantile(p, df float64) float64 {
	if df > tBig {
		return distuv.UnitNormal.Quantile(p)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

func tCDF(x, df float64) float64 {
	if df > tBig {
		return distuv.UnitNormal.CDF(x)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(x)
}

// ErrorRate gates the candidate's error rate absolutely: it fails when the
// candidate runs' pooled error rate exceeds max, whatever its latency.
// Each pair is (failed, total) for one run.
func ErrorRate(baseline, candidate [][2]int, max float64) Result {
	pool := func(rs [][2]int) float64 {
		var e, n int
		for _, r := range rs {
			e += r[0]
			n += r[1]
		}
		if n == 0 {
			return 0
		}
		return float64(e) / float64(n)
	}
	r := Result{Spec: Spec{Metric: "error_rate", Stat: "value", Tolerance: max}, K: len(baseline), R: len(candidate)}
	r.Baseline, r.Candidate = pool(baseline), pool(candidate)
	r.Change = r.Candidate - r.Baseline
	r.Verdict = Pass
	if r.Candidate > max {
		r.Verdict = Fail
		r.Warnings = append(r.Warnings, fmt.Sprintf("candidate error rate %.2f%% is above the allowed %.2f%%", 100*r.Candidate, 100*max))
	}
	return r
}
