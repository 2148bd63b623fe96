package compare

import (
	"math"
	"math/rand/v2"
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

// Hochberg's step-up by hand: m = 4 at α 0.05, thresholds 0.0125, 0.0167,
// 0.025, 0.05 from the smallest up.
func TestHochbergHandTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p    []float64
		want []bool
	}{
		{[]float64{0.04, 0.03, 0.02, 0.01}, []bool{true, true, true, true}},      // the largest ≤ α: all
		{[]float64{0.20, 0.024, 0.02, 0.01}, []bool{false, true, true, true}},    // p(3) ≤ α/2
		{[]float64{0.20, 0.03, 0.016, 0.30}, []bool{false, false, false, false}}, // 0.03 > α/3 and 0.016 > α/4: none
		{[]float64{0.5, 0.6, 0.7, 0.011}, []bool{false, false, false, true}},
	} {
		got := Hochberg(c.p, 0.05)
		if !slices.Equal(got, c.want) {
			t.Errorf("Hochberg(%v) = %v, want %v", c.p, got, c.want)
		}
		// Hochberg rejects at least what Holm does.
		for i, h := range Holm(c.p, 0.05) {
			if h && !got[i] {
				t.Errorf("Holm rejects %d of %v, Hochberg not", i, c.p)
			}
		}
	}
}

// Hommel's adjusted p-values by hand for p = (0.01, 0.02, 0.03, 0.04, 0.2)
// (Wright 1992's algorithm worked through): 0.05, 0.06, 0.06, 0.08, 0.2;
// Hochberg's are 0.05, 0.08, 0.08, 0.08, 0.2. So at α 0.06 Hommel rejects
// three and Hochberg one, and at 0.049 neither rejects any. Every
// rejection of Hochberg's is Hommel's.
func TestHommel(t *testing.T) {
	t.Parallel()
	p := []float64{0.03, 0.2, 0.01, 0.04, 0.02}
	if got, want := Hommel(p, 0.06), []bool{true, false, true, false, true}; !slices.Equal(got, want) {
		t.Errorf("Hommel at 0.06 = %v, want %v", got, want)
	}
	if got, want := Hochberg(p, 0.06), []bool{false, false, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("Hochberg at 0.06 = %v, want %v", got, want)
	}
	if got := Hommel(p, 0.049); slices.Contains(got, true) {
		t.Errorf("Hommel at 0.049 = %v, want none (every adjusted p is 0.05 or more)", got)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		ps := make([]float64, 1+r.IntN(7))
		for i := range ps {
			ps[i] = r.Float64() * r.Float64()
		}
		ho, hh := Hochberg(ps, 0.05), Hommel(ps, 0.05)
		for i := range ps {
			if ho[i] && !hh[i] {
				t.Fatalf("Hochberg rejects %d of %v, Hommel not", i, ps)
			}
		}
	}
}

// Student's t at enormous degrees of freedom is the normal (a
// Satterthwaite df of 1e39, from a variance part all but zero, once gave a
// 95th percentile of 4e11 and an interval of +4.9e26%).
func TestTAtHugeDF(t *testing.T) {
	t.Parallel()
	for _, df := range []float64{1e6, 1e8, 1e39, math.Inf(1)} {
		if q := tQuantile(0.95, df); math.Abs(q-1.6448536) > 1e-3 {
			t.Errorf("t quantile at df %g = %v", df, q)
		}
		if c := tCDF(1.6448536, df); math.Abs(c-0.95) > 1e-4 {
			t.Errorf("t CDF at df %g = %v", df, c)
		}
	}
}
