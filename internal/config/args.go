package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// DefaultURL is --url when profile is not given one, as in AIPerf.
const DefaultURL = "http://localhost:8000"

// listFlags take several values after one flag, as AIPerf's list options
// do (`--extra-inputs temperature:0.7 top_p:0.9`, `--url A B`,
// `--audio-depths 16 24`): the values run up to the next token that starts
// with "-".
var listFlags = []string{"url", "header", "extra-inputs", "server-metrics", "audio-depths", "audio-sample-rates", "model", "dataset-filter", "gpu-telemetry", "otel-headers", "concurrency", "request-rate"}

// SplitArgs rewrites AIPerf's command-line forms into the ones fs reads:
// every value after a list flag becomes a flag of its own, and the words
// that no flag takes are returned apart (AIPerf's positional model). A
// "--" ends the flags. Unknown flags pass through for fs to refuse by name.
func SplitArgs(fs *pflag.FlagSet, args []string) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(positional, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		var f *pflag.Flag
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case strings.HasPrefix(a, "--"):
			f = fs.Lookup(name)
		case len(a) == 2:
			f = fs.ShorthandLookup(a[1:])
		}
		if f != nil && !hasValue && f.NoOptDefVal != "" && slices.Contains(listFlags, f.Name) {
			// A list that may be empty (--gpu-telemetry, bare or with values).
			flags = append(flags, a)
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				flags = append(flags, "--"+f.Name+"="+args[i])
			}
			continue
		}
		if f != nil && !hasValue && f.NoOptDefVal == "true" && i+1 < len(args) && (args[i+1] == "true" || args[i+1] == "false") {
			// A bool with its value as the next word (AIPerf's
			// `--profile-run-disable-warmup-after-first false`).
			i++
			flags = append(flags, a+"="+args[i])
			continue
		}
		if f == nil || hasValue || f.NoOptDefVal != "" {
			flags = append(flags, a) // a bool, a flag=value, or for fs to judge
			continue
		}
		if !slices.Contains(listFlags, f.Name) || i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
			// One value, whatever it looks like, as pflag takes it (or
			// none at the end, which fs refuses by name).
			flags = append(flags, a)
			if i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
			continue
		}
		if numericLists[f.Name] {
			// One flag's numbers are one list (a sweep): 10 20 30 is
			// 10,20,30. A later --concurrency replaces it, as any flag's
			// later value does.
			vals := []string{args[i+1]}
			i++
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && numbers(args[i+1]) {
				i++
				vals = append(vals, args[i])
			}
			flags = append(flags, "--"+f.Name+"="+strings.Join(vals, ","))
			continue
		}
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			flags = append(flags, "--"+f.Name+"="+args[i])
		}
	}
	return flags, positional
}

// numericLists are list flags of numbers: a word after them that is not
// numbers (a positional model) is not theirs.
var numericLists = map[string]bool{"concurrency": true, "request-rate": true}

