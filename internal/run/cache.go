package run

import (
	"fmt"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// cacheWarnAbove is the share of prompt tokens served from the server's
// prefix cache above which a run is said to have measured cached prefill.
const cacheWarnAbove = 0.5

// cacheWarning says when a run measured cached prefill, not the server.
func cacheWarning(pc *result.PromptCache) []string {
	if pc == nil || pc.CachedFraction <= cacheWarnAbove {
		return nil
	}
	return []string{fmt.Sprintf("%.0f%% of this run's prompt tokens were served from the server's prefix cache (%s): it measured cached prefill, not the server's (the gate sends every run prompts of its own; a dataset file's text is the same in every run: see cache-reset)", 100*pc.CachedFraction, pc.Source)}
}
