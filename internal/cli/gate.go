package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/baseline"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/server"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// GateOptions inject the outside world into the gate.
type GateOptions struct {
	Getenv     func(string) string
	HTTPClient *http.Client // for the GitHub API (nil: default)
	Stdout     io.Writer
	Stderr     io.Writer
}

// gateInputs are the action inputs, also accepted as flags (a flag wins).
var gateInputs = []struct{ name, def, usage string }{
	{"config", ".github/aiperf.yml", "gate config file"},
	{"url", "", "use a running server at this URL instead of the config's server"},
	{"model", "", "model name (overrides the config)"},
	{"server-command", "", "command that starts the server (overrides the config)"},
	{"server-ready-url", "", "URL polled until the server answers 2xx"},
	{"server-ready-timeout", "", "how long to wait for readiness, e.g. 10m"},
	{"scenarios", "", "comma-separated scenario names to run (default all)"},
	{"repeats", "", "runs per scenario"},
	{"baseline-store", "", "folder | branch"},
	{"baseline-path", "", "baseline folder, or the folder inside the baseline branch"},
	{"baseline-branch", "", "baseline branch for the branch store"},
	{"max-regression", "", "default tolerance, e.g. 5%"},
	{"mode", "gate", "gate | run | comment | refresh"},
	{"comment", "always", "always | on-change | never"},
	{"fail-on-inconclusive", "", "true: an inconclusive verdict fails the gate"},
	{"results-dir", "aiperf-results", "where runs and the report are written"},
	{"commit", "", "commit the runs are recorded at (default GITHUB_SHA)"},
}

func runGate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return Gate(ctx, args, GateOptions{Getenv: os.Getenv, Stdout: stdout, Stderr: stderr})
}

// gate is one gate invocation's state.
type gate struct {
	opt   GateOptions
	env   *action.Env
	flags *pflag.FlagSet
	vals  map[string]*string
	cfg   *config.Gate
	out   string // results dir
	gh    *github.Client
}

func (g *gate) input(name string) string {
	if g.flags.Changed(name) {
		return strings.TrimSpace(*g.vals[name])
	}
	if v := g.env.Input(name); v != "" {
		return v
	}
	return *g.vals[name]
}

func (g *gate) logf(format string, a ...any) { fmt.Fprintf(g.opt.Stdout, format+"\n", a...) }

// Gate runs the gate: bring the server up, profile each scenario R times,
// compare with the baselines, report, comment, and refresh the baselines
// on a push to the default branch. Exit 0 pass (or inconclusive, or no
// baseline), 1 regression, 2 error.
func Gate(ctx context.Context, args []string, opt GateOptions) int {
	g := &gate{opt: opt, vals: map[string]*string{}}
	g.flags = pflag.NewFlagSet("gate", pflag.ContinueOnError)
	for _, in := range gateInputs {
		g.vals[in.name] = g.flags.String(in.name, in.def, in.usage+" (action input "+in.name+")")
	}
	if code, ok := parseFlags(g.flags, args, opt.Stderr); !ok {
		return code
	}
	env, err := action.New(opt.Getenv, opt.Stdout)
	if err != nil {
		return g.fail(err)
	}
	g.env = env
	code, err := g.run(ctx)
	if err != nil {
		return g.fail(err)
	}
	return code
}

func (g *gate) fail(err error) int {
	if g.env != nil && g.env.InActions() {
		g.env.A.Errorf("aiperf-action: %s", strings.ReplaceAll(err.Error(), "\n", " | "))
	}
	fmt.Fprintf(g.opt.Stderr, "aiperf-action gate: %v\n", err)
	return ExitError
}

