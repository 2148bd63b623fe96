package capacity

import (
	"context"
	"math"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
)

// What the peers' methods need for this search's precision, on the same
// offline engine (default preset, TTFT ≤ 500 ms for 95%, 600-request
// probes after 100 of warmup, 20 seeds, the same truth):
//
//   - a grid: k constant rates evenly spaced from 1 to 40 requests/s (a
//     user's range; the truth is 17.6), r runs each with their own seeds,
//     the crossing interpolated linearly between the two rates either side
//     of it: guidellm's and inference-perf's way (their sweeps interpolate
//     between anchor runs with no uncertainty);
//   - the same grid with the crossing of an isotonic fit: the core of
//     AIPerf's smooth_isotonic, without its replicates near the boundary
//     and its bootstrap interval (not modelled here).
//
// Each is logged with its median and 90th-percentile error against the
// truth beside this search's at its default budget, and the smallest grid
// whose 90th-percentile error is at most this search's (a grid's median
// is a lottery of where its rates fall: one near the truth makes it
// small, and its tail large). Neither grid gives an
// interval: its error is known only against a truth a real server does
// not have. The figures are the README's; the test fails if a single-run
// grid of no more runs than this search's probes has a smaller tail.
func TestPeerMethodsOnTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("20 searches and 20 sweeps of each size: about half a minute")
	}
	c := engineCase{preset: engine.DefaultPreset, isl: 512, osl: 128, sloMs: 500, start: 4}
	p, err := engine.PresetNamed(c.preset)
	if err != nil {
		t.Fatal(err)
	}
	const n, warmup = 700, 100
	truth := c.trueCapacity(p.Config, n, warmup, 200)
	var ours []float64
	probes := 0
	for seed := uint64(1); seed <= 20; seed++ {
		pr := ProberFunc(func(_ context.Context, load float64, rep int) (Probe, error) {
			s := seed*1000 + uint64(rep)
			g, j, eff := c.attainment(p.Config, load, n, warmup, s)
			return Probe{Load: load, N: j, Good: g, Replicate: rep, Seed: s, Effective: eff}, nil
		})
		res, err := Search(context.Background(), pr, Options{Start: c.start}, nil)
		if err != nil {
			t.Fatal(err)
		}
		probes += len(res.Probes)
		ours = append(ours, math.Abs(res.Estimate.Capacity/truth-1))
	}
	oursMed, oursP90 := engine.Median(ours), engine.Quantile(ours, 0.9)
	t.Logf("truth %.3f req/s; this search: %.1f probes a search, median |error| %.1f%%, p90 %.1f%%, with an interval", truth, float64(probes)/20, 100*oursMed, 100*oursP90)
	type method struct {
		name string
		est  func(ps []Probe) float64
	}
	methods := []method{
		{"grid, linear (guidellm)", func(ps []Probe) float64 { return linearCrossing(pool(ps), 0.95) }},
		{"grid, isotonic (AIPerf's fit)", func(ps []Probe) float64 {
			e, err := EstimateOf(ps, 0.95, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			return e.Capacity
		}},
	}
	need := map[string]int{}
	for _, g := range []struct{ k, r int }{{8, 1}, {16, 1}, {25, 1}, {40, 1}, {8, 3}, {16, 3}, {25, 3}} {
		errs := make([][]float64, len(methods))
		for seed := uint64(1); seed <= 20; seed++ {
			var ps []Probe
			for i := 0; i < g.k; i++ {
				// 1 to 40 requests/s: a user's range, not the truth's.
				rate := 1 + 39*float64(i)/float64(g.k-1)
				for rep := 0; rep < g.r; rep++ {
					s := seed*100000 + uint64(i*10+rep) // (each run its own seed, as runs are)
					good, j, _ := c.attainment(p.Config, rate, n, warmup, s)
					ps = append(ps, Probe{Load: rate, N: j, Good: good, Replicate: rep})
				}
			}
			for m, me := range methods {
				errs[m] = append(errs[m], math.Abs(me.est(ps)/truth-1))
			}
		}
		for m, me := range methods {
			p90 := engine.Quantile(errs[m], 0.9)
			if k, ok := need[me.name]; (!ok || g.k*g.r < k) && p90 <= oursP90 {
				need[me.name] = g.k * g.r
			}
			t.Logf("%-30s %2d rates × %d runs: median |error| %.1f%%, p90 %.1f%%", me.name, g.k, g.r, 100*engine.Median(errs[m]), 100*p90)
			// The claim the README makes: no single-run grid of as many
			// runs as this search's probes has a tail as small.
			if g.r == 1 && g.k <= probes/20 && p90 <= oursP90 {
				t.Errorf("%s of %d rates: a 90th-percentile error of %.1f%%, at most this search's %.1f%% in %d probes", me.name, g.k, 100*p90, 100*oursP90, probes/20)
			}
		}
	}
	for _, me := range methods {
		if k, ok := need[me.name]; ok {
			t.Logf("%s: %d runs for a 90th-percentile error at most this search's %.1f%% (%d probes, with an interval)", me.name, k, 100*oursP90, probes/20)
		} else {
			t.Logf("%s: no grid tried (up to 75 runs) reaches this search's 90th-percentile error %.1f%% (%d probes, with an interval)", me.name, 100*oursP90, probes/20)
		}
	}
}

// pool is one probe a rate: the runs at each rate summed, in rate order.
func pool(ps []Probe) []Probe {
	var out []Probe
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1].Load == p.Load {
			out[n-1].N += p.N
			out[n-1].Good += p.Good
			continue
		}
		out = append(out, p)
	}
	return out
}

// linearCrossing is where the attainment crosses target between the last
// rate at or above it and the next, by linear interpolation of the raw
// attainments (no fit); the highest rate when none falls below.
func linearCrossing(ps []Probe, target float64) float64 {
	for i := 1; i < len(ps); i++ {
		a, b := ps[i-1], ps[i]
		if a.Attainment() >= target && b.Attainment() < target {
			return a.Load + (b.Load-a.Load)*(a.Attainment()-target)/(a.Attainment()-b.Attainment())
		}
	}
	if ps[0].Attainment() < target {
		return ps[0].Load
	}
	return ps[len(ps)-1].Load
}
