package metrics

import (
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/record"
)

// Every metric a run can hold is in the facts table, with the unit the
// aggregator gives it, and the table names each metric once.
func TestFactsCoverTheAggregator(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, f := range Facts {
		if seen[f.Name] {
			t.Errorf("%s appears twice", f.Name)
		}
		seen[f.Name] = true
	}
	a := NewAggregator(0, nil)
	a.FromDue = true
	for i := range 4 {
		r := &record.Record{Streaming: true, Sent: int64(i) * 1e6, Due: int64(i) * 1e6, ISL: 8, MaxTokens: 3, OSL: 3}
		r.Chunks = []int64{r.Sent + 5e6, r.Sent + 6e6, r.Sent + 7e6}
		r.FirstToken, r.End = r.Chunks[0], r.Chunks[2]
		a.Add(r)
	}
	sum := a.Summary()
	if len(sum.Metrics) < 10 {
		t.Fatalf("only %d metrics", len(sum.Metrics))
	}
	for name, m := range sum.Metrics {
		f, ok := Lookup(name)
		if !ok {
			t.Errorf("%s is not in Facts", name)
			continue
		}
		unit := ""
		if m.Dist != nil {
			unit = m.Dist.Unit
		} else {
			unit = m.Rate.Unit
		}
		if unit != f.Unit || (m.Rate != nil) != f.Rate {
			t.Errorf("%s: unit %q rate %v, facts say %q rate %v", name, unit, m.Rate != nil, f.Unit, f.Rate)
		}
	}
}
