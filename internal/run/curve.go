package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// PrefillCurveFile is AIPerf's prefill-ttft-curve recipe's artifact, in
// the sweep's sweep_aggregate folder.
const PrefillCurveFile = "prefill_curve.json"

// PrefillCurve is AIPerf's prefill_curve.json: TTFT (mean, ms) against
// the input length at concurrency 1, fitted by least squares, linear
// unless its r² is below CurveFloor, then quadratic; coefficients highest
// power first (TTFT = c0·ISL + c1, or c0·ISL² + c1·ISL + c2).
type PrefillCurve struct {
	FitForm      string       `json:"fit_form"`
	Coefficients []float64    `json:"coefficients"`
	RSquared     float64      `json:"r_squared"`
	BelowFloor   bool         `json:"below_floor"` // the fit kept explains less than CurveFloor
	RawPoints    []CurvePoint `json:"raw_points"`
}

// CurvePoint is one input length's mean TTFT.
type CurvePoint struct {
	ISL    float64 `json:"isl"`
	TTFTms float64 `json:"ttft_ms"`
}

// CurveFloor is the r² under which a linear fit gives way to a quadratic
// one, and a fit is flagged (AIPerf's 0.85).
const CurveFloor = 0.85

// FitPrefillCurve fits the sweep's points: an error with fewer than three
// input lengths that have a TTFT (a quadratic needs three).
func FitPrefillCurve(res *SweepResult) (*PrefillCurve, error) {
	c := &PrefillCurve{RawPoints: []CurvePoint{}}
	for _, v := range res.Values {
		if st, ok := v.Stats["time_to_first_token_avg"]; ok && len(v.Runs) > 0 {
			c.RawPoints = append(c.RawPoints, CurvePoint{ISL: v.Value, TTFTms: st.Mean})
		}
	}
	if len(c.RawPoints) < 3 {
		return c, fmt.Errorf("prefill-ttft-curve: %d input lengths with a TTFT, a fit needs 3 (a streaming endpoint, and runs that succeeded)", len(c.RawPoints))
	}
	c.FitForm, c.Coefficients, c.RSquared = "linear", nil, 0
	coef, r2, err := polyfit(c.RawPoints, 1)
	if err != nil {
		return c, err
	}
	c.Coefficients, c.RSquared = coef, r2
	if r2 < CurveFloor {
		if q, qr2, err := polyfit(c.RawPoints, 2); err == nil {
			c.FitForm, c.Coefficients, c.RSquared = "quadratic", q, qr2
		}
	}
	c.BelowFloor = c.RSquared < CurveFloor
	return c, nil
}

// polyfit is the least-squares polynomial of degree deg through the
// points, highest power first, and its r².
func polyfit(pts []CurvePoint, deg int) ([]float64, float64, error) {
	n := len(pts)
	a := mat.NewDense(n, deg+1, nil)
	y := mat.NewVecDense(n, nil)
	for i, p := range pts {
		for j := 0; j <= deg; j++ {
			a.Set(i, j, math.Pow(p.ISL, float64(deg-j)))
		}
		y.SetVec(i, p.TTFTms)
	}
	var x mat.VecDense
	if err := x.SolveVec(a, y); err != nil {
		return nil, 0, fmt.Errorf("prefill-ttft-curve: the %s fit: %v", map[int]string{1: "linear", 2: "quadratic"}[deg], err)
	}
	coef := make([]float64, deg+1)
	for j := range coef {
		coef[j] = x.AtVec(j)
	}
	mean := 0.0
	for _, p := range pts {
		mean += p.TTFTms
	}
	mean /= float64(n)
	var ssRes, ssTot float64
	for _, p := range pts {
		f := 0.0
		for j, c := range coef {
			f += c * math.Pow(p.ISL, float64(deg-j))
		}
		ssRes += (p.TTFTms - f) * (p.TTFTms - f)
		ssTot += (p.TTFTms - mean) * (p.TTFTms - mean)
	}
	if ssTot == 0 {
		return coef, 0, nil // (flat: no variance to explain)
	}
	return coef, 1 - ssRes/ssTot, nil
}

// WritePrefillCurve writes the curve beside the sweep's aggregate.
func WritePrefillCurve(dir string, c *PrefillCurve) (string, error) {
	if c == nil {
		return "", errors.New("no curve")
	}
	path := filepath.Join(dir, "sweep_aggregate", PrefillCurveFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	return path, result.WriteFileAtomic(path, append(b, '\n'))
}

// PrefillISLs are the recipe's input lengths: from min, doubling, to max
// (max itself last when the doubling passes it).
func PrefillISLs(lo, hi int) ([]float64, error) {
	if lo < 1 || hi <= lo {
		return nil, fmt.Errorf("--isl-min %d and --isl-max %d: want 1 ≤ min < max", lo, hi)
	}
	var out []float64
	for v := lo; v < hi; v *= 2 {
		out = append(out, float64(v))
	}
	return append(out, float64(hi)), nil
}
