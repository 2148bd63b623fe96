package servermetrics

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// sample parses Prometheus text as a scrape taken sec seconds after t0.
func sample(t *testing.T, sec int, text string) *Sample {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return &Sample{At: time.Unix(1000+int64(sec), 0), Families: fams}
}

// A server that restarts mid-run resets its counters: the run's increase
// counts from zero after the reset (Prometheus's increase()), instead of
// a negative delta.
func TestCounterResetCountsFromZero(t *testing.T) {
	t.Parallel()
	c := func(v int) string { return fmt.Sprintf("# TYPE q:req_total counter\nq:req_total %d\n", v) }
	s := Summarize([]*Sample{sample(t, 0, c(100)), sample(t, 1, c(150)), sample(t, 2, c(20)), sample(t, 4, c(70))})
	got := s["q:req_total"]
	// 50 before the restart, 20 up to the first scrape after it, 50 more.
	if *got.Delta != 120 || *got.Rate != 30 {
		t.Errorf("delta %v rate %v, want 120 and 30/s", *got.Delta, *got.Rate)
	}
}

// A counter that first appears during the run (vLLM makes labelled series
// on first use) counts from zero; a scrape that misses the family is skipped.
func TestCounterAppearingMidRun(t *testing.T) {
	t.Parallel()
	s := Summarize([]*Sample{
		sample(t, 0, "# TYPE other gauge\nother 1\n"),
		sample(t, 1, "# TYPE q:fin_total counter\nq:fin_total{reason=\"stop\"} 5\n"),
		sample(t, 2, "# TYPE other gauge\nother 1\n"),
		sample(t, 3, "# TYPE q:fin_total counter\nq:fin_total{reason=\"stop\"} 9\nq:fin_total{reason=\"length\"} 3\n"),
	})
	if got := s["q:fin_total"]; *got.Delta != 12 {
		t.Errorf("delta %v, want 12 (both series summed, from zero)", *got.Delta)
	}
}

// A histogram with only the +Inf bucket has a count but no percentile to
// interpolate: they are left out, never NaN (which JSON cannot carry).
func TestHistogramWithoutFiniteBuckets(t *testing.T) {
	t.Parallel()
	h := func(n int) string {
		return fmt.Sprintf("# TYPE q:lat histogram\nq:lat_bucket{le=\"+Inf\"} %d\nq:lat_sum 1\nq:lat_count %d\n", n, n)
	}
	s := Summarize([]*Sample{sample(t, 0, h(10)), sample(t, 2, h(40))})
	got := s["q:lat"]
	if got.Count == nil || *got.Count != 30 || got.P50 != nil || got.P99 != nil {
		t.Errorf("got %+v, want count 30 and no percentiles", got)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("summary does not marshal: %v", err)
	}
}

// After a restart the histogram's last scrape holds the observations the
// server kept; subtracting the first would give negative counts.
func TestHistogramReset(t *testing.T) {
	t.Parallel()
	h := func(a, b int) string {
		return fmt.Sprintf("# TYPE q:lat histogram\nq:lat_bucket{le=\"1\"} %d\nq:lat_bucket{le=\"2\"} %d\nq:lat_bucket{le=\"+Inf\"} %d\nq:lat_sum 1\nq:lat_count %d\n", a, b, b, b)
	}
	s := Summarize([]*Sample{sample(t, 0, h(500, 1000)), sample(t, 1, h(0, 100))})
	got := s["q:lat"]
	if got.Count == nil || *got.Count != 100 || *got.P50 != 1.5 {
		t.Errorf("got %+v, want count 100 and p50 1.5", got)
	}
}

// Ranks that land in the +Inf bucket give the highest finite bound, as
// histogram_quantile does; an empty run's histogram has no percentiles.
func TestQuantileEdges(t *testing.T) {
	t.Parallel()
	h := func(a, b, n int) string {
		return fmt.Sprintf("# TYPE q:lat histogram\nq:lat_bucket{le=\"0.5\"} %d\nq:lat_bucket{le=\"1\"} %d\nq:lat_bucket{le=\"+Inf\"} %d\nq:lat_sum 1\nq:lat_count %d\n", a, b, n, n)
	}
	s := Summarize([]*Sample{sample(t, 0, h(0, 0, 0)), sample(t, 1, h(10, 20, 100))})
	got := s["q:lat"]
	if *got.P50 != 1 || *got.P99 != 1 {
		t.Errorf("p50 %v p99 %v, want the highest finite bound 1", *got.P50, *got.P99)
	}
	if *got.P90 != 1 {
		t.Errorf("p90 %v", *got.P90)
	}
	idle := Summarize([]*Sample{sample(t, 0, h(3, 4, 5)), sample(t, 1, h(3, 4, 5))})
	if g := idle["q:lat"]; g.Count != nil || g.P50 != nil {
		t.Errorf("no observations during the run, got %+v", g)
	}
}

