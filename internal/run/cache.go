package run

import (
	"fmt"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/servermetrics"
)

// cacheWarnAbove is the share of prompt tokens served from the server's
// prefix cache above which a run is said to have measured cached prefill.
const cacheWarnAbove = 0.5

// cacheCounters are the servers' /metrics counters of prompt tokens: those
// served from the prefix cache, and those it was asked for (or processed
// besides the cached ones, when total is false).
var cacheCounters = []struct {
	source, cached, other string
	total                 bool // other counts every prompt token, the cached ones included
}{
	{"llama.cpp", "llamacpp:prompt_tokens_cached", "llamacpp:prompt_tokens", false},
	{"vLLM", "vllm:prefix_cache_hits", "vllm:prefix_cache_queries", true},
}

// promptCache is how much of the run's prompts the server served from its
// prefix cache, from its /metrics counters over the run; nil when the
// server reports none.
func promptCache(byURL map[string]result.ServerMetrics) *result.PromptCache {
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
			pc := &result.PromptCache{Source: c.source + " /metrics", CachedTokens: cached, PromptTokens: total}
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
func counterDelta(m map[string]servermetrics.Summary, name string) (float64, bool) {
	for _, n := range []string{name + "_total", name} {
		if s, ok := m[n]; ok && s.Delta != nil && strings.EqualFold(s.Type, "counter") {
			return *s.Delta, true
		}
	}
	return 0, false
}

// cacheWarning says when a run measured cached prefill, not the server.
func cacheWarning(pc *result.PromptCache) []string {
	if pc == nil || pc.CachedFraction <= cacheWarnAbove {
		return nil
	}
	return []string{fmt.Sprintf("%.0f%% of this run's prompt tokens were served from the server's prefix cache (%s): it measured cached prefill, not the server's (the gate sends each repeat its own prompts; see cache-reset)", 100*pc.CachedFraction, pc.Source)}
}
