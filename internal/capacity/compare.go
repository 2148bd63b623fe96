package capacity

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/aiperf-action/aiperf-action/compare"
)

// Metric is a capacity comparison's name among compare's results.
const Metric = "capacity"

// CompareOptions set a capacity comparison.
type CompareOptions struct {
	// Alpha is the chance of a false FAIL (and of a false PASS): each
	// search's interval must be at confidence 1−Alpha (two-sided), so that
	// each one-sided bound errs at most Alpha/2 and the ratio's one-sided
	// bound at most Alpha; the ratio's interval is then at 1−2Alpha, as
	// compare's are.
	Alpha float64
	// Tolerance is the capacity loss allowed before a FAIL, as a
	// worsening of its reciprocal (compare's convention for a rate: 0.05
	// allows the capacity to fall to 1/1.05 of the baseline's).
	Tolerance float64
	// JobNoise is the relative (log-scale) standard deviation of one
	// job's capacity about the testbed's: the noise that a search's own
	// binomial interval does not hold, since its probes all share a job.
	// 0 for a paired A/B comparison, whose arms share the job.
	JobNoise float64
}

// Comparison is a candidate's capacity against a baseline's as one of
// compare's results (metric "capacity", lower is worse): its point
// change, the interval of the change and the verdict on it.
//
// The interval is [Lo_c/Hi_b, Hi_c/Lo_b] from the two searches'
// intervals (each bound holds at 1−Alpha/2, so each end of the ratio at
// 1−Alpha), widened on the log scale, in quadrature, by the job-to-job
// noise of two jobs (z·JobNoise·√2) when the baseline is a stored
// search from another job. FAIL: the whole interval is a loss past the
// tolerance; PASS: none of it is; else INCONCLUSIVE. A side of a search
// left open (its objectives held at every load probed, or failed at
// every one) leaves that end of the interval open: the verdict is decided
// by the other end where it can be, else INCONCLUSIVE with the reason,
// and the open end is reported at the load the search reached, with a
// warning that says so.
func Comparison(base, cand Estimate, o CompareOptions) (compare.Result, error) {
	r := compare.Result{Spec: compare.Spec{Metric: Metric, Stat: "value", Tolerance: o.Tolerance, Direction: compare.LowerIsWorse}, K: 1, R: 1}
	if !(o.Alpha > 0 && o.Alpha < 0.5) || o.Tolerance < 0 || o.JobNoise < 0 {
		return r, fmt.Errorf("capacity comparison: alpha %g, tolerance %g, job noise %g", o.Alpha, o.Tolerance, o.JobNoise)
	}
	for _, e := range []struct {
		side string
		e    Estimate
	}{{"baseline", base}, {"candidate", cand}} {
		if len(e.e.Points) == 0 || !(e.e.Capacity > 0) {
			return r, fmt.Errorf("the %s's search has no estimate (no probe measured)", e.side)
		}
		if e.e.Confidence < 1-o.Alpha-1e-9 {
			return r, fmt.Errorf("the %s's interval is at %.3g%%: a comparison at α %.3g needs %.3g%% or more", e.side, 100*e.e.Confidence, o.Alpha, 100*(1-o.Alpha))
		}
	}
	if base.Unit != cand.Unit || base.Target != cand.Target {
		return r, errors.New("the searches measured different loads or attainments: not comparable")
	}
	r.Baseline, r.Candidate = base.Capacity, cand.Capacity
	d := math.Log(cand.Capacity / base.Capacity)
	r.Change = math.Expm1(d)
	// The ends of each search's interval, the open ones at the load the
	// search reached (a bound on the open end's side only).
	hiC, hiCOpen := endOf(cand, true)
	loC, loCOpen := endOf(cand, false)
	hiB, hiBOpen := endOf(base, true)
	loB, loBOpen := endOf(base, false)
	up := math.Log(hiC/loB) - d // how far the ratio's upper end lies above the point
	down := d - math.Log(loC/hiB)
	z := distuv.UnitNormal.Quantile(1 - o.Alpha)
	if o.JobNoise > 0 {
		j := z * o.JobNoise * math.Sqrt2
		up, down = math.Hypot(up, j), math.Hypot(down, j)
		r.JobNoise = o.JobNoise
	}
	up, down = math.Max(up, 0), math.Max(down, 0)
	r.Lo, r.Hi = math.Expm1(d-down), math.Expm1(d+up)
	upperOpen := hiCOpen || loBOpen // the ratio's upper end: the candidate's Hi over the baseline's Lo
	lowerOpen := loCOpen || hiBOpen
	delta := math.Log1p(o.Tolerance)
	switch {
	case !upperOpen && d+up < -delta:
		r.Verdict = compare.Fail
	case !lowerOpen && d-down > -delta:
		r.Verdict = compare.Pass
	default:
		r.Verdict = compare.Inconclusive
	}
	// A one-sided p-value that the loss is past the tolerance, and the
	// loss caught four times in five, from the upper half-width as a z
	// interval's.
	if se := up / z; se > 0 && !upperOpen {
		r.P = 1 - distuv.UnitNormal.CDF((-d-delta)/se)
		m := delta + (z+distuv.UnitNormal.Quantile(0.8))*se
		r.MDE = -math.Expm1(-m)
	} else if !upperOpen {
		r.P = map[bool]float64{true: 0, false: 1}[-d > delta]
	} else {
		r.P = 1
	}
	for _, w := range []struct {
		open bool
		text string
	}{
		{hiCOpen, fmt.Sprintf("no load the candidate probed (up to %.4g %s) surely missed the objectives: its capacity may be above them all, so the interval's upper end is open (a higher maximum load, or more requests a probe, bounds it)", hiC, unitName(cand.Unit))},
		{loCOpen, fmt.Sprintf("no load the candidate probed (down to %.4g %s) surely held the objectives: its capacity may be below them all, so the interval's lower end is open (a lower first load, or more requests a probe, bounds it)", loC, unitName(cand.Unit))},
		{hiBOpen, fmt.Sprintf("no load the baseline probed (up to %.4g %s) surely missed the objectives, so the interval's lower end is open", hiB, unitName(base.Unit))},
		{loBOpen, fmt.Sprintf("no load the baseline probed (down to %.4g %s) surely held the objectives, so the interval's upper end is open", loB, unitName(base.Unit))},
	} {
		if w.open {
			r.Warnings = append(r.Warnings, w.text)
		}
	}
	if o.JobNoise > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the baseline's search ran in another job: the interval adds a job-to-job noise of %.3g%% for each side to the searches' own", 100*o.JobNoise))
	}
	return r, nil
}

