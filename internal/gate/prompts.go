package gate

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
)

// Each job's own prompts, and the check that a run's prefix-cache hits are
// the baseline's.
//
// A server that outlives a job (a url: server, a baseline-server that is
// the candidate, two builds behind one shared KV tier) answers a prompt it
// has seen from its prefix cache. So every measured run of a gate job
// sends words no earlier job, scenario, repeat or arm sent: its payload
// seed is seeds.Fresh under a nonce this job draws, recorded in run.json
// (payload_seed), while the lengths, arrivals and ids stay the seed's, and
// with them the profile_hash. And a run whose share of cached prompt
// tokens is not the baseline's is not compared as if it measured the same
// server: it runs again with fresh prompts, and if that does not bring it
// back the scenario reads INCONCLUSIVE, saying so.

// Arms of a payload seed: which run of a repeat it is.
const (
	armCandidate = 0
	armBaseline  = 1 // the baseline server's run of a pair (paired A/B)
	armLight     = 2 // the probe and the warmup
	armSearch    = 3 // a search's probes (each its own, seeds.Fresh by probe)
)

// cacheTolerance is how far, in points of the prompt tokens a server
// served from its prefix cache, a run may be from its baseline's and
// still be taken to have measured the same thing: a few points, which
// fresh prompts on an unchanged server keep (llama-server's chat template
// alone is cached at 2–4%).
const cacheTolerance = 0.05

// scenarioNonce is this job's nonce for scenario name: two scenarios of
// one job, with the same seed and lengths, send their own prompts.
func (g *gate) scenarioNonce(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return g.nonce ^ h.Sum64()
}

// payloadSeed is the payload seed of scenario name's repeat, arm and try
// (a run again with fresh prompts is try 1) in this job.
func (g *gate) payloadSeed(name string, repeat, arm, try int) uint64 {
	return seeds.Fresh(g.cfg.Seed, g.scenarioNonce(name), uint64(repeat)<<16|uint64(arm)<<8|uint64(try))
}

// cachedFraction is the share of run r's prompt tokens its server served
// from its prefix cache, where its /metrics counted them.
func cachedFraction(r *result.Run) (float64, bool) {
	pc := r.ToolHealth.PromptCache
	if pc == nil || pc.PromptTokens <= 0 || math.IsNaN(pc.CachedFraction) {
		return 0, false
	}
	return pc.CachedFraction, true
}

// seedOnly says run r's prompts were fixed by its seed and repeat alone,
// as every job's were before each job drew its own (and a lone run's, or
// one recorded before run.json had a payload_seed, are): a server that
// outlived the job that stored it may have answered them from its cache of
// an earlier job's.
func seedOnly(r *result.Run) bool {
	return r.PayloadSeed == 0 || r.PayloadSeed == seeds.PayloadSeed(r.Seed, r.Repeat)
}

// baselineCache is the median share of the stored baseline runs' prompt
// tokens served from the cache, over those that counted it, and whether
// every one of those sent prompts fixed by the seed alone.
func baselineCache(runs []*result.Run) (ref float64, n int, old bool) {
	var fs []float64
	old = true
	for _, r := range runs {
		if f, ok := cachedFraction(r); ok {
			fs = append(fs, f)
			old = old && seedOnly(r)
		}
	}
	if len(fs) == 0 {
		return 0, 0, false
	}
	return compare.Median(fs), len(fs), old
}

