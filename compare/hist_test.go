package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The ages of 120 participants and their Harrell–Davis deciles, as
// published by G. Rousselet, "The Harrell-Davis quantile estimator"
// (garstats, 2016), rounded to one decimal there.
var ages = []float64{18, 18, 19, 19, 19, 19, 20, 20, 21, 21, 21, 21, 21, 21, 21, 22, 22, 22, 22, 22, 22, 22, 22, 23, 23, 23, 24, 24, 24, 25, 26, 28, 28, 29, 29, 30, 30, 31, 31, 32, 32, 32, 33, 34, 34, 35, 35, 36, 37, 38, 40, 40, 41, 41, 42, 42, 43, 43, 44, 45, 45, 45, 45, 48, 49, 49, 50, 51, 54, 54, 55, 56, 58, 59, 59, 60, 60, 61, 62, 62, 62, 63, 63, 63, 64, 64, 64, 64, 65, 65, 66, 66, 66, 66, 66, 66, 67, 67, 67, 67, 68, 68, 68, 68, 68, 69, 70, 70, 70, 71, 72, 72, 72, 75, 76, 77, 78, 79, 81, 81}

var agesHDDeciles = []float64{21.1, 23.3, 29.7, 37.0, 45.3, 56.1, 63.3, 66.6, 70.4}

func TestHarrellDavisPublishedDeciles(t *testing.T) {
	t.Parallel()
	if len(ages) != 120 {
		t.Fatalf("%d ages", len(ages))
	}
	// Through an HdrHistogram too: small integers are stored exactly.
	h := hdr.New(1, 1000, 3)
	for _, a := range ages {
		h.RecordValue(int64(a))
	}
	for _, hist := range []Hist{FromValues(ages), FromHDR(h, 1)} {
		for i, want := range agesHDDeciles {
			got := HarrellDavis(hist, float64(i+1)/10)
			if math.Abs(got-want) > 0.05+1e-9 {
				t.Errorf("HD decile %d = %.3f, published %.1f", i+1, got, want)
			}
		}
	}
}

// The pruned sum equals the full Harrell–Davis sum written out directly.
func TestHarrellDavisMatchesDefinition(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 3000)
	for i := range xs {
		xs[i] = math.Exp(r.NormFloat64())
	}
	h := FromValues(xs)
	for _, p := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
		// Weights beyond 12 Beta standard deviations are dropped: a relative error far below 1e-6.
		if got, want := HarrellDavis(h, p), hdDirect(xs, p); math.Abs(got-want) > 1e-7*math.Abs(want) {
			t.Errorf("p=%v: %v, direct %v", p, got, want)
		}
	}
}

func TestEmpirical(t *testing.T) {
	t.Parallel()
	h := FromValues([]float64{5, 1, 4, 2, 3})
	// n = 5: rank round(5p).
	for _, c := range []struct{ p, want float64 }{{0.2, 1}, {0.35, 2}, {0.5, 3}, {0.99, 5}, {0.01, 1}} {
		if got := Empirical(h, c.p); got != c.want {
			t.Errorf("Empirical(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}

// FromHDR reads HdrHistogram's buckets back: its empirical quantiles sit in
// the same bucket as the library's own.
func TestFromHDRMatchesLibrary(t *testing.T) {
	t.Parallel()
	h := hdr.New(1, 3_600_000_000, 3)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		h.RecordValue(int64(20000 * math.Exp(0.7*r.NormFloat64())))
	}
	hist := FromHDR(h, 1)
	if hist.N != h.TotalCount() {
		t.Fatalf("N %d, library %d", hist.N, h.TotalCount())
	}
	for _, q := range []float64{1, 10, 50, 90, 99, 99.9} {
		lib := float64(h.ValueAtQuantile(q))
		got := Empirical(hist, q/100)
		if !h.ValuesAreEquivalent(int64(got), int64(lib)) {
			t.Errorf("q%v: %v and library %v are in different buckets", q, got, lib)
		}
	}
}

func hdDirect(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	sum := 0.0
	for i, x := range s {
		sum += (incBeta(p, n, float64(i+1)/n) - incBeta(p, n, float64(i)/n)) * x
	}
	return sum
}
