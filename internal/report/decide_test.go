package report

import (
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/judge"
)

// The "To decide" line names what would decide an inconclusive scenario:
// runs when runs would do, baseline runs when the baseline is too thin,
// and, when one job's noise is the limit, the tolerance it can reach and
// the paired mode that cancels it.
func TestDecideNamesTheWayOut(t *testing.T) {
	t.Parallel()
	scenario := func(r compare.Result) *gate.Scenario {
		r.Verdict, r.K, r.R = compare.Inconclusive, 10, 3
		return &gate.Scenario{Compare: &judge.Report{Comparison: &compare.Comparison{Results: []compare.Result{r}}}}
	}
	for _, c := range []struct {
		name string
		r    compare.Result
		want []string
	}{
		{"runs", compare.Result{NeedR: 7}, []string{"`repeats: 7`, now 3", "`max-repeats: 7`"}},
		{"baseline", compare.Result{NeedK: 14, NeedR: 14}, []string{"14 baseline runs (now 10", "`repeats: 14`"}},
		{"job noise", compare.Result{NeedTolerance: 0.083}, []string{"a tolerance of at least 8.3%", "paired A/B (`baseline-server`)", "the job's noise cancels"}},
	} {
		got := decide(scenario(c.r))
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
		if !strings.Contains(got, "fail-on-inconclusive: true") {
			t.Errorf("%s: %q does not offer fail-on-inconclusive", c.name, got)
		}
	}
	if got := decide(&gate.Scenario{Compare: &judge.Report{Comparison: &compare.Comparison{Results: []compare.Result{{Verdict: compare.Pass}}}}}); got != "" {
		t.Errorf("a decided scenario: %q", got)
	}
}
