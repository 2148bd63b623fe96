package compare

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Noise is a testbed's noise for one statistic, measured from runs of an
// unchanged profile in jobs (a stored main history: each refresh one job):
// the relative job-to-job and run-to-run noise, and the mean within-run
// sampling noise of a run's estimate.
type Noise struct {
	Spec
	Runs     int     `json:"runs"`
	Jobs     int     `json:"jobs"`
	JobNoise float64 `json:"job_noise"`
	RunNoise float64 `json:"run_noise"`
	Within   float64 `json:"within"`
	// Floored: too few jobs (under 3) to measure the job noise; the floor
	// stands for it.
	Floored bool `json:"floored,omitempty"`

	fit          *jobFit
	yh           []float64
	jh           [][]int
	w            float64
	floor, prior float64
}

// MeasureNoise fits the noise of in's statistic from in.Baseline (its runs
// in their jobs; a run without a job is one of its own), as Compare would
// with them as the history.
func MeasureNoise(in Input, opt Options) (Noise, error) {
	if opt.Estimator == nil {
		opt.Estimator = HarrellDavis
	}
	n := Noise{Spec: in.Spec, Runs: len(in.Baseline), floor: opt.JobNoiseFloor, prior: opt.JobNoisePrior}
	if n.Runs < 2 {
		return n, fmt.Errorf("%s: %d run(s): the noise needs at least 2", in.Name(), n.Runs)
	}
	y, ok := logEstimates(in, in.Baseline, opt.Estimator)
	if !ok {
		return n, fmt.Errorf("%s: a run has no positive value for this statistic", in.Name())
	}
	n.yh, n.jh = y, jobsOf(in.Baseline)
	n.w = withinMean(in, in.Baseline, opt, 0, 0)
	f := fitJobs(n.yh, n.jh, n.jh, [][]int{{0}}, nil, n.w, n.w, n.w, n.floor, n.prior)
	n.fit, n.Jobs, n.Floored = f, f.jobs, f.floored
	n.JobNoise, n.RunNoise, n.Within = math.Sqrt(f.job), math.Sqrt(f.run), math.Sqrt(n.w)
	return n, nil
}

// Unpaired is the smallest tolerance an unchanged candidate of r runs in
// one job passes 4 times in 5 at level alpha, against k baseline runs
// stored perJob to a job, with this noise and its uncertainty (the t
// quantile at the fit's degrees of freedom). A fixed design: adaptive looks
// reach a little less at their last look.
func (n Noise) Unpaired(k, perJob, r int, alpha float64) float64 {
	if n.fit == nil || k < 1 || r < 1 || perJob < 1 {
		return math.NaN()
	}
	var jb [][]int
	for i := 0; i < k; i += perJob {
		var ix []int
		for j := i; j < min(k, i+perJob); j++ {
			ix = append(ix, j)
		}
		jb = append(jb, ix)
	}
	jc := [][]int{make([]int, r)}
	f := fitJobs(n.yh, n.jh, jb, jc, nil, n.w, n.w, n.w, n.floor, n.prior)
	z := distuv.UnitNormal.Quantile(0.8)
	return math.Expm1((tQuantile(1-alpha, f.df) + z) * math.Sqrt(f.vb+f.vc))
}

// Paired is the smallest tolerance an unchanged candidate passes 4 times
// in 5 at level alpha in a paired A/B job of pairs pairs: the job's noise
// cancels, each pair's difference keeps two runs' noise. NaN when the runs
// never shared a job, so the run noise was not measured apart.
func (n Noise) Paired(pairs int, alpha float64) float64 {
	if n.fit == nil || pairs < 2 || n.fit.runDF == 0 {
		return math.NaN() // without runs that shared a job, run and job noise are not apart
	}
	z := distuv.UnitNormal.Quantile(0.8)
	v := 2 * (n.fit.run + n.w)
	return math.Expm1((tQuantile(1-alpha, float64(pairs-1)) + z) * math.Sqrt(v/float64(pairs)))
}
