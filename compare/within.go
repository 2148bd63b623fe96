package compare

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// What one run knows of its own estimate: the within-run variance of a
// quantile (from its order statistics) or a rate (from a bootstrap over
// its windows), and, for a quantile wide from its own sampling, how many
// requests a run would decide it.

// withinRuns is each side's mean within-run variance of the log
// statistic: a quantile's from its order statistics (see
// QuantileLogVar), a rate's from a moving-block bootstrap over its
// windowed rates; a rate of fewer than 2 windows counts 0, and r is warned
// of it.
func withinRuns(r *Result, in Input, opt Options, idx uint64) (wb, wc float64) {
	wb = withinMean(in, in.Baseline, opt, idx, 0)
	wc = withinMean(in, in.Candidate, opt, idx, 1000)
	if _, isQ := in.Quantile(); !isQ {
		for _, s := range append(append([]Sample{}, in.Baseline...), in.Candidate...) {
			if len(s.Rates) < 2 {
				r.Warnings = append(r.Warnings, "a run has fewer than 2 time windows: its within-run uncertainty is not measured")
				break
			}
		}
	}
	return wb, wc
}

// withinMean is the mean within-run variance of ss's log statistic; off
// keeps the bootstrap seeds of different sets apart.
func withinMean(in Input, ss []Sample, opt Options, idx, off uint64) float64 {
	if len(ss) == 0 {
		return 0
	}
	p, isQ := in.Quantile()
	sum := 0.0
	for i, s := range ss {
		if isQ {
			sum += QuantileLogVar(s.Total, p)
			continue
		}
		if len(s.Rates) < 2 {
			continue
		}
		seed := opt.Seed ^ (idx+1)*0x9e3779b97f4a7c15 ^ (off+uint64(i))*0xbf58476d1ce4e5b9
		sum += logVariance(BootstrapMean(s.Rates, opt.Resamples, seed))
	}
	return sum / float64(len(ss))
}

// QuantileLogVar is the sampling variance of the log of h's p-quantile
// from the order statistics around it: the distribution-free interval
// [x_(l), x_(u)], l and u = np ∓ 2√(np(1−p)), holds the quantile with
// about 95% probability whatever the distribution, so a quarter of its
// log width is a standard deviation. It treats the run's requests as
// independent; what a drifting load adds shows up between runs. It is the
// empirical quantile's; Harrell–Davis's is a little smaller, so the
// interval errs wide.
func QuantileLogVar(h Hist, p float64) float64 {
	if h.N < 2 {
		return 0
	}
	n := float64(h.N)
	sd := math.Sqrt(n * p * (1 - p))
	lo, hi := rankValue(h, int64(math.Floor(n*p-2*sd))), rankValue(h, int64(math.Ceil(n*p+2*sd)))
	if !(lo > 0) || !(hi >= lo) {
		return 0
	}
	v := (math.Log(hi) - math.Log(lo)) / 4
	return v * v
}

// rankValue is h's k-th smallest value (k clamped to 1..N).
func rankValue(h Hist, k int64) float64 {
	k = max(1, min(k, h.N))
	var c int64
	for i, n := range h.Counts {
		c += n
		if c >= k {
			return h.Values[i]
		}
	}
	return h.Values[len(h.Values)-1]
}

// needSamples says, for an inconclusive quantile whose interval is wide
// mostly from its own sampling within runs (a p99 of a few thousand
// requests), how many requests a run would decide it: the within-run
// variance falls as 1/n, the rest stays.
func needSamples(r *Result, w oneWork, paired bool) {
	if r.Verdict != Inconclusive || paired || w.minN <= 0 || w.se <= 0 || r.K == 0 || r.R == 0 {
		return
	}
	within := w.wb/float64(r.K) + w.wc/float64(r.R)
	rest := w.se*w.se - within
	z := distuv.UnitNormal.Quantile(0.8)
	room := math.Pow(w.delta/(w.qPass+z), 2)
	if within <= rest || room <= rest {
		return // more requests alone would not do it
	}
	need := int64(math.Ceil(float64(w.minN) * within / (room - rest)))
	if need <= w.minN || need > 1000*w.minN {
		return
	}
	r.NeedSamples = need
	r.Warnings = append(r.Warnings, fmt.Sprintf("most of this %s's uncertainty is its own sampling within runs: about %d requests a run (now %d) would let an unchanged candidate pass a %.3g%% tolerance 4 times in 5 with as many runs", r.Stat, need, w.minN, 100*r.Tolerance))
}
