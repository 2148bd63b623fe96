package compare

import (
	"math"
	"sort"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/gonum/mathext"
)

// Hist is a histogram as ascending distinct values with their counts.
// Zero counts are allowed (a resample may leave a value out).
type Hist struct {
	Values []float64
	Counts []int64
	N      int64
}

// FromHDR converts an HdrHistogram. Each bucket is represented by the middle
// of its equivalent-value range, divided by scale (so µs histograms with
// scale 1000 give ms).
func FromHDR(h *hdr.Histogram, scale float64) Hist {
	s := h.Export()
	unit := int64(math.Floor(math.Log2(float64(max(s.LowestTrackableValue, 1)))))
	subCountMag := int64(math.Ceil(math.Log2(2 * math.Pow10(int(s.SignificantFigures)))))
	halfMag := max(subCountMag, 1) - 1
	half := int64(1) << halfMag
	var out Hist
	for i, c := range s.Counts {
		if c == 0 {
			continue
		}
		idx := int64(i)
		b, sub := int64(0), idx
		if idx >= 2*half {
			b = (idx >> halfMag) - 1
			sub = (idx & (half - 1)) + half
		}
		lowest := sub << (b + unit)
		size := int64(1) << (b + unit)
		v := float64(lowest+size/2) / scale
		if size == 1 {
			v = float64(lowest) / scale
		}
		out.Values = append(out.Values, v)
		out.Counts = append(out.Counts, c)
		out.N += c
	}
	return out
}

// FromValues makes a Hist from raw samples (tests, small data).
func FromValues(xs []float64) Hist {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	var h Hist
	for i, v := range s {
		if i > 0 && v == s[i-1] {
			h.Counts[len(h.Counts)-1]++
		} else {
			h.Values = append(h.Values, v)
			h.Counts = append(h.Counts, 1)
		}
		h.N++
	}
	return h
}

// Merge adds histograms together (pairwise merges of sorted values).
func Merge(hs ...Hist) Hist {
	var out Hist
	for _, h := range hs {
		out = merge2(out, h)
	}
	return out
}

func merge2(a, b Hist) Hist {
	out := Hist{Values: make([]float64, 0, len(a.Values)+len(b.Values)), Counts: make([]int64, 0, len(a.Values)+len(b.Values)), N: a.N + b.N}
	i, j := 0, 0
	for i < len(a.Values) || j < len(b.Values) {
		switch {
		case j == len(b.Values) || i < len(a.Values) && a.Values[i] < b.Values[j]:
			out.Values, out.Counts = append(out.Values, a.Values[i]), append(out.Counts, a.Counts[i])
			i++
		case i == len(a.Values) || b.Values[j] < a.Values[i]:
			out.Values, out.Counts = append(out.Values, b.Values[j]), append(out.Counts, b.Counts[j])
			j++
		default: // equal values
			out.Values, out.Counts = append(out.Values, a.Values[i]), append(out.Counts, a.Counts[i]+b.Counts[j])
			i++
			j++
		}
	}
	return out
}

// Equal reports whether two histograms hold the same data.
func (h Hist) Equal(o Hist) bool {
	a, b := h.compact(), o.compact()
	if a.N != b.N || len(a.Values) != len(b.Values) {
		return false
	}
	for i := range a.Values {
		if a.Values[i] != b.Values[i] || a.Counts[i] != b.Counts[i] {
			return false
		}
	}
	return true
}

func (h Hist) compact() Hist {
	var out Hist
	for i, c := range h.Counts {
		if c > 0 {
			out.Values = append(out.Values, h.Values[i])
			out.Counts = append(out.Counts, c)
			out.N += c
		}
	}
	return out
}

// An Estimator estimates the p-quantile (0 < p < 1) of a histogram.
type Estimator func(h Hist, p float64) float64

// Empirical is the inverse of the empirical CDF at the nearest rank: the
// smallest value whose cumulative count reaches round(p·n), HdrHistogram's
// own definition (so it agrees with run.json's summaries up to how a bucket
// is represented).
func Empirical(h Hist, p float64) float64 {
	if h.N == 0 {
		return math.NaN()
	}
	return rankValue(h, int64(p*float64(h.N)+0.5))
}

// HarrellDavis is the Harrell–Davis (1982) estimator: a weighted sum of all
// order statistics with weights from the Beta(p(n+1), (1−p)(n+1)) CDF,
//
//	Q(p) = Σ_i [I_{i/n}(a,b) − I_{(i−1)/n}(a,b)] · x_(i)
//
// Tied order statistics (one histogram bucket) share one weight difference.
// Buckets more than 12 Beta standard deviations from p carry no weight
// worth computing and are skipped.
func HarrellDavis(h Hist, p float64) float64 {
	if h.N == 0 {
		return math.NaN()
	}
	n := float64(h.N)
	a, b := p*(n+1), (1-p)*(n+1)
	sd := math.Sqrt(a * b / ((a + b) * (a + b) * (a + b + 1)))
	lo, hi := p-12*sd, p+12*sd
	var sum, prevI float64
	var c int64
	started := false
	for i, k := range h.Counts {
		if k == 0 {
			continue
		}
		x0 := float64(c) / n
		c += k
		x1 := float64(c) / n
		if x1 < lo {
			continue
		}
		if !started {
			prevI = mathext.RegIncBeta(a, b, x0)
			started = true
		}
		var I float64
		if x0 > hi {
			I = 1
		} else {
			I = mathext.RegIncBeta(a, b, x1)
		}
		sum += (I - prevI) * h.Values[i]
		prevI = I
		if x0 > hi {
			break
		}
	}
	return sum
}
