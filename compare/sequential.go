package compare

import "math"

// A Look is one interim comparison of a group-sequential gate: after N
// runs, at level Alpha.
type Look struct {
	N     int
	Alpha float64
}

// Looks plans the comparisons of an adaptive gate that starts with r runs
// and adds r at each look up to most: the error rates are controlled across
// the looks by spending α over them with a Pocock-type function,
// α(t) = α·ln(1 + (e−1)·t) at information t = N/most, each look getting
// the increment (the looks' levels sum to α, a Bonferroni bound that holds
// whatever their correlation). With most ≤ r there is one look at α.
func Looks(r, most int, alpha float64) []Look {
	if r < 1 || most <= r {
		return []Look{{N: max(r, 1), Alpha: alpha}}
	}
	spent := func(n int) float64 { return alpha * math.Log(1+(math.E-1)*float64(n)/float64(most)) }
	var out []Look
	prev := 0.0
	for n := r; ; n += r {
		n = min(n, most)
		a := spent(n)
		out = append(out, Look{N: n, Alpha: a - prev})
		prev = a
		if n == most {
			return out
		}
	}
}
