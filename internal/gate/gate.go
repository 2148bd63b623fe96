// Package gate is the CI flow: bring the server up, profile each scenario
// R times, compare with the baselines (as of the PR's merge-base where
// there are some), report, comment, and refresh the baselines on a push to
// the default branch.
//
// Runs come back from internal/run in memory; the gate never reads its own
// runs back from disk. It touches GitHub Actions only through action.Env.
package gate

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/baseline"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
	"github.com/aiperf-action/aiperf-action/internal/testbed"
)

// gate is one invocation's state.
type gate struct {
	opt Options
	env *action.Env
	cfg *config.Gate
	gh  *github.Client
	job string // this invocation's job, recorded in every run it makes
	// nonce is this job's draw, under which its runs' prompts are their
	// own (payloadSeed): no earlier job sent them.
	nonce uint64
	most  int // the most runs the scenario being run may take, for the log
	// maxErr is the thresholds' max-error-rate, a fraction: a run with
	// more failures is no measurement (brokenRun).
	maxErr float64
	// fp is what the runs are measured on: its testbed keeps baselines
	// apart, and it is recorded in every run.json.
	fp *testbed.Environment
	// branch is the baseline branch store, where a pull request's charts
	// go for its comment; nil with another store.
	branch *baseline.Branch
}

// fingerprint detects the machine and the server at target (not the
// built-in simulator's: it is this binary), once, before any run.
func (g *gate) fingerprint(ctx context.Context, target string) {
	o := testbed.Options{Tool: run.Version, Testbed: testbed.Safe(g.cfg.Testbed), Getenv: g.env.Getenv}
	if !g.cfg.Server.Simulator || g.cfg.URL != "" {
		o.ServerURL = target
	}
	g.fp = testbed.Detect(ctx, o)
	gpus := "no GPU"
	if n := len(g.fp.GPUs); n > 0 {
		gpus = fmt.Sprintf("%d× %s, driver %s, CUDA %s", n, g.fp.GPUs[0].Name, g.fp.GPUs[0].Driver, cmp.Or(g.fp.CUDA, "unknown"))
	}
	g.logf("aiperf-action gate: testbed %s (%s/%s, %d CPUs %s; %s; server %s)", g.fp.Testbed, g.fp.OS, g.fp.Arch, g.fp.CPUs, g.fp.CPUModel, gpus, cmp.Or(g.fp.ServerVersion, "version unknown"))
}

// describe is a fingerprint in words, for the report.
func describe(e *testbed.Environment) string {
	s := fmt.Sprintf("%s/%s, %d CPUs", e.OS, e.Arch, e.CPUs)
	if e.CPUModel != "" {
		s += " (" + e.CPUModel + ")"
	}
	if n := len(e.GPUs); n > 0 {
		s += fmt.Sprintf("; %d× %s, driver %s", n, e.GPUs[0].Name, e.GPUs[0].Driver)
		if e.CUDA != "" {
			s += ", CUDA " + e.CUDA
		}
	}
	if e.ServerVersion != "" {
		s += "; server " + e.ServerVersion
	}
	if e.ServerImage != "" {
		s += "; image " + e.ServerImage
	}
	return s
}

// key is the store key of a scenario's runs on this testbed.
func (g *gate) key(hash string) string {
	if g.fp == nil {
		return hash
	}
	return baseline.Key(hash, g.fp.Testbed)
}

func (g *gate) logf(format string, a ...any) { fmt.Fprintf(g.opt.Stdout, format+"\n", a...) }

