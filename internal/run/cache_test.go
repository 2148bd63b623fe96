package run

import (
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// A run served mostly from the server's prefix cache says so; one that
// was not stays quiet.
func TestCacheWarning(t *testing.T) {
	t.Parallel()
	pc := &result.PromptCache{Source: "llama.cpp /metrics", CachedTokens: 4096, PromptTokens: 4104, CachedFraction: 4096.0 / 4104}
	if w := cacheWarning(pc); len(w) != 1 || !strings.Contains(w[0], "100% of this run's prompt tokens") {
		t.Errorf("warning %q", w)
	}
	if w := cacheWarning(&result.PromptCache{CachedFraction: 0.025}); w != nil {
		t.Errorf("2.5%% cached warned: %q", w)
	}
	if cacheWarning(nil) != nil {
		t.Error("no counters warned")
	}
}
