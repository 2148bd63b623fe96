package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/aiperf-action/aiperf-action/internal/seeds"
	"gonum.org/v1/gonum/stat/distuv"
)

// An Arrival process decides the gap before each request of an open loop.
// Gap is a pure function of (seed, i): the i-th gap is drawn from its own
// generator seeded by both, so any gap can be recomputed alone, in any
// order, on any machine, and tests need no clock.
type Arrival interface {
	// Gap returns the i-th inter-arrival gap in seconds for mean rate 1/s.
	// Callers scale it by 1/rate.
	Gap(seed uint64, i int) float64
}

// ArrivalFunc adapts a function to Arrival.
type ArrivalFunc func(seed uint64, i int) float64

// Gap calls f.
func (f ArrivalFunc) Gap(seed uint64, i int) float64 { return f(seed, i) }

// Constant spaces requests evenly.
type Constant struct{}

// Poisson draws exponential gaps: a memoryless stream with index of
// dispersion 1.
type Poisson struct{}

// Gamma draws gamma gaps with shape K and mean 1. K is vLLM's --burstiness
// and AIPerf's --arrival-smoothness: K = 1 is Poisson, K < 1 is burstier
// (gap CV = 1/√K > 1), K > 1 is smoother.
type Gamma struct{ K float64 }

var (
	_ Arrival = Constant{}
	_ Arrival = Poisson{}
	_ Arrival = Gamma{}
	_ Arrival = ArrivalFunc(nil)
)

// Gap is always 1.
func (Constant) Gap(uint64, int) float64 { return 1 }

// Gap is Exp(1).
func (Poisson) Gap(seed uint64, i int) float64 {
	return distuv.Exponential{Rate: 1, Src: gapSource(seed, i)}.Rand()
}

// Gap is Gamma(K, rate K), whose mean is 1.
func (g Gamma) Gap(seed uint64, i int) float64 {
	return distuv.Gamma{Alpha: g.K, Beta: g.K, Src: gapSource(seed, i)}.Rand()
}

func gapSource(seed uint64, i int) rand.Source {
	return seeds.Source(seed, seeds.StreamArrivals, uint64(i))
}

// NewArrival returns the process for --arrival-pattern.
func NewArrival(pattern string, smoothness float64) (Arrival, error) {
	switch pattern {
	case "constant":
		return Constant{}, nil
	case "poisson", "":
		return Poisson{}, nil
	case "gamma":
		if !(smoothness > 0) {
			return nil, fmt.Errorf("--arrival-smoothness %g: must be positive", smoothness)
		}
		return Gamma{K: smoothness}, nil
	}
	return nil, fmt.Errorf("--arrival-pattern %q: want constant, poisson or gamma", pattern)
}

// Dues returns the send offsets (seconds from the start) of an open loop at
// mean rate: the first request is due at 0 and request i at the sum of the
// first i gaps. It stops after n requests (n > 0) or at the first due time
// at or after limit seconds (limit > 0), whichever comes first.
//
// With a ramp (rampS > 0) the rate rises linearly from 0 to rate over rampS
// seconds. The base process is laid out at the full rate and time-warped
// through the inverse of the cumulative rate Λ(t)/rate:
//
//	g(t) = t²/(2·ramp)   for t < ramp
//	g(t) = t − ramp/2    after
//
// so request i, at base time τ, is due at g⁻¹(τ). A late send never moves
// a later due time: these are absolute offsets, fixed before the run.
func Dues(a Arrival, seed uint64, rate float64, n int, limit, rampS float64) []float64 {
	var out []float64
	d := &dueSpec{a: a, seed: seed, rate: rate, n: n, limit: limit, ramp: rampS}
	for t, ok := d.next(); ok; t, ok = d.next() {
		out = append(out, t)
	}
	return out
}

// warp maps base time tau through g⁻¹ for a linear ramp of length ramp.
func warp(tau, ramp float64) float64 {
	if ramp <= 0 {
		return tau
	}
	if tau < ramp/2 {
		return math.Sqrt(2 * ramp * tau)
	}
	return tau + ramp/2
}

// dueSpec is an open loop's arrival process, laid out as Dues says, one
// due offset at a time.
type dueSpec struct {
	a           Arrival
	seed        uint64
	rate        float64
	n           int
	limit, ramp float64
	i           int
	tau         float64
	done        bool
	endless     bool // neither a count nor a limit: ticks until the sends stop
}

// next is the next due offset, in seconds.
func (d *dueSpec) next() (float64, bool) {
	if d.done || (d.n > 0 && d.i >= d.n) || (d.n <= 0 && d.limit <= 0 && d.i > 0 && !d.endless) {
		return 0, false // (neither a count nor a limit: one, not a loop forever)
	}
	if d.i > 0 {
		d.tau += d.a.Gap(d.seed, d.i-1) / d.rate
	}
	t := warp(d.tau, d.ramp)
	if d.limit > 0 && t >= d.limit {
		d.done = true
		return 0, false
	}
	d.i++
	return t, true
}

// count is how many due offsets the process lays out (a pass over its
// gaps, none kept).
func (d dueSpec) count() int {
	n := 0
	for _, ok := d.next(); ok; _, ok = d.next() {
		n++
	}
	return n
}
