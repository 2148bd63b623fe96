package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// runs makes n samples whose quantiles sit near scale·100 (3% run noise).
func runs(r *rand.Rand, n int, scale float64) []Sample {
	var out []Sample
	for i := 0; i < n; i++ {
		out = append(out, simRun(r, simCfg{}, "shift", scale-1))
	}
	return out
}

func TestDirectionLowerIsWorse(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 1))
	rate := func(v float64) Sample {
		return Sample{Value: v, Rates: []float64{v * 0.99, v * 1.01, v, v * 1.02, v * 0.98}}
	}
	var base, drop, rise []Sample
	for i := 0; i < 5; i++ {
		n := 1 + 0.01*r.NormFloat64()
		base = append(base, rate(1000*n))
		drop = append(drop, rate(700*n))
		rise = append(rise, rate(1300*n))
	}
	spec := Spec{Metric: "output_token_throughput", Stat: "value", Tolerance: 0.05, Direction: LowerIsWorse}
	if v := Compare([]Input{{Spec: spec, Baseline: base, Candidate: drop}}, DefaultOptions).Verdict; v != Fail {
		t.Errorf("30%% throughput drop: %s", v)
	}
	if v := Compare([]Input{{Spec: spec, Baseline: base, Candidate: rise}}, DefaultOptions).Verdict; v != Pass {
		t.Errorf("30%% throughput rise: %s", v)
	}
}

func TestSingleBaselineIsProvisional(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 2))
	in := Input{Spec: Spec{Metric: "ttft", Stat: "p50", Tolerance: 0.05}, Baseline: runs(r, 1, 1), Candidate: runs(r, 1, 1.5)}
	res := Compare([]Input{in}, DefaultOptions).Results[0]
	if !res.Provisional || !strings.Contains(strings.Join(res.Warnings, " "), "noise floor") {
		t.Errorf("K=1 result %+v", res)
	}
	if res.Verdict != Fail {
		t.Errorf("a 50%% slowdown at K=1: %s", res.Verdict)
	}
}

// Holm: two metrics each just past the line on their own; after the
// correction, at most the stronger one fails, and the other says why.
func TestHolmDemotesToInconclusive(t *testing.T) {
	t.Parallel()
	specs := []Spec{{Metric: "a", Stat: "value", Tolerance: 0.05}, {Metric: "b", Stat: "value", Tolerance: 0.05}}
	mk := func(v float64) Sample { return Sample{Value: v, Rates: []float64{v, v}} }
	base := []Sample{mk(100), mk(103), mk(97), mk(100), mk(101), mk(99)}
	var found bool
	for c := 1.08; c < 1.2 && !found; c += 0.002 {
		cand := []Sample{mk(100 * c)}
		cmp := Compare([]Input{{Spec: specs[0], Baseline: base, Candidate: cand}, {Spec: specs[1], Baseline: base, Candidate: cand}}, DefaultOptions)
		single := Compare([]Input{{Spec: specs[0], Baseline: base, Candidate: cand}}, DefaultOptions)
		if single.Verdict == Fail && cmp.Results[0].Verdict == Inconclusive {
			found = true
			if !strings.Contains(strings.Join(cmp.Results[0].Warnings, " "), "Holm") {
				t.Errorf("demoted without saying why: %v", cmp.Results[0].Warnings)
			}
		}
	}
	if !found {
		t.Error("no change size where Holm's correction turned a lone FAIL into INCONCLUSIVE")
	}
}

func TestErrorRate(t *testing.T) {
	t.Parallel()
	r := ErrorRate([][2]int{{0, 100}}, [][2]int{{1, 100}, {2, 100}}, 0.01)
	if r.Verdict != Fail || r.Candidate != 0.015 {
		t.Errorf("%+v", r)
	}
	if r := ErrorRate(nil, [][2]int{{1, 100}}, 0.01); r.Verdict != Pass {
		t.Errorf("exactly at the limit: %s", r.Verdict)
	}
}

