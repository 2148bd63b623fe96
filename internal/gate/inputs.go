package gate

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/kube"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/spf13/pflag"
)

// Input is one action input (action.yml), also accepted as a flag.
type Input struct{ Name, Default, Usage string }

// Inputs are every action input the gate reads, besides the token
// (action.TokenInput, read by action.New). action.yml declares exactly
// these; a test holds the two to each other.
var Inputs = []Input{
	{"config", ".github/aiperf.yml", "gate config file, or the config itself (YAML, several lines)"},
	{"url", "", "use a running server at this URL instead of the config's server"},
	{"model", "", "model name (overrides the config)"},
	{"server-command", "", "command that starts the server (overrides the config)"},
	{"server-ready-url", "", "URL polled until the server answers 2xx"},
	{"server-ready-timeout", "", "how long to wait for readiness, e.g. 10m"},
	{"baseline-server", "", "paired A/B: the baseline build of the server, a URL it answers at, a command that starts it, or simulator"},
	{"baseline-server-ready-url", "", "paired A/B: URL polled until the baseline server's command has it answering 2xx"},
	{"scenarios", "", "comma-separated scenario names to run (default all)"},
	{"repeats", "", "runs per scenario"},
	{"max-repeats", "", "adaptive (on by default, up to 3 x repeats): more runs, up to this many, while a scenario is inconclusive; 0 turns it off"},
	{"time-budget", "", "adaptive: at most this long per scenario, e.g. 10m (default 15m)"},
	{"baseline-store", "", "folder | branch"},
	{"baseline-path", "", "baseline folder, or the folder inside the baseline branch"},
	{"baseline-branch", "", "baseline branch for the branch store"},
	{"max-regression", "", "default tolerance, e.g. 5%"},
	{"cache-reset", "", "vllm | sglang | llama.cpp: clear the server's prefix cache before each measured run"},
	{"mode", "gate", "gate | run | comment | refresh"},
	{"comment", "always", "always | on-change | never"},
	{"comment-key", "", "keeps one sticky comment per key on a PR, after the workflow and job (action.yml defaults it to the job's matrix values)"},
	{"fail-on-inconclusive", "", "true: an inconclusive verdict fails the gate"},
	{"advisory", "false", "true: report and comment, but never fail the step on a regression"},
	{"accept-label", "perf-regression-accepted", "a pull request with this label has its regressions accepted: reported, not failed"},
	{"check-run", "true", "true: also report the verdict as a check run (needs checks: write)"},
	{"results-dir", "aiperf-results", "where runs and the report are written"},
	{"commit", "", "commit the runs are recorded at (default GITHUB_SHA)"},
}

// Options are one gate invocation's settings that are not in the config,
// and the outside world.
type Options struct {
	Mode        string // gate | run | comment | refresh
	Comment     string // always | on-change | never
	ResultsDir  string
	Commit      string       // the commit runs are recorded at; default GITHUB_SHA, else "local"
	ConfigPath  string       // named in errors
	ConfigText  string       // the config itself, given inline in the config input (a YAML block)
	HTTPClient  *http.Client // for the GitHub API (nil: default)
	Stdout      io.Writer
	Stderr      io.Writer
	Render      Renderer
	Advisory    bool   // never fail on a regression
	AcceptLabel string // a PR label that accepts its regressions
	CheckRun    bool   // report a check run too
	CommentKey  string // the sticky comment's key (action.Env.CommentKey)
	Marker      string // and its marker (action.MarkerFor)
	// Kube runs workers.kubernetes's runs (kuberun.Runner, which the
	// command wires in; nil: such a config is refused when run).
	Kube kube.Runner
	// PayloadNonce, when not 0, is the job's nonce in place of a random
	// draw (tests that rebuild a job's prompts).
	PayloadNonce uint64

	badBools []string // inputs that wanted true or false
}

// A Renderer draws what the gate shows; report.Gate is the one the
// command line passes (report renders the gate's types, so the gate cannot
// import it).
type Renderer interface {
	Run(w io.Writer, r *run.Result)         // a finished profile run, for the log
	Markdown(rep *Report, full bool) string // report.md and the job summary; full false leaves out details and charts
	Comment(rep *Report, limit int) string  // the PR comment, cut to fit limit
	Failure(f *Failure, limit int) string   // the PR comment of a gate that could not run
	// HTML is report.html: the report with its charts, the candidate runs
	// read back from the results folder.
	HTML(rep *Report, resultsDir string) ([]byte, error)
	// PNGs are a scenario's charts for the comment: the candidate's
	// distributions over the baseline's runs.
	PNGs(s *Scenario) ([]ChartPNG, error)
}