func (g *gate) run(ctx context.Context) (int, error) {
	mode := g.input("mode")
	switch mode {
	case "gate", "run", "comment", "refresh":
	default:
		return 0, fmt.Errorf("mode %q: want gate, run, comment or refresh", mode)
	}
	switch c := g.input("comment"); c {
	case "always", "on-change", "never":
	default:
		return 0, fmt.Errorf("comment %q: want always, on-change or never", c)
	}
	g.out = g.input("results-dir")
	if mode == "comment" {
		return g.commentFromResults(ctx)
	}
	if g.env.InActions() && g.env.IsPR() && mode == "refresh" {
		return 0, errors.New("mode refresh runs only on a push to the default branch, never on a pull_request")
	}
	if err := g.loadConfig(); err != nil {
		return 0, err
	}
	store, err := g.store()
	if err != nil {
		return 0, err
	}
	target, stop, serverDesc, err := g.bringUp(ctx)
	if err != nil {
		return 0, err
	}
	scenarios, runErr := g.runScenarios(ctx, target)
	stop()
	if runErr != nil {
		return 0, runErr
	}

	refresh := mode == "refresh" || (mode == "gate" && g.env.IsPushToDefault())
	rep := &report.GateReport{Meta: g.meta(serverDesc, store)}
	if mode != "refresh" {
		if err := g.compareAll(ctx, store, scenarios, rep); err != nil {
			return 0, err
		}
	} else {
		rep.Scenarios = scenarios
	}
	rep.Verdict = report.GateVerdict(rep.Scenarios)
	if refresh {
		if g.env.IsPR() {
			return 0, errors.New("refusing to write baselines on a pull_request event")
		}
		if err := g.refresh(ctx, store, rep.Scenarios); err != nil {
			return 0, err
		}
	}
	return g.finish(ctx, mode, rep)
}

func (g *gate) loadConfig() error {
	cfg, err := config.LoadGate(g.input("config"))
	if err != nil {
		return err
	}
	var errs []error
	if v := g.input("url"); v != "" {
		cfg.URL, cfg.Server = v, config.Server{}
	}
	if v := g.input("server-command"); v != "" {
		cfg.URL = ""
		cfg.Server = config.Server{Command: v, ReadyURL: cfg.Server.ReadyURL, ReadyTimeout: cfg.Server.ReadyTimeout}
	}
	if v := g.input("server-ready-url"); v != "" {
		cfg.Server.ReadyURL = v
	}
	if v := g.input("server-ready-timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("server-ready-timeout %q: %v", v, err))
		}
		cfg.Server.ReadyTimeout = d
	}
	if cfg.Server.ReadyTimeout <= 0 {
		cfg.Server.ReadyTimeout = config.DefaultGate.Server.ReadyTimeout
	}
	if v := g.input("model"); v != "" {
		cfg.Model = v
	}
	if v := g.input("repeats"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("repeats %q: not a number", v))
		}
		cfg.Repeats = n
	}
	for name, dst := range map[string]*string{"baseline-store": &cfg.Baseline.Store, "baseline-path": &cfg.Baseline.Path,
		"baseline-branch": &cfg.Baseline.Branch, "max-regression": &cfg.Thresholds.MaxRegression} {
		if v := g.input(name); v != "" {
			*dst = v
		}
	}
	if v := g.input("fail-on-inconclusive"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("fail-on-inconclusive %q: want true or false", v))
		}
		cfg.Thresholds.FailOnInconclusive = b
	}
	if f := g.input("scenarios"); f != "" {
		want := map[string]bool{}
		for _, n := range strings.Split(f, ",") {
			want[strings.TrimSpace(n)] = true
		}
		var kept []map[string]any
		for _, s := range cfg.Scenarios {
			if want[config.ScenarioName(s)] {
				kept = append(kept, s)
				delete(want, config.ScenarioName(s))
			}
		}
		for n := range want {
			errs = append(errs, fmt.Errorf("scenarios: %q is not in %s", n, g.input("config")))
		}
		cfg.Scenarios = kept
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("config %s:\n  %s", g.input("config"), strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	g.cfg = cfg
	return nil
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

// bringUp starts the target and returns its URL and a teardown.
func (g *gate) bringUp(ctx context.Context) (string, func(), string, error) {
	s := g.cfg.Server
	switch {
	case g.cfg.URL != "":
		return g.cfg.URL, func() {}, g.cfg.URL, nil
	case s.Simulator:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, "", fmt.Errorf("start the simulator: %w", err)
		}
		cfg := sim.DefaultConfig
		cfg.TTFT, cfg.ITL = s.TTFT, s.ITL
		sctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- serveUntil(sctx, ln, sim.New(cfg)) }()
		desc := fmt.Sprintf("built-in simulator (exact mode, TTFT %s, ITL %s)", s.TTFT, s.ITL)
		g.logf("aiperf-action gate: %s on http://%s", desc, ln.Addr())
		return "http://" + ln.Addr().String(), func() { cancel(); <-done }, desc, nil
	}
	if err := os.MkdirAll(g.out, 0o755); err != nil {
		return "", nil, "", err
	}
	logPath := filepath.Join(g.out, "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", nil, "", err
	}
	g.logf("aiperf-action gate: starting the server; waiting up to %s for %s", s.ReadyTimeout, s.ReadyURL)
	srv, err := server.Start(ctx, server.Config{Command: s.Command, ReadyURL: s.ReadyURL, Timeout: s.ReadyTimeout, Log: logf})
	if err != nil {
		logf.Close()
		g.dumpLog(logPath)
		return "", nil, "", err
	}
	target := s.URL
	if target == "" {
		u, _ := url.Parse(s.ReadyURL)
		target = u.Scheme + "://" + u.Host
	}
	stop := func() {
		srv.Stop()
		logf.Close()
		g.dumpLog(logPath)
	}
	return target, stop, s.Command, nil
}

