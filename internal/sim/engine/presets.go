package engine

import (
	"fmt"
	"math"
	"strings"
)

// A Preset is an engine config fitted to published figures, with the
// figures themselves, so the fit can be checked (TestPresetsMatchSources).
type Preset struct {
	Name   string
	About  string // model, hardware, serving stack
	Source string // where the figures were published
	Config Config
	// Figures are the published load points: the ones the fit used, and
	// held-out ones it did not.
	Figures []Figure
}

// A Figure is one published load point and the means measured at it. The
// load is one of three kinds, as the source ran it:
//   - a closed loop of Concurrency streams in steady state (AIPerf's and
//     NIM's sweeps): the first two rounds of requests are left out;
//   - Prompts requests through at most Concurrency streams, every one
//     counted and throughput taken over the whole run (`vllm bench serve
//     --max-concurrency C --num-prompts N --request-rate inf`);
//   - Prompts requests arriving at Rate requests/s, Poisson (`vllm bench
//     serve --request-rate R`; math.Inf(1): all at once).
//
// A published figure of 0 was not published and is not compared.
type Figure struct {
	Concurrency, ISL, OSL int
	OSLSpread             int // output lengths uniform in OSL ± OSLSpread
	Prompts               int
	Rate                  float64
	Published             Measures
	HeldOut               bool // not used by the fit
}

// Measures are what a source publishes about a load point, as means.
type Measures struct {
	TTFTms         float64
	ITLms          float64 // per request, (last − first token) / (tokens − 1), as TPOT
	TokensPerSec   float64 // output tokens/s
	RequestsPerSec float64
}

// closed is a steady-state closed-loop figure.
func closed(c, isl, osl int, ttft, itl, tput float64, held bool) Figure {
	return Figure{Concurrency: c, ISL: isl, OSL: osl, Published: Measures{TTFTms: ttft, ITLms: itl, TokensPerSec: tput}, HeldOut: held}
}

// Load is the figure's workload for Simulate.
func (f Figure) Load() Load {
	switch {
	case f.Prompts > 0:
		return Load{Requests: f.Prompts, ISL: f.ISL, OSL: f.OSL, OSLSpread: f.OSLSpread, Concurrency: f.Concurrency, Rate: f.Rate, Seed: 1}
	default:
		return Load{Requests: max(6*f.Concurrency, 12), Warmup: 2 * f.Concurrency, ISL: f.ISL, OSL: f.OSL, OSLSpread: f.OSLSpread, Concurrency: f.Concurrency}
	}
}

// Simulate runs the figure's load through cfg and measures it as the
// source did.
func (f Figure) Simulate(cfg Config) Measures {
	o := Simulate(cfg, f.Load())
	m := Measures{TTFTms: Mean(o.TTFTms), ITLms: Mean(o.ITLms), TokensPerSec: o.TokensPerSec, RequestsPerSec: o.RequestsPerSec}
	if f.Prompts > 0 {
		m.TokensPerSec = o.WholeTokensPerSec
	}
	return m
}

// Describe names the figure's load, for tables.
func (f Figure) Describe() string {
	switch {
	case f.Prompts > 0 && f.Concurrency > 0:
		return fmt.Sprintf("%d prompts, concurrency %d", f.Prompts, f.Concurrency)
	case f.Prompts > 0 && math.IsInf(f.Rate, 1):
		return fmt.Sprintf("%d prompts at once", f.Prompts)
	case f.Prompts > 0:
		return fmt.Sprintf("%d prompts, Poisson %g req/s", f.Prompts, f.Rate)
	}
	return fmt.Sprintf("concurrency %d", f.Concurrency)
}

// Errors are the relative errors of m against the published figures, by
// metric name, for the ones published.
func (f Figure) Errors(m Measures) []MetricError {
	var out []MetricError
	for _, x := range []struct {
		name      string
		got, want float64
	}{
		{"TTFT ms", m.TTFTms, f.Published.TTFTms},
		{"ITL ms", m.ITLms, f.Published.ITLms},
		{"output tokens/s", m.TokensPerSec, f.Published.TokensPerSec},
		{"requests/s", m.RequestsPerSec, f.Published.RequestsPerSec},
	} {
		if x.want > 0 {
			out = append(out, MetricError{x.name, x.got, x.want, x.got/x.want - 1})
		}
	}
	return out
}