func numbers(w string) bool {
	for _, f := range strings.Split(w, ",") {
		if _, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err != nil && strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

// modelList is -m/--model (and AIPerf's --model-names): one model or
// several, given once, as several values or comma-separated. The first is
// Model, the others MoreModels; --model-selection-strategy assigns them.
type modelList struct {
	p   *Profile
	set bool
}

func (m *modelList) String() string {
	if m.p == nil {
		return ""
	}
	return m.p.Model
}

func (m *modelList) Set(s string) error {
	if !m.set {
		m.p.Model, m.p.MoreModels, m.set = "", nil, true
	}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		switch {
		case m.p.Model == "":
			m.p.Model = v
		case v == m.p.Model || slices.Contains(m.p.MoreModels, v):
			return fmt.Errorf("model %s given twice", v)
		default:
			m.p.MoreModels = append(m.p.MoreModels, v)
		}
	}
	return nil
}

func (m *modelList) Type() string { return "string" }

// bindAIPerf binds AIPerf's other names for this tool's flags, and the
// AIPerf flags that are more of the same: the warmup's own pattern,
// prefill limit, ramp and grace, --no-fixed-schedule and --workers-max.
func (p *Profile) bindAIPerf(fs *pflag.FlagSet) {
	alias := func(group string, add func(name, usage string), of string, names ...string) {
		for _, n := range names {
			add(n, "alias of --"+of+" (AIPerf's name)")
			fs.SetAnnotation(n, GroupAnnotation, []string{group})
		}
	}
	intAlias := func(v *int) func(string, string) { return func(n, u string) { fs.IntVar(v, n, *v, u) } }
	floatAlias := func(v *float64) func(string, string) { return func(n, u string) { fs.Float64Var(v, n, *v, u) } }
	strAlias := func(v *string) func(string, string) { return func(n, u string) { fs.StringVar(v, n, *v, u) } }
	alias("Input", intAlias(&p.ISLMean), "synthetic-input-tokens-mean", "prompt-input-tokens-mean")
	alias("Input", floatAlias(&p.ISLStddev), "synthetic-input-tokens-stddev", "prompt-input-tokens-stddev", "isl-stddev")
	alias("Input", intAlias(&p.ISLBlockSize), "isl-block-size", "prompt-input-tokens-block-size", "synthetic-input-tokens-block-size")
	alias("Input", intAlias(&p.OSLMean), "output-tokens-mean", "prompt-output-tokens-mean")
	alias("Input", floatAlias(&p.OSLStddev), "output-tokens-stddev", "prompt-output-tokens-stddev", "osl-stddev")
	alias("Input", intAlias(&p.NumDatasetEntries), "num-dataset-entries", "num-prompts")
	alias("Input", intAlias(&p.PromptBatchSize), "prompt-batch-size", "batch-size-text", "batch-size")
	alias("Input", intAlias(&p.NumPrefixPrompts), "num-prefix-prompts", "prompt-prefix-pool-size", "prefix-prompt-pool-size")
	alias("Input", intAlias(&p.PrefixPromptLength), "prefix-prompt-length", "prompt-prefix-length")
	alias("Input", floatAlias(&p.TurnDelayMean), "conversation-turn-delay-mean", "session-turn-delay-mean")
	alias("Input", floatAlias(&p.TurnDelayStddev), "conversation-turn-delay-stddev", "session-turn-delay-stddev")
	alias("Input", floatAlias(&p.TurnDelayRatio), "conversation-turn-delay-ratio", "session-delay-ratio")
	alias("Load generator", intAlias(&p.RequestCount), "request-count", "num-requests")
	alias("Load generator", strAlias(&p.ArrivalPattern), "arrival-pattern", "request-rate-mode")
	alias("Load generator", floatAlias(&p.ArrivalSmoothness), "arrival-smoothness", "vllm-burstiness")
	alias("Load generator", intAlias(&p.WarmupRequestCount), "warmup-request-count", "num-warmup-requests")
	// Two names AIPerf's tutorials write that its reference does not list.
	alias("Load generator", floatAlias(&p.BenchmarkDuration), "benchmark-duration", "duration")
	alias("Output", strAlias(&p.ArtifactDir), "artifact-dir", "output-dir")

	own := func(group, name string) { fs.SetAnnotation(name, GroupAnnotation, []string{group}) }
	fs.StringVar(&p.WarmupArrivalPattern, "warmup-arrival-pattern", p.WarmupArrivalPattern, "the warmup's arrival pattern (default --arrival-pattern)")
	fs.IntVar(&p.WarmupPrefillConcurrency, "warmup-prefill-concurrency", p.WarmupPrefillConcurrency, "the warmup's --prefill-concurrency (default --prefill-concurrency)")
	fs.Float64Var(&p.WarmupConcurrencyRampDuration, "warmup-concurrency-ramp-duration", p.WarmupConcurrencyRampDuration, "seconds over which the warmup's concurrency rises from 1 (default --concurrency-ramp-duration)")
	fs.Float64Var(&p.PrefillRampDuration, "prefill-concurrency-ramp-duration", p.PrefillRampDuration, "seconds over which the --prefill-concurrency limit rises from 1, one more at even steps (AIPerf's)")
	fs.Float64Var(&p.WarmupPrefillRampDuration, "warmup-prefill-concurrency-ramp-duration", p.WarmupPrefillRampDuration, "the warmup's --prefill-concurrency-ramp-duration (default the profiling one)")
	fs.Float64Var(&p.WarmupRateRampDuration, "warmup-request-rate-ramp-duration", p.WarmupRateRampDuration, "the warmup's --request-rate-ramp-duration (default the profiling one)")
	fs.Var(&optFloat{&p.WarmupGracePeriod}, "warmup-grace-period", "seconds to wait for the warmup's in-flight requests after --warmup-duration (default --benchmark-grace-period)")
	fs.BoolVar(&p.NoFixedSchedule, "no-fixed-schedule", p.NoFixedSchedule, "a trace (mooncake_trace, bailian_trace, burst_gpt_trace, baseten_trace) is not replayed on its timestamps: its lengths are sent at --concurrency or --request-rate")
	fs.IntVar(&p.WorkersMax, "workers-max", p.WorkersMax, "at most this many worker processes when --workers is not given (AIPerf's)")
	for _, n := range []string{"warmup-arrival-pattern", "warmup-prefill-concurrency", "warmup-concurrency-ramp-duration", "warmup-grace-period",
		"prefill-concurrency-ramp-duration", "warmup-prefill-concurrency-ramp-duration", "warmup-request-rate-ramp-duration"} {
		own("Load generator", n)
	}
	own("Input", "no-fixed-schedule")
	own("Tool", "workers-max")

	// AIPerf's flags whose one meaning here is the one this tool has.
	choice := func(group, name, usage string, choices ...string) {
		fs.Var(&choiceFlag{name: name, choices: choices}, name, usage)
		own(group, name)
	}
	choice("Output", "ui-type", "accepted for AIPerf's command lines: none, simple or dashboard; the console shows one progress line and the summary whichever", "none", "simple", "dashboard")
	choice("Output", "ui", "alias of --ui-type", "none", "simple", "dashboard")
	choice("Endpoint", "transport", "http (AIPerf's only transport)", "http")
	choice("Endpoint", "transport-type", "alias of --transport", "http")
	choice("Endpoint", "connection-reuse-strategy", "pooled (AIPerf's default): connections are kept and reused", "pooled")
	var legacy bool
	fs.BoolVar(&legacy, "use-legacy-max-tokens", false, "accepted for AIPerf's command lines: max_tokens is the field this tool sends")
	own("Endpoint", "use-legacy-max-tokens")
}

// choiceFlag takes one of a few values and stores nothing: AIPerf's flags
// whose only honest value here is what this tool does anyway.
type choiceFlag struct {
	name    string
	choices []string
	v       string
}

func (c *choiceFlag) String() string { return c.v }
func (c *choiceFlag) Type() string   { return "string" }

func (c *choiceFlag) Set(s string) error {
	if !slices.Contains(c.choices, s) {
		return fmt.Errorf("want %s (AIPerf's other values have no meaning here)", strings.Join(c.choices, " or "))
	}
	c.v = s
	return nil
}

// optFloat is a float flag that may be left unset (nil).
type optFloat struct{ v **float64 }

func (o *optFloat) String() string {
	if o.v == nil || *o.v == nil {
		return ""
	}
	return strconv.FormatFloat(**o.v, 'g', -1, 64)
}

func (o *optFloat) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("want a number of seconds")
	}
	*o.v = &f
	return nil
}

