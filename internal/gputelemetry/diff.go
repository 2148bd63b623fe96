package gputelemetry

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/testbed"
)

// clockTolerance is how far apart two arms' median clocks (or power
// limits) may be and still be one environment: a GPU at its boost clock
// wanders by a few MHz; a lower locked clock, a power cap or throttling
// moves it by far more than 5%.
const clockTolerance = 0.05

// Diff lists what differs between two runs' GPUs, as the DCGM exporters
// saw them: the models and their count, the driver, the median SM and
// memory clocks and the power limit. Nothing when either side has no
// telemetry (a run without an exporter says nothing of its GPUs).
func Diff(base, cand *Telemetry) []testbed.Change {
	if base == nil || cand == nil || len(base.GPUs) == 0 || len(cand.GPUs) == 0 {
		return nil
	}
	var out []testbed.Change
	add := func(field, b, c string) {
		if b != c {
			out = append(out, testbed.Change{Field: field, Baseline: b, Candidate: c})
		}
	}
	add("gpus (DCGM)", models(base), models(cand))
	if b, c := drivers(base), drivers(cand); b != "" && c != "" {
		add("gpu driver (DCGM)", b, c)
	}
	for _, k := range []struct{ key, name string }{{"sm_clock", "SM clock p50"}, {"mem_clock", "memory clock p50"}, {"power_management_limit", "power limit"}} {
		b, okb := medianOf(base, k.key)
		c, okc := medianOf(cand, k.key)
		if okb && okc && b > 0 && math.Abs(c/b-1) > clockTolerance {
			unit := "MHz"
			if k.key == "power_management_limit" {
				unit = "W"
			}
			out = append(out, testbed.Change{Field: "gpu " + k.name, Baseline: fmt.Sprintf("%.0f %s", b, unit), Candidate: fmt.Sprintf("%.0f %s", c, unit)})
		}
	}
	return out
}

// counted are a run's GPUs, each once.
func counted(t *Telemetry) []GPU {
	var gs []GPU
	for _, g := range t.GPUs {
		if g.Duplicate == "" {
			gs = append(gs, g)
		}
	}
	return gs
}

func models(t *Telemetry) string {
	n := map[string]int{}
	for _, g := range counted(t) {
		n[g.Model]++
	}
	var parts []string
	for m, k := range n {
		parts = append(parts, fmt.Sprintf("%d× %s", k, m))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func drivers(t *Telemetry) string {
	seen := map[string]bool{}
	var ds []string
	for _, g := range counted(t) {
		if g.Driver != "" && !seen[g.Driver] {
			seen[g.Driver] = true
			ds = append(ds, g.Driver)
		}
	}
	sort.Strings(ds)
	return strings.Join(ds, ", ")
}

// medianOf is the median over a run's GPUs of each one's p50 (a gauge) of
// key.
func medianOf(t *Telemetry, key string) (float64, bool) {
	var vs []float64
	for _, g := range counted(t) {
		if s, ok := g.Metrics[key]; ok && s.P50 != nil {
			vs = append(vs, *s.P50)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	sort.Float64s(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}
