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

	"github.com/google/go-github/v66/github"
	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/baseline"
	"github.com/aiperf-action/aiperf-action/internal/config"
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
