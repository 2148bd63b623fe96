package compare

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

func incBeta(p, n, x float64) float64 { return mathext.RegIncBeta(p*(n+1), (1-p)*(n+1), x) }

// Holm against a hand-computed table, m = 5, α = 0.05:
//
//	sorted p   threshold α/(m−i+1)   reject?
//	0.001      0.0100                yes
//	0.011      0.0125                yes
//	0.02       0.0167                no  → stop
//	0.03       0.0250                no (after a stop)
//	0.04       0.0500                no
func TestHolmHandTable(t *testing.T) {
	t.Parallel()
	p := []float64{0.03, 0.001, 0.04, 0.011, 0.02}
	want := []bool{false, true, false, true, false}
	if got := Holm(p, 0.05); !slices.Equal(got, want) {
		t.Errorf("Holm = %v, want %v", got, want)
	}
	// All tiny: all rejected. A single p equal to α: rejected.
	if got := Holm([]float64{0.001, 0.002}, 0.05); !slices.Equal(got, []bool{true, true}) {
		t.Errorf("got %v", got)
	}
	if got := Holm([]float64{0.05}, 0.05); !got[0] {
		t.Error("p = α not rejected")
	}
}

func TestMADSigma(t *testing.T) {
	t.Parallel()
	// median 3, deviations 2,1,0,1,97 → MAD 1 → 1.4826: the outlier doesn't move it.
	if got := MADSigma([]float64{1, 2, 3, 4, 100}); math.Abs(got-1.4826) > 1e-12 {
		t.Errorf("MADSigma = %v", got)
	}
}

func TestBootstrapDeterministic(t *testing.T) {
	t.Parallel()
	var ws []Hist
	for w := 0; w < 8; w++ {
		xs := make([]float64, 50)
		for i := range xs {
			xs[i] = float64((i*7+w*13)%97 + 1)
		}
		ws = append(ws, FromValues(xs))
	}
	a := BootstrapQuantile(ws, 0.9, HarrellDavis, 50, 42)
	b := BootstrapQuantile(ws, 0.9, HarrellDavis, 50, 42)
	c := BootstrapQuantile(ws, 0.9, HarrellDavis, 50, 43)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different bootstrap")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seed, same bootstrap")
	}
	if logVariance(a) <= 0 {
		t.Fatal("bootstrap has no spread")
	}
	m := BootstrapMean([]float64{1, 2, 3, 4, 5, 6}, 20, 9)
	if !slices.Equal(m, BootstrapMean([]float64{1, 2, 3, 4, 5, 6}, 20, 9)) {
		t.Fatal("BootstrapMean not deterministic")
	}
}

func TestSpecQuantile(t *testing.T) {
	t.Parallel()
	for stat, want := range map[string]float64{"p50": 0.5, "p99": 0.99, "p999": 0.999, "p5": 0.05, "p1": 0.01, "p90": 0.9} {
		if q, ok := (Spec{Stat: stat}).Quantile(); !ok || math.Abs(q-want) > 1e-12 {
			t.Errorf("%s → %v %v", stat, q, ok)
		}
	}
	if _, ok := (Spec{Stat: "value"}).Quantile(); ok {
		t.Error("value is not a quantile")
	}
}
