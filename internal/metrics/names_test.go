package metrics

import (
	"strings"
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

func TestGoodput(t *testing.T) {
	t.Parallel()
	s, err := ParseGoodput("time_to_first_token:100 inter_token_latency:10")
	if err != nil || len(s) != 2 || s[0].Value != 100 || s[1].Metric != "inter_token_latency" {
		t.Fatalf("got %v, %v", s, err)
	}
	if _, err := ParseGoodput("request_latency:-1"); err == nil {
		t.Fatal("negative SLO accepted")
	}
	if _, err := ParseGoodput("osl:3"); err == nil || !strings.Contains(err.Error(), "want one of inter_token_latency, output_token_throughput_per_user, request_latency, time_to_first_token, time_to_second_token") {
		t.Fatalf("unknown metric: %v", err)
	}
	// The direction is the metric's: a throughput at least its value, a
	// latency at most.
	slos, _ := ParseGoodput("output_token_throughput_per_user:50 time_to_first_token:20")
	for _, c := range []struct {
		perUser, ttft float64
		good          bool
	}{{60, 10, true}, {40, 10, false}, {60, 30, false}} {
		if got := Good(map[string]float64{PerUser: c.perUser, TTFT: c.ttft}, slos); got != c.good {
			t.Errorf("per user %g, TTFT %g: good %v", c.perUser, c.ttft, got)
		}
	}
}
