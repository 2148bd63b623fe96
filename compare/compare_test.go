package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
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

// Hommel: a metric just past the line on its own, next to one that did
// not move; after the correction across both it is INCONCLUSIVE and says
// why. Two that both moved as far fail together: with every p-value at
// most α, Hommel's step-up rejects them all.
func TestMultiplicityDemotesToInconclusive(t *testing.T) {
	t.Parallel()
	specs := []Spec{{Metric: "a", Stat: "value", Tolerance: 0.05}, {Metric: "b", Stat: "value", Tolerance: 0.05}}
	mk := func(v float64) Sample { return Sample{Value: v, Rates: []float64{v, v}} }
	base := []Sample{mk(100), mk(103), mk(97), mk(100), mk(101), mk(99)}
	var found bool
	for c := 1.08; c < 1.2 && !found; c += 0.002 {
		cand := []Sample{mk(100 * c)}
		still := []Sample{mk(100)}
		cmp := Compare([]Input{{Spec: specs[0], Baseline: base, Candidate: cand}, {Spec: specs[1], Baseline: base, Candidate: still}}, DefaultOptions)
		single := Compare([]Input{{Spec: specs[0], Baseline: base, Candidate: cand}}, DefaultOptions)
		both := Compare([]Input{{Spec: specs[0], Baseline: base, Candidate: cand}, {Spec: specs[1], Baseline: base, Candidate: cand}}, DefaultOptions)
		if single.Verdict == Fail && cmp.Results[0].Verdict == Inconclusive {
			found = true
			if !strings.Contains(strings.Join(cmp.Results[0].Warnings, " "), "Hommel") {
				t.Errorf("demoted without saying why: %v", cmp.Results[0].Warnings)
			}
			if both.Results[0].Verdict != Fail || both.Results[1].Verdict != Fail {
				t.Errorf("both moved %+.1f%%: %s and %s, want both FAIL", 100*(c-1), both.Results[0].Verdict, both.Results[1].Verdict)
			}
		}
	}
	if !found {
		t.Error("no change size where the correction turned a lone FAIL into INCONCLUSIVE")
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

// The looks' levels spend α over the runs: a Gaussian random walk under
// the null (runs added one by one) crosses the boundaries they set with the
// probability each spending function gives, look by look and in all; the
// first look is stricter than a lone look, later looks get more than their
// share of α (their statistics are correlated), and a gate without extra
// runs has one look.
func TestLooks(t *testing.T) {
	t.Parallel()
	ls := Looks(3, 9, 0.05)
	if len(ls) != 3 || ls[0].N != 3 || ls[1].N != 6 || ls[2].N != 9 {
		t.Fatalf("looks %+v", ls)
	}
	const paths = 200000
	r := rand.New(rand.NewPCG(1, 2))
	var failAt, passAt [3]int
	for range paths {
		var s float64 // the sum of the runs' standard normal deviations
		n := 0
		failed, passed := false, false
		for i, l := range ls {
			for ; n < l.N; n++ {
				s += r.NormFloat64()
			}
			z := s / math.Sqrt(float64(n))
			if !failed && z >= distuv.UnitNormal.Quantile(1-l.Alpha) {
				failed = true
				failAt[i]++
			}
			if !passed && -z >= distuv.UnitNormal.Quantile(1-l.PassAlpha) {
				passed = true
				passAt[i]++
			}
		}
	}
	cum := func(at [3]int, k int) float64 {
		n := 0
		for i := 0; i <= k; i++ {
			n += at[i]
		}
		return float64(n) / paths
	}
	for k, l := range ls {
		tk := float64(l.N) / 9
		wantPass := 2 * (1 - distuv.UnitNormal.CDF(distuv.UnitNormal.Quantile(0.975)/math.Sqrt(tk)))
		if k == 2 {
			wantPass = 0.05
		}
		wantFail := wantPass // the same spending function
		// 200,000 paths: a binomial standard error of about 0.0005 at 5%.
		if got := cum(failAt, k); math.Abs(got-wantFail) > 0.002 {
			t.Errorf("look %d: a false FAIL by then %.4f, spending says %.4f (levels %+v)", k+1, got, wantFail, ls)
		}
		if got := cum(passAt, k); math.Abs(got-wantPass) > 0.002 {
			t.Errorf("look %d: a false PASS by then %.4f, spending says %.4f (levels %+v)", k+1, got, wantPass, ls)
		}
	}
	// Both keep most of their α for the last look.
	if ls[0].PassAlpha > 0.005 || ls[2].PassAlpha < 0.04 || ls[0].Alpha != ls[0].PassAlpha || ls[2].Alpha != ls[2].PassAlpha {
		t.Errorf("levels %+v", ls)
	}
	if ls := Looks(3, 3, 0.05); len(ls) != 1 || ls[0].Alpha != 0.05 || ls[0].PassAlpha != 0.05 {
		t.Errorf("no extra runs: %+v", ls)
	}
	if ls := Looks(3, 8, 0.05); ls[len(ls)-1].N != 8 {
		t.Errorf("the last look is at most: %+v", ls)
	}
}

// With 3 baseline jobs or more, the job variance is moderated toward the
// floor with the prior's weight in jobs, and gains as many degrees of
// freedom; under 3 jobs the floor holds as before, and no prior leaves the
// ANOVA estimate as it is.
func TestJobNoisePrior(t *testing.T) {
	t.Parallel()
	// 4 jobs of 2 runs; job means −0.04, 0, 0.02, 0.06 (log), runs ±0.005.
	var yb []float64
	var jb [][]int
	for j, m := range []float64{-0.04, 0, 0.02, 0.06} {
		yb = append(yb, m-0.005, m+0.005)
		jb = append(jb, []int{2 * j, 2*j + 1})
	}
	jc := [][]int{{0, 1, 2}}
	plain := fitJobs(yb, jb, jb, jc, nil, 0, 0, 0, 0.02, 0)
	moderated := fitJobs(yb, jb, jb, jc, nil, 0, 0, 0, 0.02, 2)
	fl := math.Pow(math.Log1p(0.02), 2)
	want := (2*fl + 3*plain.job) / 5
	if math.Abs(moderated.job-want) > 1e-15 || plain.job <= fl {
		t.Errorf("job variance %g with the prior, want %g (ANOVA %g, floor %g)", moderated.job, want, plain.job, fl)
	}
	if !(moderated.df > plain.df) || moderated.floored || plain.floored {
		t.Errorf("df %g with the prior, %g without", moderated.df, plain.df)
	}
	two, twoPlain := fitJobs(yb[:4], jb[:2], jb[:2], jc, nil, 0, 0, 0, 0.02, 2), fitJobs(yb[:4], jb[:2], jb[:2], jc, nil, 0, 0, 0, 0.02, 0)
	if two.job != twoPlain.job || two.df != twoPlain.df || two.job < fl {
		t.Errorf("2 jobs: %+v, want the ANOVA estimate (at least the floor) %+v", two, twoPlain)
	}
}

// A p99 from runs of 1,000 requests at a 5% tolerance is wide mostly from
// its own sampling: the comparison names the requests a run that would
// decide it, and with that many an unchanged candidate passes.
func TestInconclusiveQuantileSaysRequests(t *testing.T) {
	t.Parallel()
	mk := func(r *rand.Rand, n int) []Sample {
		var out []Sample
		for range 5 {
			f := math.Exp(0.005 * r.NormFloat64())
			var s Sample
			for range 10 {
				xs := make([]float64, n/10)
				for i := range xs {
					xs[i] = 100 * f * math.Exp(0.5*r.NormFloat64())
				}
				s.Windows = append(s.Windows, FromValues(xs))
			}
			s.Total = Merge(s.Windows...)
			out = append(out, s)
		}
		return out
	}
	sp := Spec{Metric: "ttft", Stat: "p99", Tolerance: 0.05}
	r := rand.New(rand.NewPCG(5, 6))
	res := Compare([]Input{{Spec: sp, Baseline: mk(r, 1000), Candidate: mk(r, 1000)}}, DefaultOptions).Results[0]
	if res.Verdict != Inconclusive || res.NeedSamples <= 1000 || !strings.Contains(strings.Join(res.Warnings, " "), "requests a run") {
		t.Fatalf("1,000 requests a run: %s, need %d samples, %v", res.Verdict, res.NeedSamples, res.Warnings)
	}
	n := int((res.NeedSamples + 9) / 10 * 10)
	passed := 0
	for range 10 {
		if Compare([]Input{{Spec: sp, Baseline: mk(r, n), Candidate: mk(r, n)}}, DefaultOptions).Results[0].Verdict == Pass {
			passed++
		}
	}
	t.Logf("needs %d requests a run; with them an unchanged candidate passed %d of 10", res.NeedSamples, passed)
	if passed < 6 {
		t.Errorf("with the %d requests a run it named, an unchanged candidate passed %d of 10", n, passed)
	}
}
