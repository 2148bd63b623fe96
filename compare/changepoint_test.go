package compare

import (
	"math"
	"math/rand/v2"
	"testing"
)

// jobsAt makes one job of runs per level, each run with its own noise.
func jobsAt(r *rand.Rand, noise float64, perJob int, levels ...float64) [][]float64 {
	var out [][]float64
	for _, l := range levels {
		var j []float64
		for k := 0; k < perJob; k++ {
			j = append(j, math.Log(l)+noise*r.NormFloat64())
		}
		out = append(out, j)
	}
	return out
}

func TestLastStepFindsTheStep(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s, ok := LastStep(jobsAt(r, 0.01, 3, 1, 1, 1, 1, 1.2, 1.2, 1.2, 1.2), 2, 0.01)
	if !ok || s.At != 4 || math.Abs(s.Change-0.2) > 0.03 {
		t.Fatalf("step %+v found %v, want one at job 4 of about +20%%", s, ok)
	}
	// Two steps: the last one is the baseline's.
	s, ok = LastStep(jobsAt(r, 0.01, 3, 1, 1, 1, 1.3, 1.3, 1.3, 1.1, 1.1, 1.1), 2, 0.01)
	if !ok || s.At != 6 || s.Change > 0 {
		t.Fatalf("step %+v found %v, want the fall at job 6", s, ok)
	}
}

func TestLastStepNeedsMinimumSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// A jump in the newest job alone is not a segment yet.
	if s, ok := LastStep(jobsAt(r, 0.01, 3, 1, 1, 1, 1, 1, 2), 2, 0.01); ok {
		t.Fatalf("found %+v with one job after it", s)
	}
	if _, ok := LastStep(jobsAt(r, 0.01, 3, 1, 2, 2), 2, 0.01); ok {
		t.Fatal("found a step in 3 jobs")
	}
	if _, ok := LastStep([][]float64{{0}, {0}, {}, {1}, {1}}, 2, 0.01); ok {
		t.Fatal("found a step with an empty job")
	}
}

// With no step, a series of noisy jobs shows one at most about α of the
// time; runs within a job sharing its noise do not make one up.
func TestLastStepFalseAlarms(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const trials = 4000
	for _, n := range []int{4, 7, 12, 20} {
		alarms := 0
		for i := 0; i < trials; i++ {
			levels := make([]float64, n)
			for j := range levels {
				levels[j] = math.Exp(0.03 * r.NormFloat64()) // 3% job noise
			}
			if _, ok := LastStep(jobsAt(r, 0.01, 3, levels...), 2, 0.01); ok {
				alarms++
			}
		}
		rate := float64(alarms) / trials
		t.Logf("%d jobs: a step in %.2f%% of series without one (α 1%%)", n, 100*rate)
		if rate > 0.015 {
			t.Errorf("%d jobs: a step in %.2f%% of series without one (α 1%%)", n, 100*rate)
		}
	}
}
