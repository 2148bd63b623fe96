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
// the looks separately, each by spending α over them, each look getting
// the increment (the looks' levels sum to α, a Bonferroni bound that holds
// whatever their correlation):
//   - a false FAIL with a Pocock-type function, α·ln(1 + (e−1)·t) at
//     information t = N/most, so that a clear regression stops early;
//   - a false PASS with an O'Brien–Fleming-type one, 2·(1 − Φ(z(1−α/2)/√t)),
//     which keeps most of α for the last look, where the interval is
//     narrowest: a PASS needs the interval, not the distance, to be small.
//
// With most ≤ r there is one look at α for both.
func Looks(r, most int, alpha float64) []Look {
	if r < 1 || most <= r {
		return []Look{{N: max(r, 1), Alpha: alpha, PassAlpha: alpha}}
	}
	pocock := func(n int) float64 { return alpha * math.Log(1+(math.E-1)*float64(n)/float64(most)) }
	z := distuv.UnitNormal.Quantile(1 - alpha/2)
	obf := func(n int) float64 {
		if n >= most {
			return alpha
		}
		return 2 * (1 - distuv.UnitNormal.CDF(z/math.Sqrt(float64(n)/float64(most))))
	}
	var out []Look
	prevF, prevP := 0.0, 0.0
	for n := r; ; n += r {
		n = min(n, most)
		f, p := pocock(n), obf(n)
		out = append(out, Look{N: n, Alpha: f - prevF, PassAlpha: p - prevP})
		prevF, prevP = f, p
		if n == most {
			return out
		}
	}
}
