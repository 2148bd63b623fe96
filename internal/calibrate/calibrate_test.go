package calibrate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// join measures each request of the window against the server's truth:
// the client saw every first token 0.3 ms after the server wrote it and
// the same gaps, so the TTFT error is +0.3 ms and the ITL error 0; the
// request sent during the ramp is left out, as is one the server has no
// truth for; the rate is that of the completions inside the window.
func TestJoin(t *testing.T) {
	t.Parallel()
	const ms = int64(1e6)
	from, to := 100*ms, 1100*ms
	var recs []record.Record
	truth := map[string]sim.Truth{}
	for i := range 12 {
		sent := from - 50*ms + int64(i)*100*ms // the first is sent during the ramp
		r := record.Record{SessionID: fmt.Sprint("r", i), Streaming: true, Sent: sent, OSL: 4}
		for k := range 4 {
			r.Chunks = append(r.Chunks, sent+20*ms+3*ms/10+int64(k)*5*ms)
		}
		r.FirstToken, r.End = r.Chunks[0], r.Chunks[3]
		recs = append(recs, r)
		if i != 5 {
			truth[r.SessionID] = sim.Truth{ID: r.SessionID, FirstToken: 20 * ms, Gaps: []int64{5 * ms, 5 * ms, 5 * ms}}
		}
	}
	recs = append(recs, record.Record{SessionID: "failed", Sent: from, End: from + ms, ErrKind: "http_500"})
	st := &Step{IdealRate: 10}
	if err := st.join(recs, truth, from, to); err != nil {
		t.Fatal(err)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s %v, want %v", name, got, want)
		}
	}
	near("TTFT p50 error", st.TTFTP50ErrMs, 0.3)
	near("TTFT p99 error", st.TTFTP99ErrMs, 0.3)
	near("ITL p99 error", st.ITLP99ErrMs, 0)
	// Sent after the ramp: requests 1..11 (a real step sends none after the
	// window, which ends the benchmark duration).
	if st.Requests != 11 {
		t.Errorf("%d requests measured, want 11", st.Requests)
	}
	// Ended in the window: requests 1..10, 100 ms apart: 9 gaps over 900 ms.
	near("achieved rate", st.AchievedRate, 10)
	near("rate pct", st.RatePct, 100)
	if st.chunks != 48 {
		t.Errorf("%d chunks, want 48", st.chunks)
	}

	st.check(Bounds{TTFTP50Ms: 0.2, TTFTP99Ms: 5, ITLP99Ms: 3, MinRate: 97})
	if st.Pass || len(st.Why) != 1 || !strings.Contains(st.Why[0], "TTFT p50 error 0.30 ms > 0.2") {
		t.Errorf("pass %v, why %q", st.Pass, st.Why)
	}
	if err := (&Step{}).join(recs[:1], truth, from, to); err == nil {
		t.Error("a step with nothing measured in the window joined")
	}
}

// Check lists every bad setting at once.
func TestConfigCheck(t *testing.T) {
	t.Parallel()
	c := Config{Steps: "8,4", OSL: 1, Duration: 0, Ramp: -1, Workers: -2}
	_, err := c.Check()
	for _, want := range []string{"must increase", "--ttft and --itl", "--osl must be at least 2", "--duration 0", "--workers -2", "--ramp -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
