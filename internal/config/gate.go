package config

import (
	"io"
	"regexp"

	"github.com/aiperf-action/aiperf-action/internal/judge"

	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Gate is the gate config (.github/aiperf.yml). Keys are kebab-case and
// match the action's inputs and the profile flags: a scenario is a mapping
// of profile flags.
type Gate struct {
	Server Server `yaml:"server"`
	// BaselineServer, when set, is the baseline build of the server: the
	// gate runs it and Server side by side in the same job, interleaved
	// (paired A/B), and compares the pairs instead of stored baselines.
	// The same forms as server, or url: for one already running.
	BaselineServer *Server          `yaml:"baseline-server"`
	URL            string           `yaml:"url"`   // an already running server (instead of server)
	Model          string           `yaml:"model"` // default model for every scenario
	Scenarios      []map[string]any `yaml:"scenarios"`
	Repeats        int              `yaml:"repeats"`
	// MaxRepeats > Repeats makes the gate adaptive: a scenario still
	// inconclusive after Repeats runs gets Repeats more at each look, up to
	// MaxRepeats (and TimeBudget per scenario, when set), with α spent over
	// the looks (compare.Looks). Unset (DefaultMaxRepeats): three times
	// Repeats; 0, or Repeats itself: not adaptive.
	MaxRepeats int           `yaml:"max-repeats"`
	TimeBudget time.Duration `yaml:"time-budget"`
	// Warmup sends a short unmeasured run before the job's first measured
	// one: a freshly started server pays for compilation, graph capture and
	// connection set-up on its first requests.
	Warmup bool `yaml:"warmup"`
	// CacheReset clears the server's prefix cache before each measured run:
	// vllm (POST /reset_prefix_cache), sglang (POST /flush_cache), or
	// llama.cpp (every request sends cache_prompt: false). Empty or none:
	// the repeats' own prompts are the only hygiene.
	CacheReset string         `yaml:"cache-reset"`
	Seed       uint64         `yaml:"seed"`
	Thresholds Thresholds     `yaml:"thresholds"`
	Baseline   BaselineConfig `yaml:"baseline"`
	// Testbed names the machine and stack the runs are measured on:
	// baselines are kept apart by it. Empty: derived from the machine (OS
	// and architecture, GPU model and count, driver; internal/testbed).
	Testbed string `yaml:"testbed"`
	// Workers, when set, runs every measured run's workers elsewhere:
	// kubernetes, as pods (aiperf-action kube run).
	Workers *GateWorkers `yaml:"workers"`
}

// GateWorkers says where the gate's runs are generated.
type GateWorkers struct {
	Kubernetes *KubeWorkers `yaml:"kubernetes"`
}

// KubeWorkers are a gate's runs on Kubernetes: each measured run is a
// controller pod and Workers worker pods of Image in Namespace, applied
// with the kubeconfig (or the runner's service account), its results
// taken back through the API server.
type KubeWorkers struct {
	Image      string        `yaml:"image"`
	Namespace  string        `yaml:"namespace"`
	Workers    int           `yaml:"workers"`
	Kubeconfig string        `yaml:"kubeconfig"`
	Context    string        `yaml:"context"`
	Timeout    time.Duration `yaml:"timeout"` // one run's, pods to results (default 30m)
}

// Server says how to bring the target up: the built-in simulator, or a command.
type Server struct {
	Simulator    bool          `yaml:"simulator"`
	TTFT         time.Duration `yaml:"ttft"` // simulator
	ITL          time.Duration `yaml:"itl"`  // simulator
	Command      string        `yaml:"command"`
	ReadyURL     string        `yaml:"ready-url"`
	ReadyTimeout time.Duration `yaml:"ready-timeout"`
	URL          string        `yaml:"url"` // where the started server answers (default: from ready-url)
	// The simulator's mode: exact (TTFT and ITL) or engine (the
	// continuous-batching model with Preset); SpeedJitter gives each job
	// its own seeded slowdown, shared by its runs.
	Mode        string  `yaml:"mode"`
	Preset      string  `yaml:"preset"`
	SpeedJitter float64 `yaml:"speed-jitter"`
	// Speed scales engine mode's every step (1.1: 10% slower): a build
	// of the server that is slower, for a gate's own tests and demos.
	Speed float64 `yaml:"speed"`
}

// UnmarshalYAML accepts `server: simulator` as well as a mapping.
func (s *Server) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value != "simulator" {
			return fmt.Errorf("line %d: server: want \"simulator\" or a mapping with command, ready-url, ready-timeout", n.Line)
		}
		s.Simulator = true
		return nil
	}
	type plain Server
	var p plain
	dec := n.Decode
	if err := dec(&p); err != nil {
		return err
	}
	*s = Server(p)
	return nil
}