// A long run keeps at most max samples, the first and the newest among them.
func TestScrapeStaysBounded(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE q:n counter\nq:n %d\n", n.Add(1))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	samples, fails := Scrape(ctx, srv.Client(), srv.URL, 5*time.Millisecond, 8)
	served := n.Load()
	if fails != 0 || served < 12 {
		t.Skipf("only %d scrapes in 400 ms (%d failed): too slow a machine to thin", served, fails)
	}
	// At most max after each thinning, plus the closing scrape.
	if len(samples) > 9 {
		t.Errorf("%d samples kept of %d, want at most 9", len(samples), served)
	}
	v := func(s *Sample) float64 { return sumValues(s.Families["q:n"]) }
	if v(samples[0]) != 1 || v(samples[len(samples)-1]) != float64(served) {
		t.Errorf("kept %v..%v of 1..%d", v(samples[0]), v(samples[len(samples)-1]), served)
	}
	for i := 1; i < len(samples); i++ {
		if v(samples[i]) <= v(samples[i-1]) {
			t.Fatalf("samples out of order at %d", i)
		}
	}
	if d := *Summarize(samples)["q:n"].Delta; d != float64(served-1) {
		t.Errorf("delta %v over the thinned samples, want %d", d, served-1)
	}
}

// An explicit --server-metrics URL that does not answer is a warning that
// names the flag; the default (the target's /metrics) is left out quietly.
func TestDuringWarnsOnlyForExplicitURLs(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	defer dead.Close()
	d := Start(context.Background(), nil, dead.URL+"/v1/chat/completions")
	if eps, warns := d.Stop(); eps != nil || len(warns) != 0 {
		t.Errorf("default endpoint absent: %v %v", eps, warns)
	}
	d = Start(context.Background(), []string{dead.URL + "/metrics"}, "")
	eps, warns := d.Stop()
	if eps != nil || len(warns) != 1 || !strings.Contains(warns[0], "--server-metrics "+dead.URL+"/metrics") || !strings.Contains(warns[0], "HTTP 404") {
		t.Errorf("explicit endpoint absent: %v %q", eps, warns)
	}
}

// A scraped endpoint's failures during the run are counted and warned of.
func TestDuringCountsFailedScrapes(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "# TYPE q:up gauge\nq:up 1\n")
	}))
	defer srv.Close()
	d := Start(context.Background(), nil, srv.URL+"/v1/completions")
	eps, warns := d.Stop()
	ep, ok := eps[srv.URL+"/metrics"]
	if !ok || ep.Failures == 0 || len(warns) != 1 || !strings.Contains(warns[0], "scrapes failed") {
		t.Errorf("endpoints %+v warnings %q", eps, warns)
	}
}

// The engine's state over the run: the kept families summed over their
// label sets at each scrape; past MaxSeriesPoints (1,500 scrapes: 500
// points of 3), each point the
// greatest of its span, so a spike stays.
func TestSeriesOf(t *testing.T) {
	var samples []*Sample
	for s := 0; s < 1500; s++ {
		kv := 0.5
		if s == 1234 {
			kv = 0.97 // a spike one scrape long
		}
		samples = append(samples, sample(t, s, fmt.Sprintf("# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\"} %g\n"+
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} %d\nvllm:num_requests_waiting{engine=\"1\"} 1\n"+
			"# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 5\n", kv, s%7)))
	}
	se := SeriesOf(samples)
	if _, ok := se["vllm:prompt_tokens_total"]; ok || len(se) != 2 {
		t.Fatalf("families kept: %v", se)
	}
	kv, w := se["vllm:kv_cache_usage_perc"], se["vllm:num_requests_waiting"]
	if len(kv.T) != 500 || kv.T[0] != 0 || kv.T[1] != 3 || !kv.Start.Equal(samples[0].At) {
		t.Errorf("kv: %d points, t %v…", len(kv.T), kv.T[:3])
	}
	peak := 0.0
	for _, v := range kv.V {
		peak = max(peak, v)
	}
	if peak != 0.97 || w.V[0] != 3 { // waiting: max of 0,1,2 on engine 0, plus engine 1's 1
		t.Errorf("kv peak %g, waiting %v", peak, w.V[:3])
	}
	if SeriesOf(samples[:10])["vllm:kv_cache_usage_perc"].T[9] != 9 {
		t.Error("a short run keeps every scrape")
	}
}
