package gate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// The measured runs of a job: each scenario's looks (runScenarios), its
// repeats, a pair of them on two servers, one run, and the warmup.

// runScenarios profiles every scenario Repeats times, after a warmup, and
// compares each (with cmp) while the servers are up: an adaptive gate
// (max-repeats) adds Repeats more runs at each look while a scenario is
// inconclusive, at the levels compare.Looks spends α over, up to
// max-repeats or the time budget. In a paired A/B run (baseTarget set)
// each repeat runs on both servers, in the order A B, B A, A B, … so that
// a drift within the job falls on both.
func (g *gate) runScenarios(ctx context.Context, target, baseTarget string, cmp *comparer) ([]Scenario, error) {
	var out []Scenario
	for k, sc := range g.cfg.Scenarios {
		if k == 0 {
			for _, t := range []struct{ url, name string }{{baseTarget, "baseline-server"}, {target, "server"}} {
				if t.url == "" {
					continue
				}
				if err := g.probe(ctx, sc, t.url, t.name); err != nil {
					return nil, err
				}
				if !g.cfg.Warmup {
					continue
				}
				if err := g.warmup(ctx, sc, t.url); err != nil {
					return nil, err
				}
			}
		}
		if isSearch(sc) {
			gs, err := g.runSearchScenario(ctx, sc, target, baseTarget, cmp)
			if err != nil {
				return nil, err
			}
			if gs.Broken != "" {
				g.logf("aiperf-action gate: scenario %s: FAIL: %s; neither compared nor stored", gs.Name, gs.Broken)
			}
			out = append(out, gs)
			continue
		}
		gs := Scenario{Name: config.ScenarioName(sc), Paired: baseTarget != ""}
		if gs.Paired {
			gs.BaselineSource = "the baseline server, paired run by run in this job (A B, B A, …)"
		}
		most := g.cfg.MostRepeats()
		if cmp == nil {
			most = g.cfg.Repeats
		}
		started := time.Now()
		var lookTime time.Duration
		alpha := compare.DefaultOptions.Alpha // (unused without cmp: one look, runs only)
		if cmp != nil {
			alpha = cmp.st.Options.Alpha
		}
		looks := compare.Looks(g.cfg.Repeats, most, alpha)
		for li := 0; li < len(looks); li++ {
			look := looks[li]
			if n := len(gs.Candidate); look.N > n {
				if budget := g.cfg.TimeBudget; li > 0 && budget > 0 && time.Since(started)+lookTime > budget {
					gs.lookNote = fmt.Sprintf("still inconclusive after %d runs: the next look would pass the time budget of %s", n, budget)
					break
				}
				t0 := time.Now()
				if err := g.runRepeats(ctx, sc, &gs, target, baseTarget, n+1, look.N, most); err != nil {
					return nil, err
				}
				lookTime = time.Since(t0)
			}
			if gs.Broken == "" {
				if err := g.checkCache(ctx, cmp, sc, &gs, target, baseTarget); err != nil {
					return nil, err
				}
			}
			if gs.Broken != "" {
				g.logf("aiperf-action gate: scenario %s: FAIL: %s; neither compared nor stored", gs.Name, gs.Broken)
				break
			}
			if cmp == nil {
				break
			}
			if err := g.compareScenario(ctx, cmp, &gs, look); err != nil {
				return nil, err
			}
			if li == 0 && !gs.Paired && len(gs.Baseline) > 0 {
				// The later looks share the stored baseline runs, now known:
				// their levels count the correlation that adds (the first
				// look's level is the same either way).
				looks = compare.LooksAgainst(g.cfg.Repeats, most, len(gs.Baseline), alpha)
			}
			if len(looks) > 1 {
				gs.lookNote = fmt.Sprintf("adaptive repeats: look %d of %d after %d runs in %.1fs, at α %.3g for a FAIL and %.3g for a PASS, of the %.3g each spends over the looks", li+1, len(looks), look.N, time.Since(started).Seconds(), look.Alpha, look.PassAlpha, cmp.st.Options.Alpha)
			}
			if gs.Verdict() != Inconclusive || gs.EnvHardware || gs.CacheMismatch != "" {
				break // more runs on another machine than the baseline's, or of other cached work, decide nothing
			}
		}
		if gs.Compare != nil {
			for _, note := range []string{gs.lookNote, gs.cacheNote} {
				if note != "" {
					gs.Compare.Comparison.Warnings = append(gs.Compare.Comparison.Warnings, note)
				}
			}
		}
		if gs.CacheMismatch != "" {
			g.env.Warning(fmt.Sprintf("aiperf-action: scenario %s: prefix cache differs from the baseline's: %s", gs.Name, gs.CacheMismatch))
			g.logf("aiperf-action gate: scenario %s: not judged as a regression: %s", gs.Name, gs.CacheMismatch)
		}
		if gs.Compare != nil && g.cfg.Thresholds.FailOnInconclusive && Verdict(gs.Compare.Verdict) == Inconclusive {
			gs.Compare.Comparison.Warnings = append(gs.Compare.Comparison.Warnings, "fail-on-inconclusive is set")
		}
		out = append(out, gs)
	}
	return out, nil
}

// runRepeats runs repeats from..to of scenario sc (of most planned).
func (g *gate) runRepeats(ctx context.Context, sc map[string]any, gs *Scenario, target, baseTarget string, from, to, most int) error {
	g.most = most
	for i := from; i <= to; i++ {
		var err error
		if gs.Paired {
			err = g.runPair(ctx, sc, gs, target, baseTarget, i, 0)
		} else {
			err = g.runOne(ctx, sc, gs, target, i, armCandidate, 0)
		}
		if err != nil || gs.Broken != "" {
			return err // (a broken run: more runs would say the same)
		}
	}
	return nil
}