// A MetricError is one modelled figure beside its published one.
type MetricError struct {
	Metric    string
	Got, Want float64
	Rel       float64 // Got/Want − 1
}

// Presets are the engine presets `serve --preset` knows.
var Presets = []Preset{
	{
		Name:  "llama-3.3-70b-2xh100-fp8",
		About: "Llama 3.3 70B Instruct, FP8, tensor parallel 2 on 2 x H100 80GB (NVIDIA NIM 1.8.0)",
		Source: "NVIDIA NIM LLM Benchmarking guide, Performance, Llama-3.3-70b-instruct Results, version 1.8.0, " +
			"2 x H100 80G, fp8 TP2 (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance), measured with AIPerf",
		// Fitted by coordinate descent on the figures not held out
		// (fit_test.go, AIPERF_FIT=1), with 3% step jitter.
		Config: Config{MaxNumSeqs: 256, MaxBatchedTokens: 2048, BlockSize: 16, KVBlocks: 29000, PrefixCaching: true,
			StepBaseNs: 18.9e6, PerSeqNs: 124.4e3, PerCtxTokenNs: 19.4, PerPrefillTokenNs: 53.2e3, PerPrefillAttnNs: 4.33,
			FrontendNs: 1.14e6, FrontendSerialNs: 0.76e6, Jitter: 0.03},
		Figures: []Figure{
			closed(1, 5000, 500, 406.77, 18.58, 51.67, false),
			closed(5, 5000, 500, 546.7, 21.83, 218.48, false),
			closed(25, 5000, 500, 688.69, 38.75, 623.4, true),
			closed(50, 5000, 500, 834.51, 59.73, 814.37, false),
			closed(100, 5000, 500, 7996.25, 92.91, 917.26, false),
			closed(150, 5000, 500, 34794.22, 92.86, 920.9, true),
			closed(200, 5000, 500, 61680.22, 93.06, 920.54, true),
			closed(1, 500, 2000, 47.77, 18.91, 52.85, false),
		},
	},
	{
		Name:  "qwen3-0.6b-h100",
		About: "Qwen3-0.6B, BF16, on one H100 80GB HBM3 (vLLM 0.19.0, --gpu-memory-utilization 0.5, --max-model-len 2048)",
		Source: "kvcached pull request 331, benchmarks/bench_layout/H100_results.md, the \"vanilla\" vLLM rows: " +
			"vllm bench serve, random 512 in / 128 out, 500 prompts, means of 3 seeds",
		Config: Config{MaxNumSeqs: 1024, MaxBatchedTokens: 8192, BlockSize: 16, KVBlocks: 20000, PrefixCaching: true,
			StepBaseNs: 2.14e6, PerSeqNs: 36.0e3, PerCtxTokenNs: 4.93, PerPrefillTokenNs: 3.31e3, PerPrefillAttnNs: 0.00115,
			FrontendNs: 21.98e6, FrontendSerialNs: 10.5e6, Jitter: 0.03},
		Figures: []Figure{
			{ISL: 512, OSL: 128, Prompts: 500, Rate: 16, Published: Measures{TTFTms: 38.9, ITLms: 2.39, RequestsPerSec: 15.87}},
			{ISL: 512, OSL: 128, Prompts: 500, Rate: math.Inf(1), Published: Measures{TTFTms: 2905, ITLms: 5.45, RequestsPerSec: 94.91}},
		},
	},
}

// DefaultPreset is the engine mode's preset when none is named.
const DefaultPreset = "llama-3.3-70b-2xh100-fp8"

// PresetNames are the presets' names, in order.
func PresetNames() []string {
	var names []string
	for _, p := range Presets {
		names = append(names, p.Name)
	}
	return names
}

// PresetNamed finds a preset by name.
func PresetNamed(name string) (Preset, error) {
	for _, p := range Presets {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("no engine preset %q (known: %s)", name, strings.Join(PresetNames(), ", "))
}
