package run

import (
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/servermetrics"
)

func counter(delta float64) servermetrics.Summary {
	return servermetrics.Summary{Type: "COUNTER", Delta: &delta}
}

// The prefix-cache share comes from each server's own counters (llama.cpp
// counts the tokens it processed besides the cached ones, vLLM every
// queried token), and a run served mostly from cache says so.
func TestPromptCache(t *testing.T) {
	t.Parallel()
	llama := map[string]result.ServerMetrics{"u": {Metrics: map[string]servermetrics.Summary{
		"llamacpp:prompt_tokens_cached_total": counter(4096), "llamacpp:prompt_tokens_total": counter(8)}}}
	pc := promptCache(llama)
	if pc == nil || pc.PromptTokens != 4104 || pc.CachedFraction < 0.99 || pc.Source != "llama.cpp /metrics" {
		t.Fatalf("llama.cpp: %+v", pc)
	}
	if w := cacheWarning(pc); len(w) != 1 || !strings.Contains(w[0], "100% of this run's prompt tokens") {
		t.Errorf("warning %q", w)
	}
	vllm := map[string]result.ServerMetrics{"u": {Metrics: map[string]servermetrics.Summary{
		"vllm:prefix_cache_hits_total": counter(100), "vllm:prefix_cache_queries_total": counter(4000)}}}
	if pc := promptCache(vllm); pc == nil || pc.CachedFraction != 0.025 || cacheWarning(pc) != nil {
		t.Errorf("vLLM: %+v", pc)
	}
	if pc := promptCache(map[string]result.ServerMetrics{"u": {Metrics: map[string]servermetrics.Summary{"x": counter(1)}}}); pc != nil {
		t.Errorf("no cache counters: %+v", pc)
	}
}
