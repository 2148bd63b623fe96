package servermetrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
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
	sglang := map[string]Endpoint{"u": {Metrics: map[string]Summary{
		"sglang:cached_tokens_total": counter(3168), "sglang:prompt_tokens_total": counter(4096), "sglang:generation_tokens_total": counter(512)}}}
	if pc := PromptCacheOf(sglang); pc == nil || pc.PromptTokens != 4096 || pc.CachedFraction != 3168.0/4096 || pc.Source != "SGLang /metrics" {
		t.Errorf("SGLang: %+v", pc)
	}
	if pc := PromptCacheOf(map[string]Endpoint{"u": {Metrics: map[string]Summary{"x": counter(1)}}}); pc != nil {
		t.Errorf("no cache counters: %+v", pc)
	}
}

// SGLang's own exposition, scraped before and after: its cached tokens
// come in one series per cache_source, and its counters carry the model's
// label; the share is their sum's increase over the prompt tokens'.
func TestPromptCacheSGLangExposition(t *testing.T) {
	t.Parallel()
	page := func(prompt, device, host float64) string {
		return fmt.Sprintf(`# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} %g
# HELP sglang:cached_tokens_total Number of cached prompt tokens by source.
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{cache_source="device",model_name="m"} %g
sglang:cached_tokens_total{cache_source="host",model_name="m"} %g
`, prompt, device, host)
	}
	pages := []string{page(1000, 100, 0), page(5000, 1100, 500)}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, pages[min(int(n.Add(1))-1, 1)])
	}))
	defer srv.Close()
	var samples []*Sample
	for range 2 {
		s, err := Fetch(context.Background(), srv.Client(), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, s)
	}
	pc := PromptCacheOf(map[string]Endpoint{srv.URL: {Metrics: Summarize(samples)}})
	if pc == nil || pc.PromptTokens != 4000 || pc.CachedTokens != 1500 || pc.CachedFraction != 0.375 {
		t.Fatalf("SGLang's exposition: %+v", pc)
	}
}