func (o *optFloat) Type() string { return "float" }

// aiperfRefused are AIPerf's profile flags with no honest meaning here
// yet, each with the reason: given one, a user is told it is AIPerf's and
// why it is refused, never that it is unknown.
var aiperfRefused = map[string]string{}

func init() {
	for reason, names := range map[string][]string{
		"AIPerf's radix-tree trace synthesis is not built here (--synthesis-speedup-ratio, --synthesis-max-isl and --synthesis-max-osl are)": {
			"synthesis-prefix-len-multiplier", "synthesis-prefix-root-multiplier", "synthesis-prompt-len-multiplier", "synthesis-output-len-multiplier"},
		"server metrics are written in one form here (run.json's server_metrics)":                      {"server-metrics-formats"},
		"several runs and their confidence are the gate's repeats here (aiperf-action gate, repeats:)": {"num-profile-runs", "confidence-level", "profile-run-cooldown-seconds", "profile-run-disable-warmup-after-first"},
		"AIPerf's record-processor services are not part of this tool":                                 {"record-processors"},
		"a request count per session is not supported yet":                                             {"request-count-per-session"},
		"--benchmark-max-duration is not supported yet: give --benchmark-duration":                     {"benchmark-max-duration"},
		"MLflow and Weights & Biases have no maintained Go client, so their exporters are not built (--otel-url streams the GenAI metrics to an OpenTelemetry collector; run.json and profile_export_aiperf.json hold the summary)": {
			"mlflow-tracking-uri", "mlflow-experiment", "mlflow-run-name", "mlflow-tags", "mlflow-parent-run-id", "mlflow-upload",
			"wandb-project", "wandb-entity", "wandb-run-name", "wandb-tags"},
		"accuracy benchmarks are not built here":  {"accuracy-benchmark", "accuracy-tasks", "accuracy-n-shots", "accuracy-enable-cot", "accuracy-grader", "accuracy-system-prompt"},
		"no public dataset here declares filters": {"dataset-filter"},
		"AIPerf's characterization recipes (concurrency-ramp, prefill-ttft-curve, decode-itl-curve, pareto-sweep) and its other search planners are not built here; `aiperf-action search` (or profile --search-recipe max-concurrency-under-sla …) finds the highest load within objectives": {
			"isl-min", "isl-max", "osl-min", "osl-max", "concurrency-steps", "degradation-threshold", "isl-osl-pairs", "error-rate-sla", "search-sla",
			"search-space", "search-metric", "search-stat", "search-initial-points", "search-random-seed", "optuna-sampler", "optuna-acquisition"},
		"one parameter is swept at a time here (--concurrency or --request-rate, several values), so there is no grid or zip of several": {"sweep-type"},
		"AIPerf's YAML config is not read: the gate's config (.github/aiperf.yml, aiperf-action gate) is this tool's":                    {"config"},
	} {
		for _, n := range names {
			aiperfRefused[n] = reason
		}
	}
}

