package servermetrics

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1) - 1
		// A gauge at 0,2,4,...; a counter growing by 10 per scrape; a
		// histogram that gains 100 observations per scrape, all in (0.1, 0.2].
		fmt.Fprintf(w, "# TYPE q:running gauge\nq:running{slot=\"a\"} %d\nq:running{slot=\"b\"} %d\n", i, i)
		fmt.Fprintf(w, "# TYPE q:tokens_total counter\nq:tokens_total %d\n", 10*i)
		fmt.Fprintf(w, "# TYPE q:ttft_seconds histogram\nq:ttft_seconds_bucket{le=\"0.1\"} 0\nq:ttft_seconds_bucket{le=\"0.2\"} %d\nq:ttft_seconds_bucket{le=\"+Inf\"} %d\nq:ttft_seconds_sum 1\nq:ttft_seconds_count %d\n", 100*i, 100*i, 100*i)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 550*time.Millisecond)
	defer cancel()
	samples, fails := Scrape(ctx, srv.Client(), srv.URL, 100*time.Millisecond, 100)
	if fails != 0 || len(samples) < 4 {
		t.Fatalf("%d samples, %d failures", len(samples), fails)
	}
	sum := Summarize(samples)
	g := sum["q:running"]
	last := float64(2 * (len(samples) - 1))
	if g.Type != "GAUGE" || *g.Max != last || math.Abs(*g.Avg-last/2) > 1e-9 {
		t.Errorf("gauge %+v (max %v avg %v)", g, *g.Max, *g.Avg)
	}
	c := sum["q:tokens_total"]
	if *c.Delta != float64(10*(len(samples)-1)) || *c.Rate <= 0 {
		t.Errorf("counter delta %v rate %v", *c.Delta, *c.Rate)
	}
	h := sum["q:ttft_seconds"]
	// Uniform within (0.1, 0.2]: p50 is 0.15 by interpolation.
	if h.P50 == nil || math.Abs(*h.P50-0.15) > 1e-9 || math.Abs(*h.P99-0.199) > 1e-9 {
		t.Errorf("histogram %+v", h)
	}
}

func TestFetchRejectsNonPrometheus(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html>not metrics{</html>")
	}))
	defer srv.Close()
	if _, err := Fetch(context.Background(), srv.Client(), srv.URL); err == nil {
		t.Error("HTML accepted as metrics")
	}
	srv404 := httptest.NewServer(http.NotFoundHandler())
	defer srv404.Close()
	if _, err := Fetch(context.Background(), srv404.Client(), srv404.URL); err == nil {
		t.Error("404 accepted")
	}
}
