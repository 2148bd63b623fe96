package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/gate"
)

// A search scenario's words and picture: the capacity of each side in a
// line, and their attainment curves.

// capacityOf is an estimate in words: "37.4 streams (interval 37 to 38)",
// an open end said as such.
func capacityOf(e capacity.Estimate, unit string) string {
	lo, hi := "below the lowest load probed", "above the highest load probed"
	if e.LoBounded {
		lo = fmt.Sprintf("%.4g", e.Lo)
	}
	if e.HiBounded {
		hi = fmt.Sprintf("%.4g", e.Hi)
	}
	return fmt.Sprintf("%.4g %s (%.3g%% interval %s to %s)", e.Capacity, unit, 100*e.Confidence, lo, hi)
}

// capacityLine is the scenario's capacity in a sentence: "Capacity at
// TTFT ≤ 500 ms for 95% of requests: 41 → 37 streams (−9.8%, 90%
// interval −14.0% to −5.1%)", or this side's alone without a baseline.
func capacityLine(s *gate.Scenario) string {
	c := s.Capacity
	if c == nil {
		return ""
	}
	lead := "**Capacity at " + EscapeMarkdown(c.Objective) + ":** "
	probes := fmt.Sprintf("%s, stopped on %s", plural(c.CandidateProbes, "probe"), EscapeMarkdown(c.CandidateStopped))
	if c.Baseline == nil || s.Compare == nil || len(s.Compare.Results) == 0 {
		return lead + EscapeMarkdown(capacityOf(c.Candidate, c.Unit)) + " (" + probes + ")."
	}
	r := s.Compare.Results[0]
	// An end is open where a side's search left its own open (the notes
	// say which): the interval reaches at least that far.
	lo, hi := signedPct(r.Lo), signedPct(r.Hi)
	if !c.Candidate.LoBounded || !c.Baseline.HiBounded {
		lo = "≤ " + lo
	}
	if !c.Candidate.HiBounded || !c.Baseline.LoBounded {
		hi = "≥ " + hi
	}
	// (capacityOf is numbers and fixed words; the unit is checked to be
	// one of two.)
	return lead + fmt.Sprintf("%.4g → %.4g %s (%s, 90%% interval %s to %s).\n\nBase: %s, %s; this PR: %s, %s.", r.Baseline, r.Candidate, EscapeMarkdown(c.Unit), signedPct(r.Change), lo, hi,
		capacityOf(*c.Baseline, c.Unit), plural(c.BaselineProbes, "probe"), capacityOf(c.Candidate, c.Unit), plural(c.CandidateProbes, "probe"))
}

// attainmentLimit is the most loads the attainment chart shows.
const attainmentLimit = 24

// attainmentChart is a mermaid chart of each side's isotonic fit of the
// attainment against load (the loads either side probed, in order), with
// the target: where a curve crosses it is that side's capacity.
func attainmentChart(s *gate.Scenario) string {
	c := s.Capacity
	if c == nil || len(c.Candidate.Points) == 0 {
		return ""
	}
	sides := []capacity.Estimate{c.Candidate}
	if c.Baseline != nil && len(c.Baseline.Points) > 0 {
		sides = append(sides, *c.Baseline)
	}
	seen := map[float64]bool{}
	var loads []float64
	for _, e := range sides {
		for _, p := range e.Points {
			if !seen[p.Load] {
				seen[p.Load] = true
				loads = append(loads, p.Load)
			}
		}
	}
	sort.Float64s(loads)
	if len(loads) > attainmentLimit { // every k-th load, the ends kept
		k := int(math.Ceil(float64(len(loads)) / attainmentLimit))
		var thin []float64
		for i := 0; i < len(loads); i += k {
			thin = append(thin, loads[i])
		}
		if thin[len(thin)-1] != loads[len(loads)-1] {
			thin = append(thin, loads[len(loads)-1])
		}
		loads = thin
	}
	labels := make([]string, len(loads))
	for i, l := range loads {
		labels[i] = fmt.Sprintf("%.4g", l)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "```mermaid\n%s\nxychart-beta\n  title \"%s: attainment against load\"\n  x-axis \"%s\" [%s]\n  y-axis \"%% of requests meeting the objectives\" 0 --> 100\n", chartColors,
		chartSafe.ReplaceAllString(s.Name, "_"), chartSafe.ReplaceAllString(c.Unit, "_"), strings.Join(labels, ", "))
	for _, e := range sides {
		vals := make([]string, len(loads))
		for i, l := range loads {
			vals[i] = fmt.Sprintf("%.1f", 100*fitAt(e, l))
		}
		fmt.Fprintf(&b, "  line [%s]\n", strings.Join(vals, ", "))
	}
	target := make([]string, len(loads))
	for i := range target {
		target[i] = fmt.Sprintf("%.1f", 100*c.Candidate.Target)
	}
	fmt.Fprintf(&b, "  line [%s]\n```\n\n", strings.Join(target, ", "))
	if len(sides) > 1 {
		b.WriteString("Blue: this PR; orange: the baseline; the flat line: the target. Each side's isotonic fit of its probes, flat beyond the loads it probed.\n")
	} else {
		b.WriteString("This PR's isotonic fit of its probes, and the target (the flat line).\n")
	}
	return b.String()
}

// fitAt is e's isotonic fit at load l: linear in log load between its
// probed loads, its end values beyond them.
func fitAt(e capacity.Estimate, l float64) float64 {
	pts := e.Points
	if l <= pts[0].Load {
		return pts[0].Fit
	}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if l <= b.Load {
			f := math.Log(l/a.Load) / math.Log(b.Load/a.Load)
			return a.Fit + f*(b.Fit-a.Fit)
		}
	}
	return pts[len(pts)-1].Fit
}
