package schedule

import (
	"fmt"
	"sort"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/dataset"
)

// fixedSchedule selects the file's timestamped lines inside the offsets,
// in timestamp order, and turns their timestamps into due offsets.
func fixedSchedule(p *config.Profile, x *dataset.Index) ([]int, []float64, error) {
	if x == nil {
		return nil, nil, fmt.Errorf("--fixed-schedule needs an --input-file of timestamped lines")
	}
	type ts struct {
		t float64
		i int
	}
	var sel []ts
	for i, l := range x.Lines {
		if !l.HasTime {
			return nil, nil, fmt.Errorf("--fixed-schedule: %s line %d has no \"timestamp\"", p.InputFile, i+1)
		}
		if l.TimestampMs < float64(p.FixedScheduleStartOffset) {
			continue
		}
		if p.FixedScheduleEndOffset > 0 && l.TimestampMs > float64(p.FixedScheduleEndOffset) {
			continue
		}
		if p.SynthesisMaxISL > 0 && int(l.ISL) > p.SynthesisMaxISL {
			continue // --synthesis-max-isl leaves it out
		}
		sel = append(sel, ts{l.TimestampMs, i})
	}
	sort.SliceStable(sel, func(a, b int) bool { return sel[a].t < sel[b].t })
	// The replay starts at --fixed-schedule-start-offset (AIPerf's meaning:
	// a request stamped at the offset is sent at once, not that long after
	// the start), or at the first timestamp with auto-offset.
	base := float64(p.FixedScheduleStartOffset)
	// (A Baseten trace's timestamps are Unix ms: its replay always starts
	// at its first.)
	if (p.FixedScheduleAutoOffset || p.CustomDatasetType == config.BasetenTrace) && len(sel) > 0 {
		base = sel[0].t
	}
	speedup := p.SynthesisSpeedupRatio
	if speedup <= 0 {
		speedup = 1
	}
	lines := make([]int, len(sel))
	dues := make([]float64, len(sel))
	for k, s := range sel {
		lines[k] = s.i
		dues[k] = (s.t - base) / 1000 / speedup // --synthesis-speedup-ratio
	}
	return lines, dues, nil
}
