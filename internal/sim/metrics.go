package sim

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// simMetrics is what the simulator exposes at /metrics, under vLLM's
// metric names (vllm:*), so a scrape that knows vLLM reads it as it would
// read vLLM: running (and, in engine mode, waiting) requests, the KV
// cache's use, prompt and generation token counters, the prefix cache's
// queries and hits, preemptions, and TTFT and ITL histograms.
type simMetrics struct {
	running      atomic.Int64
	promptTokens atomic.Int64
	genTokens    atomic.Int64
	requests     atomic.Int64
	failed       atomic.Int64 // answered with an injected error
	mu           sync.Mutex
	ttft, itl    histogram
}

type histogram struct {
	counts []int64 // per bucket (not cumulative)
	sum    float64
	n      int64
}

var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	itlBuckets  = []float64{0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
)

func (h *histogram) observe(buckets []float64, s float64) {
	if h.counts == nil {
		h.counts = make([]int64, len(buckets))
	}
	for i, b := range buckets {
		if s <= b {
			h.counts[i]++
			break
		}
	}
	h.sum += s
	h.n++
}

func (h *histogram) write(w io.Writer, name, help string, buckets []float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum int64
	for i, b := range buckets {
		if h.counts != nil {
			cum += h.counts[i]
		}
		fmt.Fprintf(w, "%s_bucket{le=\"%g\"} %d\n", name, b, cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, h.n, name, h.sum, name, h.n)
}

// observe records a finished request's first token and token gaps.
func (m *simMetrics) observe(t *Truth) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.FirstToken > 0 {
		m.ttft.observe(ttftBuckets, time.Duration(t.FirstToken).Seconds())
	}
	for _, g := range t.Gaps {
		m.itl.observe(itlBuckets, time.Duration(g).Seconds())
	}
}

func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	m := &s.metrics
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	gauge := func(name, help string, v any) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %v\n", name, help, name, name, v)
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	if s.engine != nil {
		st := s.engine.stats()
		gauge("vllm:num_requests_running", "Requests in the running batch.", st.Running)
		gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled.", st.Waiting)
		gauge("vllm:kv_cache_usage_perc", "Fraction of KV cache blocks in use.", st.KVUsage)
		counter("vllm:prompt_tokens_total", "Prompt tokens of admitted requests.", st.PromptTokens)
		counter("vllm:generation_tokens_total", "Tokens generated.", st.GenerationTokens)
		counter("vllm:request_success_total", "Requests finished.", st.FinishedRequests)
		counter("vllm:num_preemptions_total", "Preemptions of running requests.", st.Preemptions)
		if s.cfg.Engine.PrefixCaching {
			counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", st.PrefixQueries)
			counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", st.PrefixHits)
		}
	} else {
		gauge("vllm:num_requests_running", "Requests being generated.", m.running.Load())
		gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled.", 0)
		counter("vllm:prompt_tokens_total", "Prompt tokens processed.", m.promptTokens.Load())
		counter("vllm:generation_tokens_total", "Tokens generated.", m.genTokens.Load())
		counter("vllm:request_success_total", "Requests finished.", m.requests.Load())
	}
	counter("aiperf_sim:injected_errors_total", "Requests answered with an injected error status.", m.failed.Load())
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ttft.write(w, "vllm:time_to_first_token_seconds", "Time to first token.", ttftBuckets)
	m.itl.write(w, "vllm:inter_token_latency_seconds", "Time between tokens.", itlBuckets)
}