// Run runs the gate with a checked config (see Configure). It returns the
// exit code: ExitOK on a pass, an inconclusive verdict (unless the config
// fails on it) or no baseline; ExitRegression on a regression; an error
// for everything that kept the gate from an answer.
func Run(ctx context.Context, cfg *config.Gate, env *action.Env, opt Options) (int, error) {
	if opt.Render == nil {
		return 0, errors.New("gate: no renderer (Options.Render)")
	}
	opt.defaults()
	cfg.Baseline.DefaultStore(env.InActions())
	g := &gate{opt: opt, env: env, cfg: cfg, job: jobID(env), nonce: opt.PayloadNonce}
	if g.nonce == 0 {
		var b [8]byte
		crand.Read(b[:])
		g.nonce = binary.LittleEndian.Uint64(b[:]) | 1
	}
	if err := g.check(); err != nil {
		return 0, err
	}
	if g.relabeled() {
		if code, done, err := g.rejudge(ctx); done || err != nil {
			return code, err
		}
	}
	if b := cfg.Baseline; env.InActions() && b.Store == "folder" && !b.Committed && cfg.BaselineServer == nil &&
		(opt.Mode == "refresh" || (opt.Mode == "gate" && env.IsPushToDefault())) {
		return 0, fmt.Errorf("baseline store folder %s on CI: a refresh would write its runs into this runner's checkout, thrown away with it, and every later pull request would read no baseline and pass. "+
			"Use baseline-store: branch (kept on a branch through the API), or commit the folder in a later step and say so with baseline: {committed: true}", b.Path)
	}
	var store baseline.Store
	if cfg.BaselineServer == nil { // paired A/B neither reads nor writes the store
		s, err := g.store()
		if err != nil {
			return 0, err
		}
		store = s
		g.branch, _ = s.(*baseline.Branch)
	}
	target, stop, serverDesc, err := g.bringUp(ctx)
	if err != nil {
		return 0, err
	}
	g.fingerprint(ctx, target)
	baseTarget, stopBase := "", func() {}
	if cfg.BaselineServer != nil {
		bt, bstop, bdesc, err := g.bringUpBaseline(ctx)
		if err != nil {
			stop()
			return 0, err
		}
		baseTarget, stopBase = bt, bstop
		serverDesc = "candidate " + serverDesc + "; baseline " + bdesc + " (paired A/B)"
	}
	var cmp *comparer
	var notes []string
	if opt.Mode != "refresh" {
		if cmp, notes, err = g.comparer(ctx, store); err != nil {
			stop()
			stopBase()
			return 0, err
		}
	}
	scenarios, runErr := g.runScenarios(ctx, target, baseTarget, cmp)
	stop()
	stopBase()
	if runErr != nil {
		return 0, runErr
	}

	refresh := opt.Mode == "refresh" || (opt.Mode == "gate" && env.IsPushToDefault())
	if refresh && cfg.BaselineServer != nil {
		g.logf("aiperf-action gate: paired A/B: the stored baselines are neither read nor refreshed")
		refresh = false
	}
	rep := &Report{Meta: g.meta(serverDesc, store, cmp), Scenarios: scenarios, Notes: notes,
		AcceptLabel: opt.AcceptLabel, FailOnInconclusive: cfg.Thresholds.FailOnInconclusive}
	rep.Verdict = Fold(rep.Scenarios)
	if refresh {
		if env.IsPR() {
			return 0, errors.New("refusing to write baselines on a pull_request event")
		}
		if err := g.refresh(ctx, store, rep.Scenarios); err != nil {
			return 0, err
		}
	}
	return g.finish(ctx, rep)
}

func (g *gate) github() (*github.Client, error) {
	if g.gh != nil {
		return g.gh, nil
	}
	c, err := g.env.Client(g.opt.HTTPClient)
	if err != nil {
		return nil, err
	}
	g.gh = c
	return c, nil
}

func (g *gate) store() (baseline.Store, error) {
	b := g.cfg.Baseline
	if b.Store == "folder" {
		return &baseline.Folder{Root: b.Path}, nil
	}
	owner, repo := g.env.Repo()
	if owner == "" || repo == "" || g.env.Token == "" {
		return nil, errors.New("baseline-store branch needs GITHUB_REPOSITORY and a github-token")
	}
	c, err := g.github()
	if err != nil {
		return nil, err
	}
	return &baseline.Branch{Client: c, Owner: owner, Repo: repo, Name: b.Branch, Root: b.Path}, nil
}

