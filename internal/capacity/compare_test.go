package capacity

import (
	"math"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/compare"
)

// est is an estimate with its interval [lo, hi] (0: open on that side)
// around capacity c, at 95%.
func est(c, lo, hi float64) Estimate {
	e := Estimate{Target: 0.95, Confidence: 0.95, Capacity: c, Lo: lo, Hi: hi, LoBounded: lo > 0, HiBounded: hi > 0, Unit: "streams"}
	first, last := c, c
	if lo > 0 {
		first = lo
	}
	if hi > 0 {
		last = hi
	}
	e.Points = []Point{{Load: first}, {Load: last}}
	return e
}

// The verdicts on the interval of the ratio, each end from the searches'
// opposite ends: a loss whose whole interval is past the tolerance FAILs,
// one whose whole interval is inside it PASSes, and an interval across it
// is INCONCLUSIVE; job noise widens it; an open end decides nothing on
// its side and says why.
func TestCapacityComparison(t *testing.T) {
	o := CompareOptions{Alpha: 0.05, Tolerance: 0.05}
	for _, c := range []struct {
		name       string
		base, cand Estimate
		o          CompareOptions
		want       compare.Verdict
		lo, hi     float64 // the change's interval, when not 0
		warn       string
	}{
		{"10% slower, adjacent integers", est(37.4, 37, 38), est(33.5, 33, 34), o, compare.Fail, 33.0/38 - 1, 34.0/37 - 1, ""},
		{"unchanged", est(37.4, 37, 38), est(37.6, 37, 38), o, compare.Pass, 37.0/38 - 1, 38.0/37 - 1, ""},
		{"unchanged, wide", est(37, 33, 41), est(37, 33, 41), o, compare.Inconclusive, 33.0/41 - 1, 41.0/33 - 1, ""},
		{"unchanged, another job's baseline", est(37.4, 37, 38), est(37.6, 37, 38), CompareOptions{Alpha: 0.05, Tolerance: 0.05, JobNoise: 0.02}, compare.Inconclusive, 0, 0, "job-to-job noise of 2%"},
		{"better", est(20, 19, 21), est(30, 29, 31), o, compare.Pass, 0, 0, ""},
		{"candidate held everywhere", est(20, 19, 21), est(64, 64, 0), o, compare.Pass, 0, 0, "no load the candidate probed (up to 64 streams) surely missed"},
		{"candidate held everywhere, baseline too", est(64, 64, 0), est(64, 64, 0), o, compare.Inconclusive, 0, 0, "no load the baseline probed (up to 64 streams)"},
		{"candidate failed everywhere", est(20, 19, 21), est(1, 0, 1), o, compare.Fail, 0, 0, "no load the candidate probed (down to 1 streams) surely held"},
	} {
		r, err := Comparison(c.base, c.cand, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Verdict != c.want {
			t.Errorf("%s: %s (change %+.1f%%, %+.1f%% to %+.1f%%), want %s", c.name, r.Verdict, 100*r.Change, 100*r.Lo, 100*r.Hi, c.want)
		}
		if c.lo != 0 && (math.Abs(r.Lo-c.lo) > 1e-9 || math.Abs(r.Hi-c.hi) > 1e-9) {
			t.Errorf("%s: interval %g to %g, want %g to %g", c.name, r.Lo, r.Hi, c.lo, c.hi)
		}
		if !(r.Lo <= r.Change && r.Change <= r.Hi) || math.IsNaN(r.P) || math.IsInf(r.Hi, 0) || math.IsInf(r.Lo, 0) {
			t.Errorf("%s: change %g outside %g to %g, or not finite (p %g)", c.name, r.Change, r.Lo, r.Hi, r.P)
		}
		if c.warn != "" && !strings.Contains(strings.Join(r.Warnings, "\n"), c.warn) {
			t.Errorf("%s: warnings %q, want %q", c.name, r.Warnings, c.warn)
		}
	}
	if _, err := Comparison(est(37, 37, 38), Estimate{}, o); err == nil {
		t.Error("a search with no estimate compared")
	}
	narrow := est(37, 37, 38)
	narrow.Confidence = 0.8
	if _, err := Comparison(est(37, 37, 38), narrow, o); err == nil || !strings.Contains(err.Error(), "80%") {
		t.Errorf("an 80%% interval compared at α 5%%: %v", err)
	}
	rate := est(37, 37, 38)
	rate.Unit = ""
	if _, err := Comparison(est(37, 37, 38), rate, o); err == nil {
		t.Error("a search by rate compared with one by concurrency")
	}
}

// The job noise of stored searches: the floor below three; their spread
// less their own intervals', moderated toward the floor, above.
func TestCapacityJobNoise(t *testing.T) {
	if got := JobNoise([]Estimate{est(37, 37, 38), est(40, 39, 41)}, 0.02, 2); got != 0.02 {
		t.Errorf("two searches: %g, want the floor", got)
	}
	same := []Estimate{est(37.5, 37, 38), est(37.5, 37, 38), est(37.5, 37, 38), est(37.5, 37, 38), est(37.5, 37, 38)}
	if got := JobNoise(same, 0.02, 2); !(got < 0.02 && got > 0.01) {
		t.Errorf("five equal searches: %g, want below the floor (moderated: 2%%·√(2/6))", got)
	}
	spread := []Estimate{est(30, 29.5, 30.5), est(40, 39.5, 40.5), est(35, 34.5, 35.5), est(45, 44.5, 45.5)}
	if got := JobNoise(spread, 0.02, 2); got < 0.1 {
		t.Errorf("searches 30 to 45 apart: %g, want above 10%%", got)
	}
}