// A quantile is gated only when every run holds TailSamples beyond it: a
// p99 from 999 samples per run is shown, never gated (nor counted in
// Holm's correction), and says how many it needs; from 1000 it is gated.
func TestTooFewSamplesNotGated(t *testing.T) {
	t.Parallel()
	mk := func(r *rand.Rand, n int, scale float64) []Sample {
		var out []Sample
		for range 3 {
			var ws []Hist
			for range 5 {
				xs := make([]float64, n/5)
				for i := range xs {
					xs[i] = scale * 100 * (1 + 0.3*r.Float64())
				}
				ws = append(ws, FromValues(xs))
			}
			out = append(out, Sample{Windows: ws, Total: Merge(ws...)})
		}
		return out
	}
	if SamplesFor(0.99) != 1000 || SamplesFor(0.5) != 20 || SamplesFor(0.9) != 100 {
		t.Fatalf("SamplesFor: p99 %d, p50 %d, p90 %d", SamplesFor(0.99), SamplesFor(0.5), SamplesFor(0.9))
	}
	r := rand.New(rand.NewPCG(3, 3))
	spec := Spec{Metric: "latency", Stat: "p99", Tolerance: 0.05}
	small := Compare([]Input{{Spec: spec, Baseline: mk(r, 995, 1), Candidate: mk(r, 995, 1.5)}}, DefaultOptions)
	res := small.Results[0]
	if res.Verdict != NotGated || small.Verdict != Pass || !strings.Contains(strings.Join(res.Warnings, "; "), "needs 1000 samples per run") {
		t.Errorf("995 samples per run: %s (overall %s), %q", res.Verdict, small.Verdict, res.Warnings)
	}
	big := Compare([]Input{{Spec: spec, Baseline: mk(r, 1000, 1), Candidate: mk(r, 1000, 1.5)}}, DefaultOptions)
	if v := big.Results[0].Verdict; v != Fail {
		t.Errorf("1000 samples per run, +50%%: %s", v)
	}
}

// An inconclusive row says how many runs would let an unchanged
// candidate pass, and the number it names does pass it.
func TestInconclusiveSaysWhatItNeeds(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 5))
	spec := Spec{Metric: "latency", Stat: "p50", Tolerance: 0.02}
	res := Compare([]Input{{Spec: spec, Baseline: runs(r, 3, 1), Candidate: runs(r, 2, 1)}}, DefaultOptions).Results[0]
	if res.Verdict != Inconclusive || (res.NeedR <= res.R && res.NeedK == 0) {
		t.Fatalf("3%% run noise at a 2%% tolerance: %s, need K %d R %d", res.Verdict, res.NeedK, res.NeedR)
	}
	if !strings.Contains(strings.Join(res.Warnings, "; "), "4 times in 5 only with") {
		t.Errorf("warnings %q", res.Warnings)
	}
	k := max(res.NeedK, 3)
	passed := 0
	for trial := range 20 {
		r := rand.New(rand.NewPCG(9, uint64(trial)))
		opt := DefaultOptions
		opt.Seed = uint64(trial)
		if Compare([]Input{{Spec: spec, Baseline: runs(r, k, 1), Candidate: runs(r, res.NeedR, 1)}}, opt).Verdict == Pass {
			passed++
		}
	}
	t.Logf("K=3 R=2 at a 2%% tolerance: needs K %d R %d; with them an unchanged candidate passed %d of 20", res.NeedK, res.NeedR, passed)
	if passed < 12 {
		t.Errorf("with the %d baseline and %d candidate runs it named, an unchanged candidate passed %d of 20", k, res.NeedR, passed)
	}
}

// The looks' levels spend α over the runs: they sum to α, the first look
// is stricter than a lone look, and a gate without extra runs has one.
func TestLooks(t *testing.T) {
	t.Parallel()
	ls := Looks(3, 9, 0.05)
	if len(ls) != 3 || ls[0].N != 3 || ls[1].N != 6 || ls[2].N != 9 {
		t.Fatalf("looks %+v", ls)
	}
	sum, pass := 0.0, 0.0
	for _, l := range ls {
		sum += l.Alpha
		pass += l.PassAlpha
	}
	if math.Abs(sum-0.05) > 1e-12 || ls[0].Alpha >= 0.05 || ls[0].Alpha < 0.02 {
		t.Errorf("levels %+v sum to %v", ls, sum)
	}
	// A PASS keeps most of its α for the last look.
	if math.Abs(pass-0.05) > 1e-12 || ls[0].PassAlpha > 0.005 || ls[2].PassAlpha < 0.025 {
		t.Errorf("PASS levels %+v sum to %v", ls, pass)
	}
	if ls := Looks(3, 3, 0.05); len(ls) != 1 || ls[0].Alpha != 0.05 || ls[0].PassAlpha != 0.05 {
		t.Errorf("no extra runs: %+v", ls)
	}
	if ls := Looks(3, 8, 0.05); ls[len(ls)-1].N != 8 {
		t.Errorf("the last look is at most: %+v", ls)
	}
}
