package judge

import (
	"math"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// StepAlpha is the level at which a step in the baseline's history is
// believed, across all the gated statistics (Bonferroni).
const StepAlpha = 0.01

// StepMinJobs is the fewest jobs a level must hold, on either side of a
// step, to count as one.
const StepMinJobs = 2

// A Shift is where the baseline's history changed level.
type Shift struct {
	Run    int    // index of the first baseline run after the step
	Stat   string // the statistic that shows it
	Change float64
	P      float64 // corrected for the splits tried and the statistics
}

// LastShift looks for the most recent step in the history of each gated
// statistic, over the baseline's jobs in order (consecutive runs of one
// job are one observation; see compare.LastStep), and returns the latest
// step any statistic shows, or nil.
func LastShift(st *Settings, base []result.Loaded) (*Shift, error) {
	// Consecutive runs of one job form a job; starts[i] is job i's first run.
	var starts []int
	for i, l := range base {
		if i == 0 || l.Run.Job == "" || l.Run.Job != base[i-1].Run.Job {
			starts = append(starts, i)
		}
	}
	est := st.Options.Estimator
	if est == nil {
		est = compare.HarrellDavis
	}
	alpha := StepAlpha / float64(max(len(st.Specs), 1))
	var last *Shift
	for _, sp := range st.Specs {
		jobs := make([][]float64, len(starts))
		ok := true
		for i, l := range base {
			s, _, err := sampleOf(l, sp)
			if err != nil {
				return nil, err
			}
			v := sp.Estimate(s, est)
			if !(v > 0) || math.IsInf(v, 0) {
				ok = false
				break
			}
			j := len(starts) - 1
			for starts[j] > i {
				j--
			}
			jobs[j] = append(jobs[j], math.Log(v))
		}
		if !ok {
			continue
		}
		step, found := compare.LastStep(jobs, StepMinJobs, alpha)
		if !found {
			continue
		}
		if at := starts[step.At]; last == nil || at > last.Run {
			last = &Shift{Run: at, Stat: sp.Name(), Change: step.Change, P: math.Min(1, step.P*float64(len(st.Specs)))}
		}
	}
	return last, nil
}