// Thresholds are compare's settings under the config's thresholds key
// (judge.Config's yaml keys), over judge.Default, and whether an
// INCONCLUSIVE verdict blocks.
type Thresholds struct {
	judge.Config       `yaml:",inline"` // over judge.Default
	FailOnInconclusive bool             `yaml:"fail-on-inconclusive"`
}

// orDefaults gives a threshold left empty (or an alpha of 0) judge.Default's,
// as a key the file leaves out.
func (t *Thresholds) orDefaults() {
	d := judge.Default
	for _, f := range []struct {
		v   *string
		def string
	}{{&t.MaxRegression, d.MaxRegression}, {&t.MaxErrorRate, d.MaxErrorRate},
		{&t.NoiseFloor, d.NoiseFloor}, {&t.JobNoiseFloor, d.JobNoiseFloor}, {&t.JobNoisePrior, d.JobNoisePrior}} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	if t.Alpha == 0 {
		t.Alpha = d.Alpha
	}
}

// BaselineConfig says where baselines live.
type BaselineConfig struct {
	Store  string `yaml:"store"`  // folder | branch; unset: branch on GitHub Actions, folder elsewhere (DefaultStore)
	Path   string `yaml:"path"`   // folder store root, or the path inside the branch
	Branch string `yaml:"branch"` // branch store
	Keep   int    `yaml:"keep"`   // runs compared with, per scenario and profile (the newest, as of the merge-base)
	// History is how many runs are kept (at least Keep), per scenario and
	// profile on a testbed, for the job-to-job and run-to-run noise: those
	// are the testbed's, and many jobs measure them well, where the few a
	// comparison takes would need the floor's prior.
	History int `yaml:"history"`
	// Committed says a later step commits (or uploads) the folder store: a
	// refresh on CI is otherwise refused, its files thrown away with the
	// runner.
	Committed bool `yaml:"committed"`
	// AcrossUpgrades compares with runs stored under another profile hash
	// when their plan is this one's in substance (the same load, model,
	// endpoint and seed): an upgrade of the tool that hashes profiles
	// otherwise then keeps its baselines.
	AcrossUpgrades bool `yaml:"across-upgrades"`
}

// Retain is how many runs the store keeps per scenario and profile: keep,
// or history where that is more.
func (b *BaselineConfig) Retain() int { return max(b.Keep, b.History) }

// DefaultStore sets the baseline store where neither the config nor an
// input chose one: the branch store on GitHub Actions (a folder there is
// thrown away with the runner), a folder elsewhere.
func (b *BaselineConfig) DefaultStore(inActions bool) {
	if b.Store == "" {
		b.Store = map[bool]string{true: "branch", false: "folder"}[inActions]
	}
}

// DefaultMaxRepeats stands for max-repeats left unset: adaptive, up to
// three times repeats (MostRepeats).
const DefaultMaxRepeats = -1

// MostRepeats is the most runs a scenario may take: MaxRepeats, three
// times Repeats where it is unset, Repeats where it is 0 or less.
func (g *Gate) MostRepeats() int {
	if g.MaxRepeats == DefaultMaxRepeats {
		return 3 * g.Repeats
	}
	return max(g.Repeats, g.MaxRepeats)
}

// DefaultGate holds the defaults.
var DefaultGate = Gate{
	Repeats:    3,
	MaxRepeats: DefaultMaxRepeats,
	TimeBudget: 15 * time.Minute,
	Warmup:     true,
	Seed:       1,
	Baseline:   BaselineConfig{Path: "baselines", Branch: "aiperf-baselines", Keep: 20, History: 60},
	Server:     Server{ReadyTimeout: 10 * time.Minute, TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond},
	Thresholds: Thresholds{Config: judge.Default},
}

