package run_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// Two real workers whose clocks are 1 s ahead of the controller's and 1 s
// behind it (--clock-skew, a host whose clock disagrees): run.json records
// each offset within its stated uncertainty, and the run is what it is
// with agreeing clocks: the server sees its requests arrive over as long
// (a worker that took the start instant in the wrong clock begins 1 s
// late, or sends its first second's share at once; each worker's records
// are in its own frame and cannot show it) and its TTFT is the same.
func TestWorkersOnSkewedClocks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 2*time.Millisecond
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	srv := sim.New(cfg)
	go func() { served <- sim.Serve(sctx, ln, srv) }()
	defer func() { stop(); <-served }()
	// span is how long the server saw the requests of the run of index
	// from (its requests after those of earlier runs) arrive over, by its
	// own clock: a worker that started its share late or early stretches it.
	span := func(from int) (float64, int) {
		ts := srv.Truths()[from:]
		lo, hi := ts[0].ArrivalNs, ts[0].ArrivalNs
		for _, tr := range ts {
			lo, hi = min(lo, tr.ArrivalNs), max(hi, tr.ArrivalNs)
		}
		return float64(hi-lo) / 1e9, len(srv.Truths())
	}
	profile := func(name string, skew func(id int) []string) *run.Result {
		p := config.DefaultProfile
		p.Model, p.URL, p.Streaming = "clock", "http://"+ln.Addr().String(), true
		p.RequestRate, p.RequestCount, p.RequestCountSet = 40, 60, true
		p.ISLMean, p.OSLMean, p.ExtraInputs = 16, 4, []string{"ignore_eos:true"}
		p.Seed, p.SeedSet, p.Workers = 7, true, 2
		p.ArtifactDir = filepath.Join(t.TempDir(), name)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := run.Profile(ctx, &p, run.Options{Stderr: os.Stderr, WorkerArgs: skew})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	plain := profile("plain", nil)
	plainSpan, seen := span(0)
	skews := []time.Duration{time.Second, -time.Second}
	skewed := profile("skewed", func(id int) []string { return []string{fmt.Sprintf("--clock-skew=%s", skews[id])} })
	skewedSpan, _ := span(seen)
	clocks := skewed.Run.ToolHealth.Clocks
	if len(clocks) != 2 {
		t.Fatalf("clocks %+v", clocks)
	}
	for _, c := range clocks {
		d := c.OffsetNs - int64(skews[c.Worker])
		if d > c.UncertaintyNs || -d > c.UncertaintyNs || c.Samples < 1 {
			t.Errorf("worker %d: offset %d ns ± %d, truth %s", c.Worker, c.OffsetNs, c.UncertaintyNs, skews[c.Worker])
		}
		t.Logf("worker %d: offset %+.3f ms from the truth, ± %.3f ms", c.Worker, float64(d)/1e6, float64(c.UncertaintyNs)/1e6)
	}
	a, b := plainSpan, skewedSpan
	if b > a+0.5 || b < a-0.5 {
		t.Errorf("the server saw the requests arrive over %.2f s with agreeing clocks, %.2f s with skewed ones", a, b)
	}
	ttft := func(r *run.Result) float64 { return r.Run.Metrics[metrics.TTFT].Dist.P50 }
	if d := ttft(skewed) - ttft(plain); d > 5 || d < -5 {
		t.Errorf("TTFT p50 %.2f ms with agreeing clocks, %.2f ms with skewed ones", ttft(plain), ttft(skewed))
	}
	t.Logf("arrivals at the server over %.2f s and %.2f s; TTFT p50 %.2f ms and %.2f ms", a, b, ttft(plain), ttft(skewed))
}
