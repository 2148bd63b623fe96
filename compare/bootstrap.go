package compare

import (
	"math"
	"math/rand/v2"
	"sort"
)

// BlockLen is the moving-block length used for n windows: about n^(1/3),
// at least 1 (Künsch's rule of thumb for the moving-block bootstrap).
func BlockLen(n int) int {
	return max(1, int(math.Round(math.Cbrt(float64(n)))))
}

// blocks draws window indices for one moving-block resample of n windows:
// blocks of l consecutive windows with random starts, until n are drawn.
func blocks(r *rand.Rand, n, l int, out []int) []int {
	out = out[:0]
	for len(out) < n {
		start := r.IntN(n - l + 1)
		for j := 0; j < l && len(out) < n; j++ {
			out = append(out, start+j)
		}
	}
	return out
}

// BootstrapQuantile returns resamples estimates of the p-quantile of the
// merged windows, each from a moving-block resample of the windows. The
// generator is seeded, so the same inputs and seed give the same output.
func BootstrapQuantile(windows []Hist, p float64, est Estimator, resamples int, seed uint64) []float64 {
	n := len(windows)
	if n == 0 || resamples <= 0 {
		return nil
	}
	// One value axis for the run; each window as (axis index, count).
	type cell struct {
		i int
		c int64
	}
	axis := Merge(windows...).Values
	cells := make([][]cell, n)
	for w, h := range windows {
		for i, v := range h.Values {
			if h.Counts[i] > 0 {
				cells[w] = append(cells[w], cell{sort.SearchFloat64s(axis, v), h.Counts[i]})
			}
		}
	}
	r := rand.New(rand.NewPCG(seed, 0xb00757))
	l := BlockLen(n)
	counts := make([]int64, len(axis))
	idx := make([]int, 0, n)
	out := make([]float64, resamples)
	for b := range out {
		clear(counts)
		var total int64
		for _, w := range blocks(r, n, l, idx) {
			for _, c := range cells[w] {
				counts[c.i] += c.c
				total += c.c
			}
		}
		out[b] = est(Hist{Values: axis, Counts: counts, N: total}, p)
	}
	return out
}

// BootstrapMean is BootstrapQuantile for per-window rates: each resample's
// mean rate.
func BootstrapMean(rates []float64, resamples int, seed uint64) []float64 {
	n := len(rates)
	if n == 0 || resamples <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, 0xb00757))
	l := BlockLen(n)
	idx := make([]int, 0, n)
	out := make([]float64, resamples)
	for b := range out {
		s := 0.0
		for _, w := range blocks(r, n, l, idx) {
			s += rates[w]
		}
		out[b] = s / float64(n)
	}
	return out
}

// logVariance is the variance of log(x) over the positive values of xs.
func logVariance(xs []float64) float64 {
	var ls []float64
	for _, x := range xs {
		if x > 0 && !math.IsInf(x, 0) {
			ls = append(ls, math.Log(x))
		}
	}
	if len(ls) < 2 {
		return 0
	}
	m := 0.0
	for _, l := range ls {
		m += l
	}
	m /= float64(len(ls))
	v := 0.0
	for _, l := range ls {
		v += (l - m) * (l - m)
	}
	return v / float64(len(ls)-1)
}

// Median of xs (xs is not modified); NaN for none.
func Median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MADSigma is the median absolute deviation scaled to estimate a normal
// standard deviation (× 1.4826): a spread that one odd run cannot inflate.
func MADSigma(xs []float64) float64 {
	m := Median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	return 1.4826 * Median(dev)
}

// Holm applies Holm's step-down procedure to p-values at family-wise level
// alpha and reports which hypotheses are rejected: sort ascending, reject
// p_(i) while p_(i) ≤ α/(m−i+1) (i from 1), and stop at the first that is not.
func Holm(p []float64, alpha float64) []bool {
	m := len(p)
	order := ascending(p)
	rej := make([]bool, m)
	for k, i := range order {
		if p[i] > alpha/float64(m-k) {
			break
		}
		rej[i] = true
	}
	return rej
}

// Hochberg applies Hochberg's step-up procedure to one-sided p-values at
// family-wise level alpha: sort ascending and reject p_(1), …, p_(k) for
// the largest k with p_(k) ≤ α/(m−k+1). It rejects all that Holm does and
// more when several are small (a change that moves every statistic), and
// holds the family-wise error at α when the tests are positively
// dependent (Sarkar 1998), as the gate's are: one run's noise moves all
// its statistics the same way (a throughput's worsening is a fall).
func Hochberg(p []float64, alpha float64) []bool {
	m := len(p)
	order := ascending(p)
	rej := make([]bool, m)
	for k := m - 1; k >= 0; k-- {
		if p[order[k]] <= alpha/float64(m-k) {
			for _, i := range order[:k+1] {
				rej[i] = true
			}
			break
		}
	}
	return rej
}

// Hommel applies Hommel's (1988) procedure to one-sided p-values at
// family-wise level alpha: H_i is rejected when every intersection of
// hypotheses that contains it is rejected by Simes' test. It rejects all
// that Hochberg does, and more when several p-values are small but not
// all; like Hochberg it holds the family-wise error at α for positively
// dependent tests (Sarkar 2002), as the gate's are. Computed by the
// adjusted p-values of Wright (1992).
func Hommel(p []float64, alpha float64) []bool {
	n := len(p)
	rej := make([]bool, n)
	if n == 0 {
		return rej
	}
	order := ascending(p)
	ps := make([]float64, n) // sorted
	for k, i := range order {
		ps[k] = p[i]
	}
	simes := math.Inf(1)
	for k := range n {
		simes = math.Min(simes, float64(n)*ps[k]/float64(k+1))
	}
	pa, q := make([]float64, n), make([]float64, n)
	for k := range n {
		pa[k], q[k] = simes, simes
	}
	for m := n - 1; m >= 2; m-- {
		// The first n−m+1 sorted p-values, and the m−1 largest.
		q1 := math.Inf(1)
		for j := 2; j <= m; j++ {
			q1 = math.Min(q1, float64(m)*ps[n-m+j-1]/float64(j))
		}
		for k := 0; k <= n-m; k++ {
			q[k] = math.Min(float64(m)*ps[k], q1)
		}
		for k := n - m + 1; k < n; k++ {
			q[k] = q[n-m]
		}
		for k := range n {
			pa[k] = math.Max(pa[k], q[k])
		}
	}
	for k, i := range order {
		rej[i] = math.Max(pa[k], ps[k]) <= alpha
	}
	return rej
}

// ascending is the indices of p in ascending order of p (ties in order).
func ascending(p []float64) []int {
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p[order[a]] < p[order[b]] })
	return order
}