// Cache resets.
const (
	CacheResetVLLM   = "vllm"
	CacheResetSGLang = "sglang"
	CacheResetLlama  = "llama.cpp"
)

// LoadGate reads a gate config file over the defaults. Unknown keys are
// errors that name the file and line.
func LoadGate(path string) (*Gate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseGate(b, path)
}

// ParseGate is LoadGate for a file's bytes; path names it in errors.
func ParseGate(b []byte, path string) (*Gate, error) {
	g := DefaultGate
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&g); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("config %s: the file is empty: a gate config needs at least its scenarios", path)
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	g.Thresholds.orDefaults()
	return &g, nil
}

var scenarioName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// CheckScenarioName refuses a name that could not name a folder of the
// results and of the baselines: one that climbs out of them or shares one
// with another name.
func CheckScenarioName(n string) error {
	if !scenarioName.MatchString(n) || n == "." || n == ".." {
		return fmt.Errorf("name %q: use letters, digits, '.', '_' and '-' only (it names a folder), not '.' or '..'", n)
	}
	return nil
}

// Validate reports every problem with g.
func (g *Gate) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if len(g.Scenarios) == 0 {
		bad("scenarios: at least one is needed")
	}
	names := map[string]bool{}
	for i, s := range g.Scenarios {
		n, _ := s["name"].(string)
		if n == "" {
			bad("scenarios[%d]: needs a name", i)
		} else if err := CheckScenarioName(n); err != nil {
			bad("scenarios[%d]: %v", i, err)
		} else if names[n] {
			bad("scenarios: %q appears twice", n)
		}
		names[n] = true
	}
	if g.Repeats < 1 {
		bad("repeats %d: must be at least 1", g.Repeats)
	}
	if g.MaxRepeats != 0 && g.MaxRepeats != DefaultMaxRepeats && g.MaxRepeats < g.Repeats {
		bad("max-repeats %d: must be at least repeats (%d), or 0 for none", g.MaxRepeats, g.Repeats)
	}
	if g.TimeBudget < 0 {
		bad("time-budget %s: must not be negative", g.TimeBudget)
	}
	for _, sv := range []struct {
		key string
		s   *Server
	}{{"server", &g.Server}, {"baseline-server", g.BaselineServer}} {
		if sv.s == nil {
			continue
		}
		switch sv.s.Mode {
		case "", "exact":
		case "engine": // (its preset is the gate's to check: gate.check)
		default:
			bad("%s.mode %q: want exact or engine", sv.key, sv.s.Mode)
		}
		if (sv.s.Mode != "" || sv.s.Preset != "" || sv.s.SpeedJitter != 0 || sv.s.Speed != 0) && !sv.s.Simulator {
			bad("%s: mode, preset, speed and speed-jitter are the simulator's (simulator: true)", sv.key)
		}
		if sv.s.Speed != 0 && (sv.s.Mode != "engine" || sv.s.Speed < 0.1 || sv.s.Speed > 10) {
			bad("%s.speed %g: engine mode's (mode: engine), 0.1 to 10 (1.1: every step 10%% slower)", sv.key, sv.s.Speed)
		}
		if sv.s.SpeedJitter < 0 || sv.s.SpeedJitter > 1 {
			bad("%s.speed-jitter %g: want 0 to 1", sv.key, sv.s.SpeedJitter)
		}
	}
	modes := 0
	if g.Server.Simulator {
		modes++
	}
	if g.Server.Command != "" {
		modes++
		if g.Server.ReadyURL == "" {
			bad("server.ready-url is needed with server.command")
		}
	}
	if g.URL != "" {
		modes++
	}
	if modes != 1 {
		bad("give exactly one target: server: simulator, server.command, or url")
	}
	switch g.Baseline.Store {
	case "", "folder", "branch":
	default:
		bad("baseline.store %q: want folder or branch", g.Baseline.Store)
	}
	if b := g.BaselineServer; b != nil {
		n := 0
		for _, set := range []bool{b.Simulator, b.Command != "", b.Command == "" && b.URL != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			bad("baseline-server: give exactly one of simulator, command (with ready-url) or url")
		}
		if b.Command != "" && b.ReadyURL == "" {
			bad("baseline-server.ready-url (the input baseline-server-ready-url) is needed with baseline-server.command")
		}
	}
	switch g.CacheReset {
	case "", "none", CacheResetVLLM, CacheResetSGLang, CacheResetLlama:
	default:
		bad("cache-reset %q: want vllm, sglang, llama.cpp or none", g.CacheReset)
	}
	if g.Baseline.Keep < 1 {
		bad("baseline.keep %d: must be at least 1", g.Baseline.Keep)
	}
	if w := g.Workers; w != nil {
		k := w.Kubernetes
		switch {
		case k == nil:
			bad("workers: want kubernetes: {image, namespace, workers}")
		default:
			if k.Image == "" {
				bad("workers.kubernetes.image: the image to run, its entrypoint aiperf-action of this version")
			}
			if k.Workers < 1 || k.Workers > 10000 {
				bad("workers.kubernetes.workers %d: 1 to 10000 worker pods", k.Workers)
			}
			if k.Timeout < 0 {
				bad("workers.kubernetes.timeout %s: must not be negative", k.Timeout)
			}
			if g.Server.Simulator || g.Server.Command != "" || (g.BaselineServer != nil && g.BaselineServer.URL == "") {
				bad("workers.kubernetes: the pods must reach the server, so give it as url: (and baseline-server as url:), a server already running where the cluster reaches it; the gate starts servers on its own machine")
			}
			for i, sc := range g.Scenarios {
				if _, ok := sc[SearchKey]; ok {
					bad("scenarios[%d]: a capacity search (search:) runs its probes in one process: it does not run on workers.kubernetes yet", i)
				}
			}
		}
	}
	if g.Baseline.History < 0 || g.Baseline.History > 1000 {
		bad("baseline.history %d: want the runs kept for the noise estimate, 0 (as many as keep) to 1000", g.Baseline.History)
	}
	return errors.Join(errs...)
}

