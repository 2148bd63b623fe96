package sim

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// simMetrics is what the simulator exposes at /metrics, in the shape
// inference servers use (vLLM's vllm:*, llama.cpp's llamacpp:*): a gauge
// of running requests, token counters and a TTFT histogram.
type simMetrics struct {
	running      atomic.Int64
	promptTokens atomic.Int64
	genTokens    atomic.Int64
	requests     atomic.Int64
	mu           sync.Mutex
	ttft         []int64 // per bucket
	ttftSum      float64
	ttftCount    int64
}

var ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func (m *simMetrics) observeTTFT(d time.Duration) {
	s := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ttft == nil {
		m.ttft = make([]int64, len(ttftBuckets))
	}
	for i, b := range ttftBuckets {
		if s <= b {
			m.ttft[i]++
		}
	}
	m.ttftSum += s
	m.ttftCount++
}

func (m *simMetrics) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP aiperf_sim:num_requests_running Requests being generated.\n# TYPE aiperf_sim:num_requests_running gauge\naiperf_sim:num_requests_running %d\n", m.running.Load())
	fmt.Fprintf(w, "# HELP aiperf_sim:prompt_tokens_total Prompt tokens processed.\n# TYPE aiperf_sim:prompt_tokens_total counter\naiperf_sim:prompt_tokens_total %d\n", m.promptTokens.Load())
	fmt.Fprintf(w, "# HELP aiperf_sim:generation_tokens_total Tokens generated.\n# TYPE aiperf_sim:generation_tokens_total counter\naiperf_sim:generation_tokens_total %d\n", m.genTokens.Load())
	fmt.Fprintf(w, "# HELP aiperf_sim:requests_total Requests finished.\n# TYPE aiperf_sim:requests_total counter\naiperf_sim:requests_total %d\n", m.requests.Load())
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprint(w, "# HELP aiperf_sim:time_to_first_token_seconds Time to first token.\n# TYPE aiperf_sim:time_to_first_token_seconds histogram\n")
	for i, b := range ttftBuckets {
		var c int64
		if m.ttft != nil {
			c = m.ttft[i]
		}
		fmt.Fprintf(w, "aiperf_sim:time_to_first_token_seconds_bucket{le=\"%g\"} %d\n", b, c)
	}
	fmt.Fprintf(w, "aiperf_sim:time_to_first_token_seconds_bucket{le=\"+Inf\"} %d\naiperf_sim:time_to_first_token_seconds_sum %g\naiperf_sim:time_to_first_token_seconds_count %d\n", m.ttftCount, m.ttftSum, m.ttftCount)
}
