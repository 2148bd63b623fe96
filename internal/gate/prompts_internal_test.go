package gate

import (
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
)

func cachedRun(seed uint64, repeat int, payload uint64, frac float64) *result.Run {
	r := &result.Run{Seed: seed, Repeat: repeat, PayloadSeed: payload}
	if frac >= 0 {
		r.ToolHealth.PromptCache = &result.PromptCache{Source: "test", CachedTokens: 1000 * frac, PromptTokens: 1000, CachedFraction: frac}
	}
	return r
}

// Which stored runs sent prompts their seed alone fixes, and the median
// cached share of those that counted it; the replayed ones are left out of
// a baseline once runs with prompts of their own stand beside them.
func TestSeedOnlyAndReplayedBaselines(t *testing.T) {
	const seed = 11
	fresh := seeds.Fresh(seed, 99, 1)
	for _, c := range []struct {
		r    *result.Run
		want bool
	}{
		{cachedRun(seed, 2, seeds.PayloadSeed(seed, 2), 0), true}, // a repeat, before each job drew its own
		{cachedRun(seed, 0, seed, 0), true},                       // a lone run
		{cachedRun(seed, 1, 0, 0), true},                          // before run.json had a payload_seed
		{cachedRun(seed, 1, fresh, 0), false},                     // a job's own
	} {
		if got := seedOnly(c.r); got != c.want {
			t.Errorf("seedOnly(repeat %d, payload_seed %d) = %v", c.r.Repeat, c.r.PayloadSeed, got)
		}
	}
	old := func(r int, f float64) *result.Run { return cachedRun(seed, r, seeds.PayloadSeed(seed, r), f) }
	own := func(r int, f float64) *result.Run { return cachedRun(seed, r, seeds.Fresh(seed, 7, uint64(r)), f) }
	if ref, n, allOld := baselineCache([]*result.Run{old(1, 0.99), old(2, 0.98), old(3, -1)}); n != 2 || ref != 0.985 || !allOld {
		t.Errorf("old runs: ref %g over %d, all seed-only %v", ref, n, allOld)
	}
	if _, n, _ := baselineCache([]*result.Run{own(1, -1)}); n != 0 {
		t.Errorf("a run without counters counted")
	}
	gs := &Scenario{Name: "s", Baseline: []*result.Run{old(1, 0.99), old(2, 0.02), old(3, 0.98), own(1, 0.03), own(2, 0.04), own(3, 0.03)},
		baselineNames: []string{"o1", "o2", "o3", "n1", "n2", "n3"}, BaselineCommits: []string{"a", "a", "a", "b", "b", "b"}, BaselineSource: "folder"}
	g := &gate{opt: Options{}}
	g.opt.defaults()
	g.dropReplayed(gs)
	if len(gs.Baseline) != 4 || gs.baselineNames[0] != "o2" || gs.BaselineCommits[1] != "b" {
		t.Fatalf("kept %v (%v)", gs.baselineNames, gs.BaselineCommits)
	}
	if ref, _, allOld := baselineCache(gs.Baseline); ref > 0.05 || allOld {
		t.Errorf("after: ref %g, all seed-only %v", ref, allOld)
	}
	only := &Scenario{Baseline: []*result.Run{old(1, 0.99), old(2, 0.98)}, baselineNames: []string{"o1", "o2"}, BaselineCommits: []string{"a", "a"}}
	g.dropReplayed(only)
	if len(only.Baseline) != 2 {
		t.Errorf("seed-only runs with none of their own beside them were dropped: %v", only.baselineNames)
	}
}