// dumpLog prints the server's log in a collapsed group.
func (g *gate) dumpLog(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if g.env.InActions() {
		g.env.A.Group("server log")
		defer g.env.A.EndGroup()
	}
	g.opt.Stdout.Write(b)
}

// runScenarios profiles every scenario Repeats times.
func (g *gate) runScenarios(ctx context.Context, target string) ([]report.GateScenario, error) {
	var out []report.GateScenario
	for _, sc := range g.cfg.Scenarios {
		name := config.ScenarioName(sc)
		args, err := config.ScenarioArgs(sc)
		if err != nil {
			return nil, err
		}
		gs := report.GateScenario{Name: name}
		for i := 1; i <= g.cfg.Repeats; i++ {
			fs := pflag.NewFlagSet("scenario "+name, pflag.ContinueOnError)
			p := config.DefaultProfile
			p.Model, p.URL, p.Seed = g.cfg.Model, target, g.cfg.Seed
			profileFlags(fs, &p)
			fs.SetOutput(io.Discard)
			if err := fs.Parse(args); err != nil {
				return nil, fmt.Errorf("config %s: scenario %q: %v", g.input("config"), name, err)
			}
			p.SeedSet = true
			p.ConcurrencySet, p.RequestCountSet = fs.Changed("concurrency"), fs.Changed("request-count")
			p.ArtifactDir = filepath.Join(g.out, safeName(name), fmt.Sprintf("run-%d", i))
			if err := p.Validate(); err != nil {
				return nil, fmt.Errorf("config %s: scenario %q:\n  %s", g.input("config"), name, strings.ReplaceAll(err.Error(), "\n", "\n  "))
			}
			g.logf("aiperf-action gate: scenario %s, run %d of %d", name, i, g.cfg.Repeats)
			code := profile(ctx, &p, "aiperf-action gate (scenario "+name+")", g.opt.Stdout, g.opt.Stderr)
			run, err := result.Read(p.ArtifactDir)
			if err != nil {
				return nil, fmt.Errorf("scenario %q run %d failed before writing results (exit %d): %v", name, i, code, err)
			}
			if ctx.Err() != nil {
				return nil, errors.New("interrupted")
			}
			gs.Candidate = append(gs.Candidate, run)
		}
		out = append(out, gs)
	}
	return out, nil
}

func safeName(s string) string { return unsafeName.ReplaceAllString(s, "_") }

func (g *gate) compareSettings() (*compareSettings, error) {
	t := g.cfg.Thresholds
	f := compareFlags{MaxRegression: t.MaxRegression, NoiseFloor: t.NoiseFloor, MaxErrorRate: t.MaxErrorRate, Alpha: t.Alpha,
		Metrics: t.Metrics, Seed: 1, Resamples: 200, Estimator: "hd", Format: "text"}
	if f.Alpha == 0 {
		f.Alpha = 0.05
	}
	st, err := f.parse()
	if err != nil {
		return nil, fmt.Errorf("config %s: thresholds: %w", g.input("config"), err)
	}
	return st, nil
}

