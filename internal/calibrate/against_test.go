package calibrate

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// A /stats that lacks a figure the comparison needs, is not JSON or not
// there is an error naming the URL and what is missing.
func TestFetchStatsNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	body := map[string]string{
		"/full":    `{"requests":3,"server_ttft_ms_p50":20.1,"server_ttft_ms_p99":21,"server_gap_ms_p99":10.5,"cfg_ttft_ms":20,"cfg_itl_ms":10}`,
		"/partial": `{"requests":3,"server_ttft_ms_p50":20.1}`,
		"/html":    `<html>hello</html>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := body[strings.TrimSuffix(r.URL.Path, "/stats")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, b)
	}))
	defer srv.Close()
	s, err := fetchStats(context.Background(), srv.URL+"/full", "")
	if err != nil || *s.Requests != 3 || *s.TTFTP50 != 20.1 || *s.GapP99 != 10.5 || *s.CfgITL != 10 {
		t.Fatalf("%+v %v", s, err)
	}
	for path, want := range map[string]string{
		"/partial": "no requests" + "", "/html": "not the truth server's /stats JSON", "/none": "HTTP 404",
	} {
		_, err := fetchStats(context.Background(), srv.URL+path, "")
		if path == "/partial" {
			want = "no server_gap_ms_p99, server_ttft_ms_p99"
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), srv.URL+path+"/stats") {
			t.Errorf("%s: %v, want %q with the URL", path, err, want)
		}
	}
}

// compare takes each error as the run's figure minus the server's, the
// rate against the ideal, and refuses counts that differ.
func TestCompareWithTheServersFigures(t *testing.T) {
	t.Parallel()
	dist := func(p50, p99 float64) metrics.Metric {
		return metrics.Metric{Dist: &metrics.Dist{P50: p50, P99: p99, Count: 4}}
	}
	rr := &result.Run{Metrics: map[string]metrics.Metric{
		metrics.TTFT: dist(21, 30), metrics.TTFTFromWrite: dist(20.5, 29), metrics.ICL: dist(10, 12),
		metrics.RequestTput: {Rate: &metrics.Rate{Value: 380}},
	}}
	rr.Counts.Requests = 1536
	n, p50, p99, gap := 1536, 20.0, 26.0, 11.0
	st := &Step{IdealRate: 400}
	if err := st.compare(rr, &TruthStats{Requests: &n, TTFTP50: &p50, TTFTP99: &p99, GapP99: &gap}); err != nil {
		t.Fatal(err)
	}
	if st.TTFTP50ErrMs != 1 || st.TTFTP99ErrMs != 4 || st.TTFTWriteP50ErrMs != 0.5 || st.ITLP99ErrMs != 1 || st.RatePct != 95 || st.Requests != 1536 {
		t.Errorf("%+v", st)
	}
	st.check(Bounds{TTFTP50Ms: 1, TTFTP99Ms: 5, ITLP99Ms: 3, MinRate: 97})
	if st.Pass || len(st.Why) != 1 || !strings.Contains(st.Why[0], "rate 95.0%") {
		t.Errorf("why %q", st.Why)
	}
	other := 1537
	if err := (&Step{}).compare(rr, &TruthStats{Requests: &other, TTFTP50: &p50, TTFTP99: &p99, GapP99: &gap}); err == nil || !strings.Contains(err.Error(), "counted 1537") {
		t.Errorf("counts differ: %v", err)
	}
	delete(rr.Metrics, metrics.ICL)
	if err := (&Step{}).compare(rr, &TruthStats{Requests: &n, TTFTP50: &p50, TTFTP99: &p99, GapP99: &gap}); err == nil || !strings.Contains(err.Error(), "inter_chunk_latency") {
		t.Errorf("no gaps: %v", err)
	}
}

// A step is whole rounds of one request a stream for about the duration,
// after a warmup of one a stream.
func TestAgainstPlan(t *testing.T) {
	t.Parallel()
	f := &Config{Duration: 10}
	if w, n := againstPlan(f, 512, 1290*time.Millisecond); w != 512 || n != 8*512 {
		t.Errorf("warmup %d, requests %d", w, n)
	}
	f.Duration = 0.1
	if _, n := againstPlan(f, 4, time.Second); n != 4 {
		t.Errorf("a short step still measures one round: %d", n)
	}
}