// endOf is the end of e's interval on one side (hi: the upper), and
// whether it is open: then the load the search reached on that side.
func endOf(e Estimate, hi bool) (float64, bool) {
	first, last := e.Points[0].Load, e.Points[len(e.Points)-1].Load
	if hi {
		if e.HiBounded {
			return e.Hi, false
		}
		return math.Max(last, e.Capacity), true
	}
	if e.LoBounded {
		return e.Lo, false
	}
	return math.Min(first, e.Capacity), true
}

func unitName(u string) string {
	if u == "" {
		return "requests/s"
	}
	return u
}

// JobNoise estimates the relative job-to-job noise of a testbed's
// capacity from the stored searches of earlier jobs (their log capacities
// and the log widths of their intervals): the spread of the capacities
// less what each search's own interval explains, moderated towards floor
// with prior jobs' weight; the floor alone below three searches.
func JobNoise(history []Estimate, floor, prior float64) float64 {
	var ys, within []float64
	for _, e := range history {
		if e.Capacity > 0 {
			ys = append(ys, math.Log(e.Capacity))
			if e.LoBounded && e.HiBounded && e.Lo > 0 {
				z := distuv.UnitNormal.Quantile(1 - (1-e.Confidence)/2)
				within = append(within, math.Pow(math.Log(e.Hi/e.Lo)/(2*z), 2))
			}
		}
	}
	if len(ys) < 3 {
		return floor
	}
	m, ss := 0.0, 0.0
	for _, y := range ys {
		m += y
	}
	m /= float64(len(ys))
	for _, y := range ys {
		ss += (y - m) * (y - m)
	}
	s2 := ss / float64(len(ys)-1)
	if len(within) > 0 {
		w := 0.0
		for _, v := range within {
			w += v
		}
		s2 = math.Max(0, s2-w/float64(len(within)))
	}
	df := float64(len(ys) - 1)
	return math.Sqrt((prior*floor*floor + df*s2) / (prior + df))
}