// checkCache holds the runs of gs that no look checked yet to the
// baseline's prefix-cache hits: paired, each pair's arms to each other;
// otherwise each run to the stored runs' median. A run hotter than its
// reference by more than cacheTolerance runs again with fresh prompts
// (once, a pair both arms); if it is still off, or where the stored
// baseline is the hotter one (fresh prompts here cannot cool it),
// gs.CacheMismatch says so and the scenario reads INCONCLUSIVE.
func (g *gate) checkCache(ctx context.Context, c *comparer, sc map[string]any, gs *Scenario, target, baseTarget string) error {
	defer func() { gs.cacheChecked = len(gs.Candidate) }()
	if gs.Broken != "" || gs.CacheMismatch != "" {
		return nil
	}
	if gs.Paired {
		for i := gs.cacheChecked; i < len(gs.Candidate) && i < len(gs.Baseline); i++ {
			off := func() (f, ref float64, bad bool) {
				ref, ok1 := cachedFraction(gs.Baseline[i])
				f, ok2 := cachedFraction(gs.Candidate[i])
				return f, ref, ok1 && ok2 && math.Abs(f-ref) > cacheTolerance
			}
			f, ref, bad := off()
			if !bad {
				continue
			}
			g.logf("aiperf-action gate: scenario %s, pair %d: %.1f%% of the candidate's prompt tokens were served from its server's prefix cache against %.1f%% of the baseline server's: both arms run again with fresh prompts", gs.Name, i+1, 100*f, 100*ref)
			if err := g.runPair(ctx, sc, gs, target, baseTarget, i+1, 1); err != nil || gs.Broken != "" {
				return err
			}
			if f, ref, bad = off(); bad {
				gs.CacheMismatch = fmt.Sprintf("pair %d's arms were not served alike by their prefix caches, with fresh prompts run again too: %.1f%% of the candidate's prompt tokens came from its server's cache, %.1f%% of the baseline server's (more than %.0f points apart), so they measured different work", i+1, 100*f, 100*ref, 100*cacheTolerance)
				gs.CacheHotBaseline = ref > f
				return nil
			}
			g.logf("aiperf-action gate: scenario %s, pair %d again: %.1f%% and %.1f%% cached, alike", gs.Name, i+1, 100*f, 100*ref)
		}
		return nil
	}
	if c == nil || len(gs.Candidate) == 0 {
		return nil
	}
	if !gs.loaded {
		if err := g.loadBaselines(ctx, c, gs); err != nil {
			return err
		}
	}
	if gs.cacheChecked == 0 {
		g.dropReplayed(gs)
	}
	ref, n, old := baselineCache(gs.Baseline)
	if n == 0 {
		return nil
	}
	for i := gs.cacheChecked; i < len(gs.Candidate); i++ {
		f, ok := cachedFraction(gs.Candidate[i])
		if !ok {
			continue
		}
		switch {
		case f < ref-cacheTolerance && old:
			gs.CacheMismatch = fmt.Sprintf("the stored baseline runs were served from the server's prefix cache (%.1f%% of their prompt tokens, the median of %d) and this job's runs were not (run %d: %.1f%%): those runs sent the prompts their seed alone fixes, which a server that outlived an earlier job had cached, so they measured cached prefill. The default branch's next refresh stores runs with prompts of their own", 100*ref, n, i+1, 100*f)
			gs.CacheHotBaseline = true
			return nil
		case f < ref-cacheTolerance:
			gs.cacheNote = fmt.Sprintf("run %d: %.1f%% of its prompt tokens were served from the server's prefix cache against the stored baseline runs' %.1f%% (median of %d), with prompts of its own on both sides: the server's prefix caching changed, and a slower prefill here is its doing", i+1, 100*f, 100*ref, n)
		case f > ref+cacheTolerance:
			g.logf("aiperf-action gate: scenario %s, run %d: %.1f%% of its prompt tokens were served from the server's prefix cache against the baseline runs' %.1f%%: it runs again with fresh prompts", gs.Name, i+1, 100*f, 100*ref)
			if err := g.runOne(ctx, sc, gs, target, i+1, armCandidate, 1); err != nil || gs.Broken != "" {
				return err
			}
			if f2, ok := cachedFraction(gs.Candidate[i]); ok && f2 > ref+cacheTolerance {
				gs.CacheMismatch = fmt.Sprintf("run %d was served from the server's prefix cache (%.1f%% of its prompt tokens, and %.1f%% run again with fresh prompts) against the stored baseline runs' %.1f%% (median of %d), so it measured cached prefill, not the server's. Its prompts are this job's own: the cache holds them from elsewhere (a dataset file's fixed text another job sent, or another client), or the server caches more than it did; cache-reset clears it before each run", i+1, 100*f, 100*f2, 100*ref, n)
				return nil
			} else if ok {
				g.logf("aiperf-action gate: scenario %s, run %d again: %.1f%% cached, as the baseline", gs.Name, i+1, 100*f2)
			}
		}
	}
	return nil
}

// dropReplayed leaves out of gs's stored baseline the runs that sent the
// prompts their seed alone fixes and were served from the prefix cache
// more than the stored runs with prompts of their own were: measurements
// of the cache, which a refresh since has not yet aged out. Runs of the
// one kind only are kept as they are (checkCache judges them).
func (g *gate) dropReplayed(gs *Scenario) {
	var own []*result.Run
	for _, r := range gs.Baseline {
		if _, ok := cachedFraction(r); ok && !seedOnly(r) {
			own = append(own, r)
		}
	}
	ref, n, _ := baselineCache(own)
	if n == 0 {
		return
	}
	keep := func(r *result.Run) bool {
		f, ok := cachedFraction(r)
		return !ok || !seedOnly(r) || f <= ref+cacheTolerance
	}
	var runs []*result.Run
	var names, commits []string
	dropped := 0
	for i, r := range gs.Baseline {
		if !keep(r) {
			dropped++
			continue
		}
		runs = append(runs, r)
		if i < len(gs.baselineNames) {
			names = append(names, gs.baselineNames[i])
		}
		if i < len(gs.BaselineCommits) {
			commits = append(commits, gs.BaselineCommits[i])
		}
	}
	if dropped == 0 {
		return
	}
	gs.Baseline, gs.baselineNames, gs.BaselineCommits = runs, names, commits
	gs.history = slices.DeleteFunc(gs.history, func(l result.Loaded) bool { return !keep(l.Run) })
	note := fmt.Sprintf("%d stored baseline run(s) left out: they sent the prompts their seed alone fixes, and the server served them from its prefix cache (more than %.0f points above the %.1f%% of the stored runs with prompts of their own)", dropped, 100*cacheTolerance, 100*ref)
	gs.BaselineSource += "; " + note
	g.logf("aiperf-action gate: scenario %s: %s", gs.Name, note)
}
