package schedule

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// ksStat is the one-sample Kolmogorov–Smirnov statistic of x against cdf.
func ksStat(x []float64, cdf func(float64) float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := float64(len(s))
	d := 0.0
	for i, v := range s {
		f := cdf(v)
		d = max(d, math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n))
	}
	return d
}

func gaps(a Arrival, seed uint64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = a.Gap(seed, i)
	}
	return out
}

// dispersion is the index of dispersion (variance/mean) of arrival counts
// in windows holding `per` arrivals on average.
func dispersion(g []float64, per float64) float64 {
	var counts []float64
	t, w, c := 0.0, per, 0.0
	for _, x := range g {
		t += x
		for t >= w {
			counts = append(counts, c)
			c = 0
			w += per
		}
		c++
	}
	m, v := stat.MeanVariance(counts, nil)
	return v / m
}

func TestArrivalDistributions(t *testing.T) {
	t.Parallel()
	const n = 20000
	// At α = 0.001 the KS critical value is 1.95/√n.
	crit := 1.95 / math.Sqrt(n)
	cases := []struct {
		name    string
		a       Arrival
		cdf     func(float64) float64
		dispLo  float64
		dispHi  float64
		gapCVLo float64
		gapCVHi float64
	}{
		{"poisson", Poisson{}, distuv.Exponential{Rate: 1}.CDF, 0.9, 1.1, 0.97, 1.03},
		{"gamma k=0.5 (bursty)", Gamma{K: 0.5}, distuv.Gamma{Alpha: 0.5, Beta: 0.5}.CDF, 1.7, 2.3, 1.36, 1.47},
		{"gamma k=4 (smooth)", Gamma{K: 4}, distuv.Gamma{Alpha: 4, Beta: 4}.CDF, 0.2, 0.3, 0.48, 0.52},
		{"gamma k=1 is poisson", Gamma{K: 1}, distuv.Exponential{Rate: 1}.CDF, 0.9, 1.1, 0.97, 1.03},
	}
	for _, c := range cases {
		g := gaps(c.a, 42, n)
		if d := ksStat(g, c.cdf); d > crit {
			t.Errorf("%s: KS D = %.4f > %.4f", c.name, d, crit)
		}
		mean, sd := stat.MeanStdDev(g, nil)
		if math.Abs(mean-1) > 0.03 {
			t.Errorf("%s: mean gap %.4f, want 1 (mean rate within 3%%)", c.name, mean)
		}
		if cv := sd / mean; cv < c.gapCVLo || cv > c.gapCVHi {
			t.Errorf("%s: gap CV %.3f outside [%g, %g]", c.name, cv, c.gapCVLo, c.gapCVHi)
		}
		// Index of dispersion of counts in windows of 20 expected arrivals:
		// 1 for Poisson, ≈ 1/K for a gamma renewal process.
		if d := dispersion(g, 20); d < c.dispLo || d > c.dispHi {
			t.Errorf("%s: index of dispersion %.3f outside [%g, %g]", c.name, d, c.dispLo, c.dispHi)
		}
	}
	// And the KS test can fail: exponential gaps are not gamma(4).
	if d := ksStat(gaps(Poisson{}, 42, n), distuv.Gamma{Alpha: 4, Beta: 4}.CDF); d < crit {
		t.Errorf("KS did not reject exponential against gamma(4): D = %.4f", d)
	}
}

func TestGapIsPureFunction(t *testing.T) {
	t.Parallel()
	for _, a := range []Arrival{Poisson{}, Gamma{K: 0.3}} {
		fwd := gaps(a, 7, 50)
		for i := 49; i >= 0; i-- { // any order gives the same gap
			if g := a.Gap(7, i); g != fwd[i] {
				t.Fatalf("%T gap %d: %v then %v", a, i, fwd[i], g)
			}
		}
		if a.Gap(8, 3) == fwd[3] {
			t.Fatalf("%T: seed does not matter", a)
		}
	}
}

func TestDues(t *testing.T) {
	t.Parallel()
	d := Dues(Constant{}, 1, 10, 5, 0, 0)
	if !slices.Equal(d, []float64{0, 0.1, 0.2, 0.30000000000000004, 0.4}) {
		t.Fatalf("constant dues %v", d)
	}
	d = Dues(Poisson{}, 1, 50, 0, 10, 0)
	if len(d) < 400 || len(d) > 600 || d[len(d)-1] >= 10 {
		t.Fatalf("poisson 50/s for 10s: %d dues, last %v", len(d), d[len(d)-1])
	}
	// Ramp: rate rises linearly from 0 to 100/s over 10s, then stays.
	r := Dues(Constant{}, 1, 100, 0, 20, 10)
	in := func(a, b float64) int {
		c := 0
		for _, x := range r {
			if x >= a && x < b {
				c++
			}
		}
		return c
	}
	// Expected counts: ∫ rate: first second 5, second 5–6: 55, after the ramp 100/s.
	if c := in(0, 1); c < 4 || c > 6 {
		t.Errorf("ramp [0,1): %d arrivals, want ≈5", c)
	}
	if c := in(5, 6); c < 54 || c > 56 {
		t.Errorf("ramp [5,6): %d arrivals, want ≈55", c)
	}
	if c := in(15, 16); c < 99 || c > 101 {
		t.Errorf("after ramp [15,16): %d arrivals, want 100", c)
	}
	if !slices.IsSorted(r) {
		t.Error("ramp dues not sorted")
	}
}