// compareAll loads each scenario's baseline and compares.
func (g *gate) compareAll(ctx context.Context, store baseline.Store, scenarios []report.GateScenario, rep *report.GateReport) error {
	st, err := g.compareSettings()
	if err != nil {
		return err
	}
	mergeBase := ""
	if g.env.IsPR() && g.env.Token != "" {
		if c, err := g.github(); err == nil {
			owner, repo := g.env.Repo()
			mb, err := action.MergeBase(ctx, c, owner, repo, g.env.BaseSHA(), g.env.HeadSHA())
			if err != nil {
				rep.Notes = append(rep.Notes, "could not find the merge-base: "+err.Error())
			}
			mergeBase = mb
		}
	}
	for _, sc := range scenarios {
		hash := sc.Candidate[0].ProfileHash
		es, err := store.List(ctx, sc.Name, hash)
		if err != nil {
			return fmt.Errorf("scenario %q: %w", sc.Name, err)
		}
		sel, source := baseline.Select(es, mergeBase, g.cfg.Baseline.Keep)
		var base, cand []result.Loaded
		for _, e := range sel {
			b, err := e.Load(ctx)
			if err != nil {
				return fmt.Errorf("scenario %q: read baseline %s: %w", sc.Name, e.Name, err)
			}
			r, err := result.Parse(b, store.String()+": "+e.Name)
			if err != nil {
				return err
			}
			base = append(base, result.Loaded{Path: e.Name, Run: r})
			sc.Baseline = append(sc.Baseline, r)
		}
		for i, r := range sc.Candidate {
			cand = append(cand, result.Loaded{Path: fmt.Sprintf("run-%d", i+1), Run: r})
		}
		if len(base) > 0 {
			cr, err := compareRuns(st, base, cand)
			if err != nil {
				return fmt.Errorf("scenario %q: %w", sc.Name, err)
			}
			sc.Compare, sc.BaselineSource = cr, source+" in "+store.String()
			if g.cfg.Thresholds.FailOnInconclusive && cr.Verdict == compare.Inconclusive {
				cr.Comparison.Warnings = append(cr.Comparison.Warnings, "fail-on-inconclusive is set")
			}
		}
		rep.Scenarios = append(rep.Scenarios, sc)
	}
	return nil
}

func (g *gate) commit() string {
	if c := g.input("commit"); c != "" {
		return c
	}
	if g.env.Ctx.SHA != "" {
		return g.env.Ctx.SHA
	}
	return "local"
}

// refresh appends this run's results to the baselines.
func (g *gate) refresh(ctx context.Context, store baseline.Store, scenarios []report.GateScenario) error {
	for _, sc := range scenarios {
		var blobs [][]byte
		for i := range sc.Candidate {
			b, err := os.ReadFile(filepath.Join(g.out, safeName(sc.Name), fmt.Sprintf("run-%d", i+1), result.RunFile))
			if err != nil {
				return err
			}
			blobs = append(blobs, b)
		}
		if err := store.Append(ctx, sc.Name, sc.Candidate[0].ProfileHash, g.commit(), blobs, g.cfg.Baseline.Keep); err != nil {
			return fmt.Errorf("refresh baselines of %q: %w", sc.Name, err)
		}
		g.logf("aiperf-action gate: recorded %d run(s) of %s in the baselines (%s, keeping %d)", len(blobs), sc.Name, store, g.cfg.Baseline.Keep)
	}
	return nil
}

func (g *gate) meta(serverDesc string, store baseline.Store) report.GateMeta {
	runner := runtime.GOOS + "/" + runtime.GOARCH + fmt.Sprintf(", %d CPUs", runtime.NumCPU())
	if n := g.opt.Getenv("RUNNER_NAME"); n != "" {
		runner = n + " (" + runner + ")"
	}
	return report.GateMeta{Model: g.cfg.Model, Server: serverDesc, Runner: runner, Commit: g.commit(),
		Event: g.env.Ctx.EventName, Store: store.String(), Seed: g.cfg.Seed, Repeats: g.cfg.Repeats}
}