// check finds the config's mistakes that would otherwise show only when
// the gate reached them: every scenario's flags and the thresholds, in
// every mode (a refresh that stored runs a later gate cannot compare would
// fail every PR after it), before any server starts.
func (g *gate) check() error {
	var errs []error
	for _, sc := range g.cfg.Scenarios {
		var p *config.Profile
		var err error
		if isSearch(sc) {
			var sp *searchPlan
			if sp, err = g.searchPlan(sc, "http://127.0.0.1:1", "search"); err == nil {
				p = sp.p
			}
		} else {
			p, err = g.scenarioProfile(sc, "http://127.0.0.1:1", 1)
		}
		if err == nil {
			// The plan too (an input file that is missing or malformed),
			// before any server starts.
			_, err = schedule.Build(p, p.Seed)
			if err != nil {
				err = fmt.Errorf("config %s: scenario %q: %w", g.opt.ConfigPath, config.ScenarioName(sc), err)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, sv := range []struct {
		key string
		s   *config.Server
	}{{"server", &g.cfg.Server}, {"baseline-server", g.cfg.BaselineServer}} {
		if sv.s != nil && sv.s.Mode == "engine" && sv.s.Preset != "" {
			if _, err := engine.PresetNamed(sv.s.Preset); err != nil {
				errs = append(errs, fmt.Errorf("config %s: %s.preset: %v", g.opt.ConfigPath, sv.key, err))
			}
		}
	}
	jc := g.judgeConfig()
	if st, err := jc.Parse(); err != nil {
		errs = append(errs, fmt.Errorf("config %s: thresholds: %w", g.opt.ConfigPath, err))
	} else {
		g.maxErr = st.MaxErrorRate
	}
	return errors.Join(errs...)
}

// scenarioProfile is scenario sc's profile for run i, against target.
func (g *gate) scenarioProfile(sc map[string]any, target string, i int) (*config.Profile, error) {
	name := config.ScenarioName(sc)
	args, err := config.ScenarioArgs(sc)
	if err != nil {
		return nil, err
	}
	fs := pflag.NewFlagSet("scenario "+name, pflag.ContinueOnError)
	p := config.DefaultProfile
	p.Model, p.URL, p.Seed = g.cfg.Model, target, g.cfg.Seed
	p.Bind(fs)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("config %s: scenario %q: %v", g.opt.ConfigPath, name, config.ExplainFlagError(err))
	}
	p.SeedSet, p.Repeat = true, i // each repeat its own prompts (and runOne, this job's: payloadSeed)
	p.NoteSet(fs)
	if g.cfg.CacheReset == config.CacheResetLlama {
		p.ExtraInputs = append(p.ExtraInputs, "cache_prompt:false")
	}
	p.ArtifactDir = filepath.Join(g.opt.ResultsDir, run.SafeName(name), fmt.Sprintf("run-%d", i))
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("config %s: scenario %q:\n  %s", g.opt.ConfigPath, name, strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	return &p, nil
}

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

func (g *gate) commit() string {
	if g.opt.Commit != "" {
		return g.opt.Commit
	}
	if g.env.Ctx.SHA != "" {
		return g.env.Ctx.SHA
	}
	return "local"
}

func storeName(s baseline.Store) string {
	if s == nil {
		return "none (paired A/B)"
	}
	return s.String()
}

func (g *gate) meta(serverDesc string, store baseline.Store, cmp *comparer) Meta {
	runner := runtime.GOOS + "/" + runtime.GOARCH + fmt.Sprintf(", %d CPUs", runtime.NumCPU())
	if n := g.env.Getenv("RUNNER_NAME"); n != "" {
		runner = n + " (" + runner + ")"
	}
	m := Meta{Model: g.cfg.Model, Server: serverDesc, Runner: runner, Commit: g.commit(),
		Event: g.env.Ctx.EventName, Store: storeName(store), Seed: g.cfg.Seed, Repeats: g.cfg.Repeats}
	g.commits(&m, cmp)
	if g.fp != nil {
		m.Testbed, m.Environment = g.fp.Testbed, describe(g.fp)
	}
	return m
}

// commits fills what the comment's first lines name: the commit judged,
// what it was judged against, and the run's page.
func (g *gate) commits(m *Meta, cmp *comparer) {
	m.Head, m.RunURL = g.commit(), g.env.RunURL()
	if g.env.IsPR() && g.opt.Commit == "" {
		m.Head = g.env.HeadSHA() // not the merge commit GITHUB_SHA names
	}
	if g.env.IsPR() {
		m.Base = g.env.BaseSHA()
		if cmp != nil && cmp.mergeBase != "" {
			m.Base = cmp.mergeBase
		}
	}
	if m.Head == "local" {
		m.Head = ""
	}
}

// jobID names this gate invocation's job: the Actions run, attempt and job
// where there is one, else a random id.
func jobID(env *action.Env) string {
	if id := env.Getenv("GITHUB_RUN_ID"); id != "" {
		return "github " + id + "." + env.Getenv("GITHUB_RUN_ATTEMPT") + " " + env.Getenv("GITHUB_JOB")
	}
	var b [6]byte
	crand.Read(b[:])
	return "local " + hex.EncodeToString(b[:])
}
