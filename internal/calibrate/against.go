package calibrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// TruthStats is what a truth server reports of its own timings at
// GET {URL}/stats, the shape of truthmock's (an independent server written
// apart from this project): percentiles over the streamed requests it
// finished since its last reset, each request's TTFT from when the kernel
// received its bytes to when its first chunk was written, and the gaps
// between the chunks it wrote. GET {URL}/stats?reset=1&skip=N forgets
// every request so far and leaves the next N streamed ones out (the
// warmup). The cfg_ fields are the server's own TTFT and ITL settings,
// from which the ideal rate is taken when it gives them.
type TruthStats struct {
	Requests *int     `json:"requests"`
	TTFTP50  *float64 `json:"server_ttft_ms_p50"`
	TTFTP99  *float64 `json:"server_ttft_ms_p99"`
	GapP99   *float64 `json:"server_gap_ms_p99"`
	CfgTTFT  *float64 `json:"cfg_ttft_ms,omitempty"`
	CfgITL   *float64 `json:"cfg_itl_ms,omitempty"`
}

// fetchStats reads base's /stats (with query, when not empty) and checks
// that every figure the comparison needs is there.
func fetchStats(ctx context.Context, base, query string) (*TruthStats, error) {
	u := strings.TrimRight(base, "/") + "/stats" + query
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("--against %s: %w", base, err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("--against: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("--against: GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("--against: GET %s: HTTP %d (a truth server answers /stats with its own timings)", u, resp.StatusCode)
	}
	var s TruthStats
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("--against: GET %s: not the truth server's /stats JSON: %v", u, err)
	}
	var missing []string
	for name, v := range map[string]*float64{"server_ttft_ms_p50": s.TTFTP50, "server_ttft_ms_p99": s.TTFTP99, "server_gap_ms_p99": s.GapP99} {
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
			missing = append(missing, name)
		}
	}
	if s.Requests == nil {
		missing = append(missing, "requests")
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("--against: GET %s: no %s (the fields are truthmock's: see docs/calibrate.md)", u, strings.Join(missing, ", "))
	}
	return &s, nil
}

// againstPlan is one step's load against a truth server: a warmup of one
// request a stream (so every connection is dialled before the measured
// requests, which the server leaves out by its skip count), then whole
// rounds of c requests for about the step's duration.
func againstPlan(f *Config, c int, reqDur time.Duration) (warmup, requests int) {
	rounds := max(1, int(math.Round(f.Duration/reqDur.Seconds())))
	return c, rounds * c
}

// stepAgainst measures concurrency c against the truth server at base: the
// run's percentiles against the server's own, over the same requests.
func stepAgainst(ctx context.Context, f *Config, base string, c int, dir string, ideal time.Duration) (*Step, error) {
	warmup, requests := againstPlan(f, c, ideal)
	if _, err := fetchStats(ctx, base, fmt.Sprintf("?reset=1&skip=%d", warmup)); err != nil {
		return nil, err
	}
	p := profileFor(f, base, c, dir)
	p.RequestCount, p.WarmupRequestCount = requests, warmup
	res, err := run.Profile(ctx, p, run.Options{Cmdline: "aiperf-action calibrate --against", Stderr: io.Discard})
	if res == nil {
		return nil, fmt.Errorf("the profile run failed (exit %d): %v", run.ExitCode(err), err)
	}
	truth, err := fetchStats(ctx, base, "")
	if err != nil {
		return nil, err
	}
	rr := res.Run
	st := &Step{Concurrency: c, Workers: rr.ToolHealth.Workers, Errors: rr.Counts.Errors - rr.Counts.Cancelled}
	st.IdealRate = float64(c) / ideal.Seconds()
	if err := st.compare(rr, truth); err != nil {
		return nil, err
	}
	// Every measured stream's chunks: its first, and one a gap after it.
	st.chunks = int(rr.Metrics[metrics.TTFT].Dist.Count + rr.Metrics[metrics.ICL].Dist.Count)
	st.windowChunks = st.chunks
	st.health(&rr.ToolHealth, rr.DurationS)
	st.check(f.Bounds)
	return st, nil
}

// compare holds the run's figures against the truth server's: TTFT p50
// and p99 (from the send, and from the write), the chunk-gap p99 (the
// run's inter_chunk_latency against the server's gaps, in the ITL column)
// and the request rate.
func (st *Step) compare(rr *result.Run, truth *TruthStats) error {
	if *truth.Requests != rr.Counts.Requests {
		return fmt.Errorf("the truth server counted %d measured streamed requests, the run %d: is another client using it, or does its /stats?skip= not leave the warmup out?", *truth.Requests, rr.Counts.Requests)
	}
	st.Requests = rr.Counts.Requests
	dist := func(name string) *metrics.Dist {
		if m, ok := rr.Metrics[name]; ok {
			return m.Dist
		}
		return nil
	}
	ttft, gap := dist(metrics.TTFT), dist(metrics.ICL)
	rate, ok := rr.Metrics[metrics.RequestTput]
	switch {
	case ttft == nil:
		return fmt.Errorf("the run has no %s: no request saw a first token", metrics.TTFT)
	case gap == nil:
		return fmt.Errorf("the run has no %s: no request streamed two chunks (raise --osl)", metrics.ICL)
	case !ok || rate.Rate == nil:
		return fmt.Errorf("the run has no %s", metrics.RequestTput)
	}
	st.TTFTP50ErrMs, st.TTFTP99ErrMs = ttft.P50-*truth.TTFTP50, ttft.P99-*truth.TTFTP99
	if w := dist(metrics.TTFTFromWrite); w != nil {
		st.TTFTWriteP50ErrMs, st.TTFTWriteP99ErrMs = w.P50-*truth.TTFTP50, w.P99-*truth.TTFTP99
	}
	if cs := dist(metrics.ConnSetup); cs != nil {
		st.Dials = int(cs.Count)
		st.ConnSetupP50Ms, st.ConnSetupP99Ms = cs.P50, cs.P99
	}
	st.ITLP99ErrMs = gap.P99 - *truth.GapP99
	st.AchievedRate = rate.Rate.Value
	st.RatePct = 100 * st.AchievedRate / st.IdealRate
	return nil
}

// profileFor is a step's profile at concurrency c against url: streamed
// requests of ISL and OSL tokens (the server told to ignore its end of
// sequence), seeded, every error counted rather than stopping the run.
func profileFor(f *Config, url string, c int, dir string) *config.Profile {
	p := config.DefaultProfile
	p.Model, p.URL, p.Streaming = "calibrate", url, true
	if f.EndpointType != "" {
		p.EndpointType = f.EndpointType
	}
	p.Tokenizer = f.Tokenizer
	p.RequestTemplate, p.PayloadTemplate, p.ResponseField, p.Endpoint = f.RequestTemplate, f.PayloadTemplate, f.ResponseField, f.Endpoint
	p.Concurrency, p.ConcurrencySet = c, true
	p.ISLMean, p.OSLMean = f.ISL, f.OSL
	p.ExtraInputs = []string{"ignore_eos:true"}
	if k, err := endpoint.For(p.EndpointType); err == nil && endpoint.TraitsOf(k).Unbounded {
		// (a type with no output length field: max_tokens in the body)
		p.OSLMean, p.ExtraInputs = 0, append(p.ExtraInputs, fmt.Sprintf("max_tokens:%d", f.OSL))
	}
	p.Seed, p.SeedSet = 1, true
	p.Workers = f.Workers
	p.MaxErrorRate = 100
	p.ArtifactDir = dir
	return &p
}
