package run

import (
	"math"
	"slices"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// The prefill curve's fit: a linear TTFT(ISL) is found with its
// coefficients; a curved one falls back to the quadratic, which finds
// them; a flat one is flagged below the floor; too few points say so.
func TestFitPrefillCurve(t *testing.T) {
	sweep := func(f func(x float64) float64, xs ...float64) *SweepResult {
		res := &SweepResult{}
		for _, x := range xs {
			res.Values = append(res.Values, SweepValue{Value: x, Runs: make([]*result.Run, 1), Stats: map[string]SweepStat{"time_to_first_token_avg": {Mean: f(x)}}})
		}
		return res
	}
	isls, err := PrefillISLs(256, 32768)
	if err != nil || !slices.Equal(isls, []float64{256, 512, 1024, 2048, 4096, 8192, 16384, 32768}) {
		t.Fatalf("%v %v", isls, err)
	}
	if got, _ := PrefillISLs(300, 1000); !slices.Equal(got, []float64{300, 600, 1000}) {
		t.Errorf("300 to 1000: %v", got)
	}
	if _, err := PrefillISLs(512, 512); err == nil {
		t.Error("min = max taken")
	}
	c, err := FitPrefillCurve(sweep(func(x float64) float64 { return 0.0641*x + 1.83 }, isls...))
	if err != nil || c.FitForm != "linear" || math.Abs(c.Coefficients[0]-0.0641) > 1e-9 || math.Abs(c.Coefficients[1]-1.83) > 1e-6 || c.RSquared < 0.999 || c.BelowFloor {
		t.Errorf("linear: %+v %v", c, err)
	}
	// A line explains 93% of a pure square on the doubling grid, so
	// AIPerf's rule (quadratic below r² 0.85) keeps the line there; a
	// curve a line explains less of falls back to the quadratic, which
	// finds its coefficients.
	c, err = FitPrefillCurve(sweep(func(x float64) float64 { return 1e-6*x*x + 5 }, isls...))
	if err != nil || c.FitForm != "linear" || c.RSquared < 0.85 {
		t.Errorf("a square: %+v %v", c, err)
	}
	c, err = FitPrefillCurve(sweep(func(x float64) float64 { return 1e-6*(x-16000)*(x-16000) + 5 }, isls...))
	if err != nil || c.FitForm != "quadratic" || math.Abs(c.Coefficients[0]-1e-6) > 1e-12 || c.BelowFloor {
		t.Errorf("quadratic: %+v %v", c, err)
	}
	c, err = FitPrefillCurve(sweep(func(x float64) float64 { return 20 + float64(int(x)%3) }, isls...))
	if err != nil || !c.BelowFloor {
		t.Errorf("flat: %+v %v", c, err)
	}
	if _, err := FitPrefillCurve(sweep(func(x float64) float64 { return x }, 1, 2)); err == nil {
		t.Error("two points fitted")
	}
}