// defaults fills what was left out: no output.
func (o *Options) defaults() {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
}

// BindInputs binds every input as a flag of fs (a true/false input, and
// fail-on-inconclusive, alone means true), and returns what reads one: a
// flag's value, and whether it was given (it then wins over the action's
// input).
func BindInputs(fs *pflag.FlagSet) func(name string) (string, bool) {
	vals := map[string]*string{}
	for _, in := range Inputs {
		vals[in.Name] = fs.String(in.Name, in.Default, in.Usage+" (action input "+in.Name+")")
		if in.Default == "true" || in.Default == "false" || in.Name == "fail-on-inconclusive" {
			fs.Lookup(in.Name).NoOptDefVal = "true" // a switch, as compare's: --fail-on-inconclusive alone is true
		}
	}
	return func(name string) (string, bool) { return *vals[name], fs.Changed(name) }
}

// FromInputs reads Options from input (a flag, else the action input, else
// its default), before any config is read.
func FromInputs(input func(string) string) Options {
	o := Options{Mode: input("mode"), Comment: input("comment"), ResultsDir: input("results-dir"),
		Commit: input("commit"), ConfigPath: input("config"), AcceptLabel: input("accept-label")}
	if strings.Contains(o.ConfigPath, "\n") { // a YAML block: the config inline, in the workflow
		o.ConfigText, o.ConfigPath = o.ConfigPath, "(the config input)"
	}
	o.Advisory, o.badBools = boolInput(input, "advisory", o.badBools)
	o.CheckRun, o.badBools = boolInput(input, "check-run", o.badBools)
	return o
}

// boolInput reads a true/false input; a value that is neither is noted in
// bad, for Check to refuse.
func boolInput(input func(string) string, name string, bad []string) (bool, []string) {
	v := strings.TrimSpace(input(name))
	if v == "" {
		return false, bad
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, append(bad, fmt.Sprintf("%s %q: want true or false", name, v))
	}
	return b, bad
}

// Check refuses a mode or comment setting the gate does not know, and a
// refresh on a pull request.
func (o *Options) Check(env *action.Env) error {
	switch o.Mode {
	case "gate", "run", "comment", "refresh":
	default:
		return fmt.Errorf("mode %q: want gate, run, comment or refresh", o.Mode)
	}
	// A boolean, as people write one: true is always, false never.
	if b, err := strconv.ParseBool(o.Comment); err == nil {
		o.Comment = map[bool]string{true: "always", false: "never"}[b]
	}
	switch o.Comment {
	case "always", "on-change", "never":
	default:
		return fmt.Errorf("comment %q: want always, on-change or never (or true or false)", o.Comment)
	}
	if len(o.badBools) > 0 {
		return errors.New(strings.Join(o.badBools, "; "))
	}
	if env.InActions() && env.IsPR() && o.Mode == "refresh" {
		return errors.New("mode refresh runs only on a push to the default branch, never on a pull_request")
	}
	// A workflow_dispatch seed run from another branch would store that
	// branch's runs as the default branch's baselines.
	if d := env.DefaultBranch(); env.InActions() && o.Mode == "refresh" && d != "" && env.Ctx.Ref != "" && env.Ctx.Ref != "refs/heads/"+d {
		return fmt.Errorf("mode refresh stores the default branch's baselines: run it on %s, not on %s", d, env.Ctx.Ref)
	}
	return nil
}

// Configure reads the gate config at path, applies the inputs over it and
// checks it; every problem is listed at once, under the file's name.
func Configure(path string, input func(string) string) (*config.Gate, error) {
	cfg, err := config.LoadGate(path)
	if err != nil {
		return nil, err
	}
	return configure(cfg, path, input)
}

// ConfigureText is Configure for a config given inline, named name.
func ConfigureText(text, name string, input func(string) string) (*config.Gate, error) {
	cfg, err := config.ParseGate([]byte(text), name)
	if err != nil {
		return nil, err
	}
	return configure(cfg, name, input)
}

func configure(cfg *config.Gate, path string, input func(string) string) (*config.Gate, error) {
	errs := []error{cfg.Override(input), cfg.Validate()}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("config %s:\n  %s", path, strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	return cfg, nil
}
