package servermetrics

import "strings"

// PromptCache is how many of a run's prompt tokens the server served from
// its prefix cache, from its /metrics counters' increase over the run.
type PromptCache struct {
	Source         string  `json:"source"` // which counters, e.g. "llama.cpp /metrics"
	CachedTokens   float64 `json:"cached_tokens"`
	PromptTokens   float64 `json:"prompt_tokens"`
	CachedFraction float64 `json:"cached_fraction"`
}

// cacheCounters are the servers' /metrics counters of prompt tokens: those
// served from the prefix cache, and those it was asked for (or processed
// besides the cached ones, when total is false).
var cacheCounters = []struct {
	source, cached, other string
	total                 bool // other counts every prompt token, the cached ones included
}{
	{"llama.cpp", "llamacpp:prompt_tokens_cached", "llamacpp:prompt_tokens", false},
	{"vLLM", "vllm:prefix_cache_hits", "vllm:prefix_cache_queries", true},
	// SGLang counts every request's prompt tokens, and the cached ones by
	// where they came from (cache_source device, host, storage: summed).
	{"SGLang", "sglang:cached_tokens", "sglang:prompt_tokens", true},
}

// PromptCacheOf is how much of the run's prompts the server served from its
// prefix cache, from the endpoints' counters over the run; nil when no
// server reports them.
func PromptCacheOf(byURL map[string]Endpoint) *PromptCache {
	for _, ep := range byURL {
		for _, c := range cacheCounters {
			cached, ok1 := counterDelta(ep.Metrics, c.cached)
			other, ok2 := counterDelta(ep.Metrics, c.other)
			if !ok1 || !ok2 {
				continue
			}
			total := other
			if !c.total {
				total += cached
			}
			pc := &PromptCache{Source: c.source + " /metrics", CachedTokens: cached, PromptTokens: total}
			if total > 0 {
				pc.CachedFraction = cached / total
			}
			return pc
		}
	}
	return nil
}

// counterDelta is a counter's increase over the run, under its name with
// or without the _total suffix.
func counterDelta(m map[string]Summary, name string) (float64, bool) {
	for _, n := range []string{name + "_total", name} {
		if s, ok := m[n]; ok && s.Delta != nil && strings.EqualFold(s.Type, "counter") {
			return *s.Delta, true
		}
	}
	return 0, false
}
