package gate

// A scenario with a search: mapping is a capacity gate: the highest load
// at which the server holds the objectives, found by run.Search, and
// compared with the baseline's capacity by capacity.Comparison (a stored
// search of the default branch on this testbed, or the baseline server's
// search in this job, probe by probe in turn).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/baseline"
	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/percent"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// Capacity is a search scenario's outcome: the objectives in words, the
// unit of load, and each side's estimate (the baseline's nil without one).
type Capacity struct {
	Objective        string             `json:"objective"`
	Unit             string             `json:"unit"`
	Candidate        capacity.Estimate  `json:"candidate"`
	Baseline         *capacity.Estimate `json:"baseline,omitempty"`
	CandidateProbes  int                `json:"candidate_probes"`
	BaselineProbes   int                `json:"baseline_probes,omitempty"`
	CandidateStopped string             `json:"candidate_stopped,omitempty"`
	BaselineStopped  string             `json:"baseline_stopped,omitempty"`
}

// searchPerProbe is a probe's requests where the scenario sets none: a
// probe of a few dozen decides nothing near the crossing.
const searchPerProbe = 300

// searchPlan is a search scenario's profile and search against target.
type searchPlan struct {
	p    *config.Profile
	so   run.SearchOptions
	key  string // the baselines' key, without the testbed
	unit string
	// first is the scenario as its first probe runs: its keys and the
	// search's first load (the health probe and warmup send it).
	first map[string]any
}

// isSearch reports whether a scenario is a capacity search.
func isSearch(sc map[string]any) bool { _, ok := sc[config.SearchKey]; return ok }

// searchPlan parses scenario sc's search: mapping (the search command's
// flags as keys) over its profile, into dir under the scenario's folder.
// Every problem names the config, the scenario and the key.
func (g *gate) searchPlan(sc map[string]any, target, dir string) (*searchPlan, error) {
	name := config.ScenarioName(sc)
	at := fmt.Sprintf("config %s: scenario %q", g.opt.ConfigPath, name)
	m, _, err := config.ScenarioSearch(sc)
	if err != nil {
		return nil, fmt.Errorf("config %s: %v", g.opt.ConfigPath, err)
	}
	var bad []string
	for _, k := range []string{"concurrency", "request-rate", "benchmark-duration", "fixed-schedule"} {
		if _, set := sc[k]; set {
			bad = append(bad, fmt.Sprintf("%s: the search sets each probe's load (leave it out, and bound the search with search: {concurrency-min, concurrency-max} or {search-start, search-max})", k))
		}
	}
	args, err := config.ScenarioArgs(m)
	if err != nil {
		return nil, fmt.Errorf("%s: search: %v", at, err)
	}
	fs := pflag.NewFlagSet("search", pflag.ContinueOnError)
	sf := run.BindSearch(fs)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%s: search: %v (its keys are the search command's flags: %s)", at, config.ExplainFlagError(err), strings.Join(run.SearchFlagNames, ", "))
	}
	if fs.NArg() > 0 {
		bad = append(bad, fmt.Sprintf("search: unexpected %q", strings.Join(fs.Args(), " ")))
	}
	// The profile is checked as its first probe will run: at the search's
	// first load.
	first := make(map[string]any, len(sc)+1)
	for k, v := range sc {
		first[k] = v
	}
	if sf.By == "concurrency" || sf.Recipe != "" {
		first["concurrency"] = max(1, sf.ConcurrencyMin)
	} else {
		first["request-rate"] = sf.Search.Start
	}
	p, err := g.scenarioProfile(first, target, 1)
	if err != nil {
		return nil, err
	}
	_, rc := sc["request-count"]
	_, nr := sc["num-requests"]
	if !rc && !nr {
		p.RequestCount, p.RequestCountSet = searchPerProbe, true
	}
	p.ArtifactDir = filepath.Join(filepath.Dir(p.ArtifactDir), dir)
	param, o, more := sf.Asked(p).Plan()
	bad = append(bad, more...)
	jc := g.judgeConfig()
	st, err := jc.Parse()
	if err != nil {
		return nil, fmt.Errorf("%s: thresholds: %w", at, err)
	}
	// Each search's bounds hold at 1−α/2 each side, so that the ratio's
	// ends hold at 1−α: the gate's α.
	alpha := st.Options.Alpha
	if !fs.Changed("confidence-level") {
		o.Confidence = 1 - alpha
	} else if o.Confidence < 1-alpha-1e-9 {
		bad = append(bad, fmt.Sprintf("search: confidence-level %g: the gate compares capacities at α %g, which needs each search's interval at %g or more", o.Confidence, alpha, 1-alpha))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s: %s", at, strings.Join(bad, "; "))
	}
	unit := "requests/s"
	if param == config.SweepConcurrency {
		unit = "streams"
	}
	return &searchPlan{p: p, unit: unit, first: first, key: run.SearchStoreKey(*p, param, sf.SLO, o),
		so: run.SearchOptions{Dir: p.ArtifactDir, Param: param, Recipe: sf.Recipe, SLO: sf.SLO, Search: o}}, nil
}

