package capacity

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
)

func TestClopperPearson(t *testing.T) {
	// Known values: 0 of 10 at 95% is [0, 0.3085]; 5 of 10 is [0.1871, 0.8129].
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{{0, 10, 0, 0.30850}, {5, 10, 0.18709, 0.81291}, {10, 10, 0.69150, 1}, {95, 100, 0.88716, 0.98357}} {
		lo, hi := ClopperPearson(c.k, c.n, 0.95)
		if math.Abs(lo-c.lo) > 1e-4 || math.Abs(hi-c.hi) > 1e-4 {
			t.Errorf("%d of %d: [%.5f, %.5f], want [%.5f, %.5f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func TestEstimateOf(t *testing.T) {
	e, err := EstimateOf([]Probe{{Load: 10, N: 1000, Good: 1000}, {Load: 20, N: 1000, Good: 990}, {Load: 30, N: 1000, Good: 600},
		{Load: 25, N: 1000, Good: 970}, {Load: 40, N: 1000, Good: 20}}, 0.95, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if !e.LoBounded || !e.HiBounded || e.Lo != 25 || e.Hi != 30 || !(e.Capacity > 25 && e.Capacity < 30) {
		t.Errorf("%s: %+v", e, e)
	}
	// 0.97 to 0.60 across the target is a fall of 0.37: no cliff (0.60 to
	// 0.02 is not across it).
	if e.Cliff != nil {
		t.Errorf("cliff %+v", e.Cliff)
	}
	e, _ = EstimateOf([]Probe{{Load: 10, N: 1000, Good: 990}, {Load: 12, N: 1000, Good: 200}}, 0.95, 0.95)
	if e.Cliff == nil || e.Cliff.From != 10 || e.Cliff.To != 12 || e.Lo != 10 || e.Hi != 12 {
		t.Errorf("a fall from 0.99 to 0.20 between 10 and 12: %+v %+v", e, e.Cliff)
	}
	// A violation of monotony is pooled, not believed.
	e, _ = EstimateOf([]Probe{{Load: 10, N: 100, Good: 90}, {Load: 20, N: 100, Good: 99}}, 0.95, 0.95)
	if e.Points[0].Fit != e.Points[1].Fit || e.Points[0].Fit != 0.945 {
		t.Errorf("fit %+v", e.Points)
	}
	if _, err := EstimateOf([]Probe{{Load: 10, N: 0}}, 0.95, 0.95); err == nil {
		t.Error("a probe of no requests")
	}
}

// The engine model's capacity: the Poisson rate at which 95% of requests
// see their first token within the objective, counted from their arrival
// (so queueing counts), run offline in virtual time.
type engineCase struct {
	preset   string
	isl, osl int
	sloMs    float64
	start    float64 // the search's first rate
	// bound is the searches of 20 whose interval must hold the truth; 0
	// logs the figures only (a preset the search does not yet bound in
	// its 25 probes: see the package's notes).
	bound int
}

func (c engineCase) attainment(cfg engine.Config, rate float64, n, warmup int, seed uint64) (good, judged int, eff float64) {
	o := engine.Simulate(cfg, engine.Load{Requests: n, ISL: c.isl, OSL: c.osl, Rate: rate, Seed: seed, Warmup: warmup})
	flags := make([]bool, len(o.TTFTms))
	for i, v := range o.TTFTms {
		flags[i] = v <= c.sloMs
		if flags[i] {
			good++
		}
	}
	return good, len(o.TTFTms), EffectiveN(flags, 10)
}

// trueCapacity is the rate at which runs of n requests after warmup
// attain 95% on average (over many seeds, none of the searches'): what
// a probe of that shape measures. A longer run sees a longer queue past
// the knee, so the steady-state capacity (n large) is lower.
func (c engineCase) trueCapacity(cfg engine.Config, n, warmup, seeds int) float64 {
	lo, hi := c.start/8, c.start*64
	for hi/lo-1 > 0.001 {
		mid := math.Sqrt(lo * hi)
		g, j := 0, 0
		for s := 0; s < seeds; s++ {
			a, b, _ := c.attainment(cfg, mid, n, warmup, 900000+uint64(s))
			g, j = g+a, j+b
		}
		if float64(g)/float64(j) >= 0.95 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Sqrt(lo * hi)
}

// On engine mode's default preset, the found capacity's interval holds
// the true one in at least 18 of 20 seeds; on the Qwen3-0.6B preset the
// figures are logged (today 11 of 20: 9 intervals are left unbounded
// above within 25 probes). The mean probes, requests, width and error
// are logged. The model is run offline (virtual time), so the
// figures are the same on every machine.
func TestSearchFindsTheEngineCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("40 searches and their truths: about a minute")
	}
	for _, c := range []engineCase{
		{preset: engine.DefaultPreset, isl: 512, osl: 128, sloMs: 500, start: 4, bound: 18},
		{preset: "qwen3-0.6b-h100", isl: 512, osl: 128, sloMs: 100, start: 10},
	} {
		t.Run(c.preset, func(t *testing.T) { searchCoverage(t, c) })
	}
}

func searchCoverage(t *testing.T, c engineCase) {
	p, err := engine.PresetNamed(c.preset)
	if err != nil {
		t.Fatal(err)
	}
	const n, warmup = 700, 100
	truth := c.trueCapacity(p.Config, n, warmup, 200)
	steady := c.trueCapacity(p.Config, 30000, 2000, 3)
	t.Logf("true capacity at TTFT ≤ %g ms for 95%% of requests (ISL %d, OSL %d): %.3f req/s for runs of %d requests after %d of warmup (%.3f in steady state)", c.sloMs, c.isl, c.osl, truth, n-warmup, warmup, steady)
	hits, probes, requests := 0, 0, 0
	served := 0.0 // seconds of load a search sends: each probe's requests and warmup at its rate
	var widths, errs []float64
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
		e := res.Estimate
		in := e.LoBounded && e.HiBounded && e.Lo <= truth && truth <= e.Hi
		if in {
			hits++
		}
		probes += len(res.Probes)
		for _, pb := range res.Probes {
			requests += pb.N
			served += float64(n) / pb.Load
		}
		widths = append(widths, e.Width())
		errs = append(errs, e.Capacity/truth-1)
		t.Logf("seed %2d: %s; %d probes, stopped on %s; truth inside: %v", seed, e, len(res.Probes), res.Stopped, in)
	}
	t.Logf("interval held the truth in %d of 20; mean %.1f probes, %.0f requests and %.1f minutes of load a search (the server's time; the tester's between probes not counted); median width %.1f%%, median |error| of the point %.1f%%",
		hits, float64(probes)/20, float64(requests)/20, served/20/60, 100*engine.Median(widths), 100*engine.Median(abs(errs)))
	if hits < c.bound {
		t.Errorf("the interval held the true capacity in %d of 20 searches, want at least %d", hits, c.bound)
	}
}

func abs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Abs(x)
	}
	return out
}

