package compare

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A 20-job history (3 runs a job, 3% job and 3% run noise, the power
// model's runs) measures both noises near the truth, and the tolerances it
// says each mode reaches order as they must: more runs reach less, paired
// A/B (the job's noise cancels) far less than one unpaired job.
func TestMeasureNoise(t *testing.T) {
	t.Parallel()
	cfg := powerCfg{N: 2000, perJob: 3, jobNoise: 0.03, runNoise: 0.03}
	r := rand.New(rand.NewPCG(8, 9))
	hist := powSide(r, cfg, 60, 3, "h", "", 0)
	in := Input{Spec: Spec{Metric: "time_to_first_token", Stat: "p50", Tolerance: 0.05}}
	for _, s := range hist {
		in.Baseline = append(in.Baseline, s[0])
	}
	n, err := MeasureNoise(in, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs, %d jobs: job %.4f run %.4f within %.4f", n.Runs, n.Jobs, n.JobNoise, n.RunNoise, n.Within)
	// The run noise also holds the windows' drift (about 1.5% at ρ 0.7, 2%).
	if n.Jobs != 20 || n.JobNoise < 0.015 || n.JobNoise > 0.045 || n.RunNoise < 0.02 || n.RunNoise > 0.045 || n.Floored {
		t.Errorf("measured %+v", n)
	}
	u3, u9, p21, p5 := n.Unpaired(10, 3, 3, 0.05), n.Unpaired(10, 3, 9, 0.05), n.Paired(21, 0.05), n.Paired(5, 0.05)
	t.Logf("reach: unpaired 3 runs %.3f, 9 runs %.3f; paired 5 pairs %.3f, 21 pairs %.3f", u3, u9, p5, p21)
	if !(u3 > u9 && u9 > p21 && p5 > p21 && p21 > 0.01) {
		t.Errorf("reach out of order: unpaired 3 %.3f, 9 %.3f; paired 5 %.3f, 21 %.3f", u3, u9, p5, p21)
	}
	// One job of 9 runs keeps its whole job noise: at least (t + z)·3%.
	if u9 < 0.03*(1.645+0.84) {
		t.Errorf("unpaired 9 runs reach %.3f, below what one job's 3%% noise allows", u9)
	}
	// Runs that never shared a job cannot say what pairs would reach.
	single := Input{Spec: in.Spec}
	for i := 0; i < 60; i += 3 {
		s := hist[i][0]
		s.Job = ""
		single.Baseline = append(single.Baseline, s)
	}
	ns, err := MeasureNoise(single, DefaultOptions)
	if err != nil || !math.IsNaN(ns.Paired(10, 0.05)) {
		t.Errorf("one run a job: paired reach %v, err %v; want NaN", ns.Paired(10, 0.05), err)
	}
	if _, err := MeasureNoise(Input{Spec: in.Spec, Baseline: in.Baseline[:1]}, DefaultOptions); err == nil {
		t.Error("one run measured a noise")
	}
}
