package compare

import (
	"math"
)

// A Step is where a series of jobs changed level: jobs At and later sit at
// another level than the jobs before.
type Step struct {
	At     int     // index of the first job after the step
	Change float64 // relative change of the level: exp(after − before) − 1
	P      float64 // the split's p-value, corrected for the splits tried
}

// LastStep finds the most recent step in a series of jobs, each given as
// its runs' log values, oldest first. Job means are the observations: runs
// of one job share its noise, so they are not counted as independent.
//
// Candidate splits come from E-divisive means (Matteson & James): each
// segment of at least 2·minSeg jobs is split where the energy statistic is
// largest, recursively. Then, as Hunter does, the weakest candidate is
// dropped while any is not significant: a candidate stands when a Student
// t-test of the job means between its neighbouring candidates, corrected
// (Bonferroni) for the splits that segment allows, gives p < alpha.
func LastStep(jobs [][]float64, minSeg int, alpha float64) (Step, bool) {
	minSeg = max(minSeg, 2)
	for _, j := range jobs {
		if len(j) == 0 {
			return Step{}, false
		}
	}
	xs := jobMeans(jobs)
	cuts := candidates(xs, 0, len(xs), minSeg, nil)
	for len(cuts) > 0 {
		worst, wp := -1, -1.0
		for i, c := range cuts {
			lo, hi := 0, len(xs)
			if i > 0 {
				lo = cuts[i-1]
			}
			if i+1 < len(cuts) {
				hi = cuts[i+1]
			}
			if p := stepP(xs, lo, c, hi, minSeg); p > wp {
				worst, wp = i, p
			}
		}
		if wp < alpha {
			break
		}
		cuts = append(cuts[:worst], cuts[worst+1:]...)
	}
	if len(cuts) == 0 {
		return Step{}, false
	}
	i := len(cuts) - 1
	c, lo := cuts[i], 0
	if i > 0 {
		lo = cuts[i-1]
	}
	return Step{At: c, Change: math.Expm1(mean(xs[c:]) - mean(xs[lo:c])), P: stepP(xs, lo, c, len(xs), minSeg)}, true
}

// candidates splits xs[lo:hi] where the energy statistic is largest, and
// each side again, while a side can hold two segments; in order.
func candidates(xs []float64, lo, hi, minSeg int, out []int) []int {
	if hi-lo < 2*minSeg {
		return out
	}
	best, at := math.Inf(-1), -1
	for t := lo + minSeg; t <= hi-minSeg; t++ {
		if q := energy(xs[lo:t], xs[t:hi]); q > best {
			best, at = q, t
		}
	}
	out = candidates(xs, lo, at, minSeg, out)
	out = append(out, at)
	return candidates(xs, at, hi, minSeg, out)
}

// stepP is the p-value of a step at c between the segments [lo,c) and
// [c,hi), corrected for the splits [lo,hi) allows.
func stepP(xs []float64, lo, c, hi, minSeg int) float64 {
	tries := float64(max(hi-lo-2*minSeg+1, 1))
	return math.Min(1, tries*studentP(xs[lo:c], xs[c:hi]))
}

func jobMeans(jobs [][]float64) []float64 {
	xs := make([]float64, len(jobs))
	for i, j := range jobs {
		xs[i] = mean(j)
	}
	return xs
}

// energy is E-divisive's statistic (exponent 1) for splitting into a and b:
// the scaled energy distance between the two samples.
func energy(a, b []float64) float64 {
	na, nb := float64(len(a)), float64(len(b))
	var between, wa, wb float64
	for _, x := range a {
		for _, y := range b {
			between += math.Abs(x - y)
		}
	}
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			wa += math.Abs(a[i] - a[j])
		}
	}
	for i := range b {
		for j := i + 1; j < len(b); j++ {
			wb += math.Abs(b[i] - b[j])
		}
	}
	e := 2*between/(na*nb) - wa/(na*(na-1)/2) - wb/(nb*(nb-1)/2)
	return na * nb / (na + nb) * e
}

// studentP is the two-sided p-value of Student's t-test that a and b
// share a mean (pooled variance: under no step the jobs are alike, and the
// test is exact). Two samples without spread and different means give 0.
func studentP(a, b []float64) float64 {
	na, nb := float64(len(a)), float64(len(b))
	pooled := ((na-1)*sampleVar(a) + (nb-1)*sampleVar(b)) / (na + nb - 2)
	d := math.Abs(mean(a) - mean(b))
	se := math.Sqrt(pooled * (1/na + 1/nb))
	if se == 0 {
		if d == 0 {
			return 1
		}
		return 0
	}
	return 2 * (1 - tCDF(d/se, na+nb-2))
}

func sampleVar(xs []float64) float64 {
	m := mean(xs)
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}