// objective is the search's objectives in words: "TTFT ≤ 500 ms for 95%
// of requests".
func (sp *searchPlan) objective() string {
	return fmt.Sprintf("%s for %.3g%% of requests", sp.so.SLO, 100*sp.so.Search.Target)
}

// turns lets two searches probe one at a time, in turn (A B A B …), so
// that a drift within the job falls on both; a side that has finished
// leaves the other to go on alone.
type turns struct {
	mu   sync.Mutex
	cond *sync.Cond
	next int
	done [2]bool
}

func newTurns() *turns { t := &turns{}; t.cond = sync.NewCond(&t.mu); return t }

// take waits for side's turn and returns its release.
func (t *turns) take(side int) func() {
	t.mu.Lock()
	for t.next != side && !t.done[1-side] {
		t.cond.Wait()
	}
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		t.next = 1 - side
		t.cond.Broadcast()
		t.mu.Unlock()
	}
}

func (t *turns) finish(side int) {
	t.mu.Lock()
	t.done[side] = true
	t.cond.Broadcast()
	t.mu.Unlock()
}

// searched is one side's search.
type searched struct {
	doc *run.SearchDoc
	res capacity.Result
	err error
}

// runSearchScenario runs a search scenario's search on the candidate
// server (and on the baseline server, in turn, paired) and compares the
// capacities (with c; none in refresh mode).
func (g *gate) runSearchScenario(ctx context.Context, sc map[string]any, target, baseTarget string, c *comparer) (Scenario, error) {
	gs := Scenario{Name: config.ScenarioName(sc), Paired: baseTarget != ""}
	plans := []*searchPlan{nil, nil} // candidate, baseline server
	for i, t := range []struct{ url, dir string }{{target, "search"}, {baseTarget, "baseline-search"}} {
		if t.url == "" {
			continue
		}
		sp, err := g.searchPlan(sc, t.url, t.dir)
		if err != nil {
			return gs, err
		}
		plans[i] = sp
	}
	sp := plans[0]
	out := make([]searched, 2)
	tn := newTurns()
	var wg sync.WaitGroup
	for i, p := range plans {
		if p == nil {
			continue
		}
		arm := map[int]string{0: "", 1: " (baseline server)"}[i]
		so := p.so
		so.PayloadNonce = g.payloadSeed(gs.Name, 0, armSearch, i) // each arm's probes their own prompts, this job's
		so.Run = run.Options{Cmdline: "aiperf-action gate (scenario " + gs.Name + ", search)", Stderr: g.opt.Stderr, Job: g.job, Environment: g.fp}
		probes := 0
		so.Search.OnProbe = func(pb capacity.Probe, e capacity.Estimate) {
			probes++
			g.logf("aiperf-action gate: scenario %s%s: probe %d at %.4g %s (run %d): %.1f%% of %d requests good; %s", gs.Name, arm, probes, pb.Load, p.unit, pb.Replicate+1, 100*pb.Attainment(), pb.N, e)
		}
		if gs.Paired {
			side := i
			so.Take = func() func() { return tn.take(side) }
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tn.finish(i)
			doc, res, err := run.Search(ctx, *p.p, so)
			out[i] = searched{doc, res, err}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return gs, errors.New("interrupted")
	}
	if gs.Paired {
		gs.BaselineSource = "the baseline server's search, probe by probe in turn with this one's in this job"
	}
	gs.Capacity = &Capacity{Objective: sp.objective(), Unit: sp.unit}
	for i, s := range out {
		if plans[i] == nil {
			continue
		}
		arm := map[int]string{0: "server", 1: "baseline server"}[i]
		if s.doc == nil || s.err != nil {
			gs.Broken = fmt.Sprintf("the search on the %s stopped: %v", arm, s.err)
			return gs, nil
		}
		if why := noneSucceeded(s.doc, plans[i].so.Dir); why != "" {
			gs.Broken = fmt.Sprintf("the search on the %s: %s", arm, why)
			return gs, nil
		}
		e := s.doc.Estimate
		if i == 0 {
			gs.Capacity.Candidate, gs.Capacity.CandidateProbes, gs.Capacity.CandidateStopped = e, len(s.doc.Probes), s.doc.Stopped
		} else {
			gs.Capacity.Baseline, gs.Capacity.BaselineProbes, gs.Capacity.BaselineStopped = &e, len(s.doc.Probes), s.doc.Stopped
		}
		g.logf("aiperf-action gate: scenario %s on the %s: %s (%s), stopped on %s after %d probes", gs.Name, arm, e, sp.unit, s.doc.Stopped, len(s.doc.Probes))
	}
	b, err := json.MarshalIndent(out[0].doc, "", "  ")
	if err != nil {
		return gs, err
	}
	gs.candidateJSON, gs.storeHash = [][]byte{append(b, '\n')}, sp.key
	if c == nil {
		return gs, nil
	}
	jobNoise := 0.0
	if !gs.Paired {
		hist, source, err := g.storedSearches(ctx, c, &gs)
		if err != nil || len(hist) == 0 {
			return gs, err
		}
		base := hist[len(hist)-1]
		gs.Capacity.Baseline, gs.BaselineSource = &base.Estimate, source
		gs.Capacity.BaselineProbes, gs.Capacity.BaselineStopped = len(base.Probes), base.Stopped
		var es []capacity.Estimate
		for _, d := range hist {
			es = append(es, d.Estimate)
		}
		jobNoise = capacity.JobNoise(es, c.st.Options.JobNoiseFloor, c.st.Options.JobNoisePrior)
	}
	// The thresholds' max-regression (checked with them before any run).
	tol, err := percent.Parse("max-regression", g.judgeConfig().MaxRegression)
	if err != nil {
		return gs, err
	}
	r, err := capacity.Comparison(*gs.Capacity.Baseline, gs.Capacity.Candidate, capacity.CompareOptions{Alpha: c.st.Options.Alpha, Tolerance: tol, JobNoise: jobNoise})
	if err != nil {
		return gs, fmt.Errorf("scenario %q: %w", gs.Name, err)
	}
	gs.Compare = &judge.Report{Comparison: &compare.Comparison{Results: []compare.Result{r}, Verdict: r.Verdict}, ProfileHash: sp.key, Units: []string{sp.unit}}
	return gs, nil
}

// noneSucceeded says why a search is no measurement: no request of any
// probe succeeded (a wrong model or endpoint, a server down), so its
// "capacity" is the server's refusal. "" when some did.
func noneSucceeded(doc *run.SearchDoc, dir string) string {
	kinds := map[string]int{}
	for _, pb := range doc.Probes {
		r, err := result.Read(filepath.Join(dir, pb.Dir))
		if err != nil {
			return ""
		}
		if r.Counts.OK > 0 {
			return ""
		}
		for k, n := range r.Counts.ErrorsByKind {
			kinds[k] += n
		}
	}
	if len(doc.Probes) == 0 {
		return "no probe was made"
	}
	return fmt.Sprintf("no request of its %d probes succeeded (errors by kind: %v)", len(doc.Probes), kinds)
}

// storedSearches reads the scenario's stored searches on this testbed:
// the newest as of the merge-base last, with as many before it as the
// baseline history keeps (for the job-to-job noise). None: no baseline
// yet, or a profile changed (said in sc.ProfileChanged).
func (g *gate) storedSearches(ctx context.Context, c *comparer, sc *Scenario) ([]run.SearchDoc, string, error) {
	key := g.key(sc.storeHash)
	es, err := c.store.List(ctx, sc.Name, key)
	if err != nil {
		return nil, "", fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	if len(es) == 0 {
		if why := g.otherTestbeds(ctx, c, sc.Name, sc.storeHash); why != "" {
			sc.ProfileChanged, sc.OtherTestbeds = why, true
		} else if others, err := c.store.Profiles(ctx, sc.Name); err == nil && len(others) > 0 {
			sc.ProfileChanged = fmt.Sprintf("%s has searches of %s only for other profiles or objectives (%s): this search's profile, objectives or bounds changed, so it is not compared; the default branch's next refresh stores its baseline.", c.store, sc.Name, strings.Join(others, ", "))
		}
		return nil, "", nil
	}
	sel, source := baseline.Select(es, c.mergeBase, 1)
	upto := len(es)
	for i, e := range es {
		if e.Name == sel[len(sel)-1].Name {
			upto = i + 1
		}
	}
	from := max(0, upto-max(1, g.cfg.Baseline.Retain()))
	var docs []run.SearchDoc
	for _, e := range es[from:upto] {
		b, err := e.Load(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("scenario %q: read baseline %s: %w", sc.Name, e.Name, err)
		}
		var d run.SearchDoc
		if err := json.Unmarshal(b, &d); err != nil || d.Schema != "aiperf-action/search/v1" || len(d.Estimate.Points) == 0 {
			return nil, "", fmt.Errorf("scenario %q: baseline %s in %s is not a search this gate stored (%v)", sc.Name, e.Name, c.store, err)
		}
		docs = append(docs, d)
		sc.BaselineCommits = append(sc.BaselineCommits, e.Commit)
	}
	source = strings.Replace(source, "baseline runs", "baseline search", 1)
	return docs, source + " on the default branch", nil
}
