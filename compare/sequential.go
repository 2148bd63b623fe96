package compare

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// A Look is one interim comparison of a group-sequential gate: after N
// runs, a FAIL at level Alpha and a PASS at level PassAlpha.
type Look struct {
	N         int
	Alpha     float64
	PassAlpha float64
}

// Looks plans the comparisons of an adaptive gate that starts with r runs
// and adds r at each look up to most. The two errors are controlled across
// the looks separately, each by the same α-spending function (Lan &
// DeMets) over the information fraction t = N/most, of O'Brien–Fleming's
// type, 2·(1 − Φ(z(1−α/2)/√t)): little α early, most of it kept for the
// last look, where the interval is narrowest. For a PASS that is what it
// takes (a PASS needs the interval, not the distance, to be small); for a
// FAIL it costs a clear regression a look or two (runs only on the PRs
// that regress) and buys the power of the fixed design at the last look:
// on the model of compare/power_test.go a +20% p99 tail at a 10% tolerance
// FAILs 84% of the time instead of the 76% of a Pocock-type function,
// which spends α evenly and stops a clear regression early.
//
// Each look's level is the nominal one-sided level whose boundary spends
// exactly that look's share, given that the earlier looks did not stop:
// the statistics of nested looks are correlated (√(t_i/t_j)), so later looks
// get more than their share, and the levels sum to more than α while the
// error over all looks stays α (Jennison & Turnbull's recursive integration
// over the canonical joint distribution). The correlation assumed is that of
// runs that are added one by one with equal weight; a fixed baseline, or a
// job's noise shared by all the candidate's runs, correlate the looks more,
// which makes the levels conservative, never liberal.
//
// With most ≤ r there is one look at α for both.
func Looks(r, most int, alpha float64) []Look { return LooksAgainst(r, most, 0, alpha) }

// LooksAgainst is Looks for a candidate compared with k fixed baseline runs
// (k = 0: pairs, or runs compared with each other): the information after
// n candidate runs is 1/(1/k + 1/n), so the looks' statistics, which share
// the baseline, are more correlated than the runs' alone, and later looks
// get higher levels for the same error.
func LooksAgainst(r, most, k int, alpha float64) []Look {
	if r < 1 || most <= r {
		return []Look{{N: max(r, 1), Alpha: alpha, PassAlpha: alpha}}
	}
	z := distuv.UnitNormal.Quantile(1 - alpha/2)
	obf := func(t float64) float64 {
		if t >= 1 {
			return alpha
		}
		return 2 * (1 - distuv.UnitNormal.CDF(z/math.Sqrt(t)))
	}
	var ns []int
	for n := r; ; n += r {
		n = min(n, most)
		ns = append(ns, n)
		if n == most {
			break
		}
	}
	info := make([]float64, len(ns))
	fail := make([]float64, len(ns))
	pass := make([]float64, len(ns))
	for i, n := range ns {
		info[i] = float64(n)
		if k > 0 {
			info[i] = 1 / (1/float64(k) + 1/float64(n))
		}
		t := float64(n) / float64(most)
		fail[i], pass[i] = obf(t), obf(t)
	}
	fl, pl := nominalLevels(info, fail), nominalLevels(info, pass)
	out := make([]Look, len(ns))
	for i, n := range ns {
		out[i] = Look{N: n, Alpha: fl[i], PassAlpha: pl[i]}
	}
	return out
}

// nominalLevels turns cumulative α spent at each look (nondecreasing) into
// the nominal one-sided level of each look's boundary: with Z_k the
// standardised statistic at information info[k] (Z_k√info[k] a Gaussian
// random walk under the null), the boundaries c_k satisfy
// P(Z_1 < c_1, …, Z_{k−1} < c_{k−1}, Z_k ≥ c_k) = spent[k] − spent[k−1].
// The sub-density of the walk that has not stopped is carried on a grid
// and integrated by the trapezoid rule.
func nominalLevels(info, spent []float64) []float64 {
	const (
		points = 481 // grid points per look
		width  = 8.0 // the grid reaches 8 standard deviations below zero
	)
	out := make([]float64, len(info))
	var grid, dens []float64 // S = Z√I: grid values and the sub-density there
	prevSpent, prevInfo := 0.0, 0.0
	for k, ik := range info {
		share := spent[k] - prevSpent
		prevSpent = spent[k]
		if k == 0 {
			c := math.Inf(1)
			if share > 0 {
				c = distuv.UnitNormal.Quantile(1 - share)
			}
			out[0] = 1 - distuv.UnitNormal.CDF(c)
			grid, dens = densityBelow(c*math.Sqrt(ik), ik, points, width, func(s float64) float64 {
				return math.Exp(-s*s/(2*ik)) / math.Sqrt(2*math.Pi*ik)
			})
			prevInfo = ik
			continue
		}
		sd := math.Sqrt(ik - prevInfo)
		cross := func(b float64) float64 { // P(not stopped before, and S_k ≥ b)
			return trapezoid(grid, dens, func(u float64) float64 { return 1 - distuv.UnitNormal.CDF((b-u)/sd) })
		}
		b := math.Inf(1)
		if share > 0 {
			lo, hi := -width*math.Sqrt(ik), width*math.Sqrt(ik)
			if cross(lo) <= share {
				b = lo
			} else {
				for range 100 {
					mid := (lo + hi) / 2
					if cross(mid) > share {
						lo = mid
					} else {
						hi = mid
					}
				}
				b = hi
			}
		}
		c := b / math.Sqrt(ik)
		out[k] = 1 - distuv.UnitNormal.CDF(c)
		if k+1 < len(info) {
			g, d := grid, dens
			grid, dens = densityBelow(b, ik, points, width, func(s float64) float64 {
				return trapezoid(g, d, func(u float64) float64 {
					x := (s - u) / sd
					return math.Exp(-x*x/2) / (sd * math.Sqrt(2*math.Pi))
				})
			})
		}
		prevInfo = ik
	}
	return out
}

// densityBelow puts f on a grid from width standard deviations (of a walk
// at information i) below zero up to b.
func densityBelow(b, i float64, points int, width float64, f func(float64) float64) (grid, dens []float64) {
	lo := -width * math.Sqrt(i)
	if b > width*math.Sqrt(i) {
		b = width * math.Sqrt(i)
	}
	grid, dens = make([]float64, points), make([]float64, points)
	if b <= lo {
		return grid, dens // nothing continues
	}
	for j := range grid {
		grid[j] = lo + (b-lo)*float64(j)/float64(points-1)
		dens[j] = f(grid[j])
	}
	return grid, dens
}

// trapezoid integrates dens·g over grid.
func trapezoid(grid, dens []float64, g func(float64) float64) float64 {
	var s float64
	for j := 1; j < len(grid); j++ {
		s += (grid[j] - grid[j-1]) * (dens[j-1]*g(grid[j-1]) + dens[j]*g(grid[j])) / 2
	}
	return s
}