// runPair runs repeat i of a paired scenario on both servers, in the
// order A B, B A, A B, … so that a drift within the job falls on both.
func (g *gate) runPair(ctx context.Context, sc map[string]any, gs *Scenario, target, baseTarget string, i, try int) error {
	arms := []int{armBaseline, armCandidate}
	if i%2 == 0 {
		arms = []int{armCandidate, armBaseline}
	}
	for _, arm := range arms {
		t := target
		if arm == armBaseline {
			t = baseTarget
		}
		if err := g.runOne(ctx, sc, gs, t, i, arm, try); err != nil || gs.Broken != "" {
			return err
		}
	}
	return nil
}

// runOne runs repeat i of scenario sc on arm's server at target, with the
// prompts of this job's try: try 0 adds the run to gs, a later try (fresh
// prompts, after a run the prefix cache served) takes run i's place, its
// folder beside the first's.
func (g *gate) runOne(ctx context.Context, sc map[string]any, gs *Scenario, target string, i, arm, try int) error {
	p, err := g.scenarioProfile(sc, target, i)
	if err != nil {
		return err
	}
	p.PayloadSeed = g.payloadSeed(gs.Name, i, arm, try)
	name, label := fmt.Sprintf("run-%d", i), ""
	if arm == armBaseline {
		name, label = fmt.Sprintf("baseline-%d", i), " (baseline server)"
	}
	if try > 0 {
		name += fmt.Sprintf("-fresh-%d", try)
		label += ", again with fresh prompts"
	}
	p.ArtifactDir = filepath.Join(filepath.Dir(p.ArtifactDir), name)
	if err := g.resetCache(ctx, target); err != nil {
		return err
	}
	g.logf("aiperf-action gate: scenario %s, run %d of %d%s", gs.Name, i, max(g.most, i), label)
	res, err := g.measure(ctx, p, gs.Name, i)
	if err != nil {
		return err
	}
	put := func(runs []*result.Run, r *result.Run) []*result.Run {
		if try > 0 && i-1 < len(runs) {
			runs[i-1] = r
			return runs
		}
		return append(runs, r)
	}
	if arm == armBaseline {
		gs.Baseline = put(gs.Baseline, res.Run)
	} else {
		gs.Candidate = put(gs.Candidate, res.Run)
		if try > 0 && i-1 < len(gs.candidateJSON) {
			gs.candidateJSON[i-1] = res.JSON
		} else {
			gs.candidateJSON = append(gs.candidateJSON, res.JSON)
		}
	}
	if why := brokenRun(res.Run, g.maxErr); why != "" {
		gs.Broken = fmt.Sprintf("run %d%s is no measurement: %s", i, label, why)
	}
	return nil
}

// measure runs one measured profile (here, or on Kubernetes) and prints
// its table.
func (g *gate) measure(ctx context.Context, p *config.Profile, name string, i int) (*run.Result, error) {
	var res *run.Result
	var err error
	if g.onKube() {
		if res, err = g.runKube(ctx, p, name, i); err != nil {
			return nil, err
		}
	} else {
		res, err = run.Profile(ctx, p, run.Options{Cmdline: "aiperf-action gate (scenario " + name + ")", Stderr: g.opt.Stderr,
			Logf: func(format string, a ...any) { g.logf(format, a...) }, Job: g.job, Scenario: name, Environment: g.fp})
	}
	if res == nil {
		return nil, fmt.Errorf("scenario %q run %d failed before writing results (exit %d): %v", name, i, run.ExitCode(err), err)
	}
	if g.env.InActions() { // each run's table folded in the log, its verdict line outside
		g.env.Group(fmt.Sprintf("%s run %d: results", name, i))
	}
	g.opt.Render.Run(g.opt.Stdout, res)
	fmt.Fprintf(g.opt.Stdout, "Artifacts: %s\n", res.Dir)
	if g.env.InActions() {
		g.env.EndGroup()
	}
	if err != nil {
		fmt.Fprintf(g.opt.Stderr, "aiperf-action profile: %v\n", err)
	}
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}
	return res, nil
}

// warmup sends the first scenario's requests once, unmeasured, in a closed
// loop at its concurrency: 2 per stream, at least 4. Its prompts are this
// job's own, which no measured run sends.
func (g *gate) warmup(ctx context.Context, sc map[string]any, target string) error {
	p, err := g.lightProfile(sc, target, "warmup")
	if err != nil {
		return err
	}
	p.Concurrency = max(1, p.Concurrency)
	p.ConcurrencySet, p.RequestCount, p.RequestCountSet = true, max(4, 2*p.Concurrency), true
	g.logf("aiperf-action gate: warmup, %d requests at concurrency %d (not measured; warmup: false in the config turns it off)", p.RequestCount, p.Concurrency)
	var res *run.Result
	if g.onKube() {
		res, err = g.runKube(ctx, p, "warmup", 0)
	} else {
		res, err = run.Profile(ctx, p, run.Options{Cmdline: "aiperf-action gate (warmup)", Stderr: g.opt.Stderr})
	}
	switch {
	case ctx.Err() != nil:
		return errors.New("interrupted")
	case res == nil:
		return fmt.Errorf("warmup: %v", err)
	}
	c := res.Run.Counts
	g.logf("aiperf-action gate: warmup done in %.1fs: %d requests, %d failed", res.Run.DurationS, c.Requests, c.FailedNotCancelled())
	return nil
}