// ExplainFlagError turns pflag's "unknown flag" for one of AIPerf's flags
// into an error saying so and why; other errors pass unchanged.
func ExplainFlagError(err error) error {
	if err == nil {
		return nil
	}
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if reason, known := aiperfRefused[name]; ok && known {
		return fmt.Errorf("--%s is an AIPerf flag that aiperf-action does not support: %s", name, reason)
	}
	return err
}

// gpuTelemetryOn is what a bare --gpu-telemetry sets.
const gpuTelemetryOn = "on"

// gpuTelemetryFlag is AIPerf's --gpu-telemetry: bare, it prints the GPU
// table; its values are DCGM exporter URLs, a fields .csv, or the words
// dashboard, pynvml and amdsmi (the last two refused when checked).
type gpuTelemetryFlag struct{ p *Profile }

func (g *gpuTelemetryFlag) String() string {
	if g.p == nil {
		return ""
	}
	return strings.Join(g.p.GPUTelemetry, " ")
}

func (g *gpuTelemetryFlag) Set(s string) error {
	g.p.ShowGPUTelemetry = true
	if s != gpuTelemetryOn {
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				g.p.GPUTelemetry = append(g.p.GPUTelemetry, v)
			}
		}
	}
	return nil
}

func (g *gpuTelemetryFlag) Type() string { return "URL|FILE.csv" }