// SearchKey is a scenario's key that makes it a capacity search: a
// mapping of the search command's flags (ttft-sla-ms, search-by,
// concurrency-max, …), the scenario's other keys its profile.
const SearchKey = "search"

// ScenarioSearch is a scenario's search: mapping, and whether it has one.
func ScenarioSearch(s map[string]any) (map[string]any, bool, error) {
	v, ok := s[SearchKey]
	if !ok {
		return nil, false, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap || len(m) == 0 {
		return nil, true, fmt.Errorf("scenario %q: search: want a mapping of the search's settings (ttft-sla-ms: 500, search-by: concurrency, …)", ScenarioName(s))
	}
	return m, true, nil
}

// ScenarioName is a scenario's name.
func ScenarioName(s map[string]any) string { n, _ := s["name"].(string); return n }

// ScenarioArgs turns a scenario mapping into profile flags, in sorted key
// order: `concurrency: 8` → --concurrency 8, `streaming: true` → --streaming,
// lists repeat the flag. Its name and search: keys are not flags.
func ScenarioArgs(s map[string]any) ([]string, error) {
	keys := make([]string, 0, len(s))
	for k := range s {
		if k != "name" && k != SearchKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var args []string
	for _, k := range keys {
		flag := "--" + k
		switch v := s[k].(type) {
		case bool:
			args = append(args, flag+"="+strconv.FormatBool(v))
		case []any:
			for _, e := range v {
				args = append(args, flag, scalar(e))
			}
		case map[string]any:
			return nil, fmt.Errorf("scenario %q: %s: a mapping is not a flag value", ScenarioName(s), k)
		case nil:
			return nil, fmt.Errorf("scenario %q: %s has no value", ScenarioName(s), k)
		default:
			args = append(args, flag, scalar(v))
		}
	}
	return args, nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	default:
		return strings.TrimSpace(fmt.Sprint(x))
	}
}
