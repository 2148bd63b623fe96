package servermetrics

import (
	"testing"
)

func counter(delta float64) Summary {
	return Summary{Type: "COUNTER", Delta: &delta}
}

// The prefix-cache share comes from each server's own counters (llama.cpp
// counts the tokens it processed besides the cached ones, vLLM every
// queried token).
func TestPromptCache(t *testing.T) {
	t.Parallel()
	llama := map[string]Endpoint{"u": {Metrics: map[string]Summary{
		"llamacpp:prompt_tokens_cached_total": counter(4096), "llamacpp:prompt_tokens_total": counter(8)}}}
	pc := PromptCacheOf(llama)
	if pc == nil || pc.PromptTokens != 4104 || pc.CachedFraction < 0.99 || pc.Source != "llama.cpp /metrics" {
		t.Fatalf("llama.cpp: %+v", pc)
	}
	vllm := map[string]Endpoint{"u": {Metrics: map[string]Summary{
		"vllm:prefix_cache_hits_total": counter(100), "vllm:prefix_cache_queries_total": counter(4000)}}}
	if pc := PromptCacheOf(vllm); pc == nil || pc.CachedFraction != 0.025 {
		t.Errorf("vLLM: %+v", pc)
	}
	if pc := PromptCacheOf(map[string]Endpoint{"u": {Metrics: map[string]Summary{"x": counter(1)}}}); pc != nil {
		t.Errorf("no cache counters: %+v", pc)
	}
}
