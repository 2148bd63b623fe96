package judge

import (
	"fmt"
	"math"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// NoiseRow is one gated statistic's noise on a testbed and the tolerances
// an unchanged candidate passes 4 times in 5 at, by mode and runs (a
// tolerance of 0: not measurable from these runs).
type NoiseRow struct {
	compare.Noise
	Unit  string           `json:"unit"`
	Reach []NoiseReachable `json:"reach"`
}

// NoiseReachable is one mode's reachable tolerance.
type NoiseReachable struct {
	Mode      string  `json:"mode"` // "unpaired" or "paired"
	Runs      int     `json:"runs"` // candidate runs in one job, or pairs
	Baseline  int     `json:"baseline,omitempty"`
	Tolerance float64 `json:"tolerance,omitempty"`
}

// Noise measures every gated statistic's noise from runs of one profile
// in jobs (a stored history), and what it lets each mode reach with
// repeats runs and three times as many (unpaired, against keep stored
// runs), and repeats and seven times as many pairs (paired A/B).
func Noise(st *Settings, runs []result.Loaded, repeats, keep int) ([]NoiseRow, error) {
	if len(runs) < 2 {
		return nil, fmt.Errorf("need at least 2 runs to measure noise, have %d", len(runs))
	}
	for _, l := range runs {
		if l.Run.ProfileHash != runs[0].Run.ProfileHash && !st.AllowMismatch {
			return nil, fmt.Errorf("%s has profile_hash %s, but %s has %s: they ran different load profiles (--allow-mismatch measures them anyway)", l.Path, short(l.Run.ProfileHash), runs[0].Path, short(runs[0].Run.ProfileHash))
		}
	}
	var out []NoiseRow
	for _, sp := range st.Specs {
		in := compare.Input{Spec: sp}
		unit := ""
		for _, l := range runs {
			s, u, err := sampleOf(l, sp)
			if err != nil {
				return nil, err
			}
			in.Baseline, unit = append(in.Baseline, s), u
		}
		n, err := compare.MeasureNoise(in, st.Options)
		if err != nil {
			return nil, err
		}
		row := NoiseRow{Noise: n, Unit: unit}
		k := min(keep, n.Runs)
		perJob := max(1, int(math.Round(float64(n.Runs)/float64(n.Jobs))))
		finite := func(v float64) float64 {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0
			}
			return v
		}
		for _, r := range []int{repeats, 3 * repeats} {
			row.Reach = append(row.Reach, NoiseReachable{Mode: "unpaired", Runs: r, Baseline: k, Tolerance: finite(n.Unpaired(k, perJob, r, st.Options.Alpha))})
		}
		for _, r := range []int{repeats, 7 * repeats} {
			row.Reach = append(row.Reach, NoiseReachable{Mode: "paired", Runs: r, Tolerance: finite(n.Paired(r, st.Options.Alpha))})
		}
		out = append(out, row)
	}
	return out, nil
}