// More runs at a load never undo its bound: the probes of a CI search
// (two runs at 160 requests/s, 21.7% and 25.8% good) once made its
// interval reach 100% through a t interval of one degree of freedom, and
// left the capacity unbounded above. They bound it at 160.
func TestTwoRunsKeepAFailingLoadBounded(t *testing.T) {
	probes := []Probe{{Load: 10, N: 120, Good: 120}, {Load: 20, N: 120, Good: 120},
		{Load: 40, N: 120, Good: 120}, {Load: 80, N: 120, Good: 120}, {Load: 160, N: 120, Good: 31},
		{Load: 80, N: 120, Good: 120, Replicate: 1}, {Load: 80, N: 120, Good: 115, Replicate: 2},
		{Load: 40, N: 120, Good: 120, Replicate: 1}, {Load: 40, N: 120, Good: 120, Replicate: 2}}
	one, err := EstimateOf(probes, 0.9, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	two, _ := EstimateOf(append(probes, Probe{Load: 160, N: 120, Good: 26, Replicate: 1}), 0.9, 0.95)
	for _, e := range []Estimate{one, two} {
		if !e.HiBounded || e.Hi != 160 || !e.LoBounded || e.Lo > e.Capacity || e.Capacity > e.Hi {
			t.Errorf("%s", e)
		}
	}
	// Three runs take the t interval of their mean: a spread as wide as
	// 5% to 95% good leaves the load undecided.
	e, _ := EstimateOf([]Probe{{Load: 10, N: 1000, Good: 1000}, {Load: 20, N: 1000, Good: 50}, {Load: 20, N: 1000, Good: 950, Replicate: 1},
		{Load: 20, N: 1000, Good: 500, Replicate: 2}}, 0.9, 0.95)
	if e.HiBounded {
		t.Errorf("runs of 5%%, 95%% and 50%% good bound the capacity: %s", e)
	}
}

// A concurrency search probes whole numbers only, and ends when two
// adjacent concurrencies bound the capacity: here every probe of a
// server that holds 37 streams and not 38 (99% against 80% good).
func TestIntegerSearchEndsAtAdjacentConcurrencies(t *testing.T) {
	pr := ProberFunc(func(_ context.Context, load float64, rep int) (Probe, error) {
		if load != math.Round(load) || load < 1 {
			t.Fatalf("probed concurrency %g", load)
		}
		r := rand.New(rand.NewPCG(uint64(load), uint64(rep)))
		p := 0.99
		if load > 37 {
			p = 0.80
		}
		good := 0
		for range 2000 {
			if r.Float64() < p {
				good++
			}
		}
		return Probe{Load: load, N: 2000, Good: good, Replicate: rep}, nil
	})
	res, err := Search(context.Background(), pr, Options{Start: 3, Integer: true, MaxProbes: 60, Precision: 0.001}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := res.Estimate
	if !e.LoBounded || !e.HiBounded || e.Lo != 37 || e.Hi != 38 || res.Stopped != "precision" {
		t.Errorf("%s, stopped on %s after %d probes; want the interval 37 to 38 and a stop on precision", e, res.Stopped, len(res.Probes))
	}
	t.Logf("%s; %d probes", e, len(res.Probes))
}
