package engine

import (
	"fmt"
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

// A Figure is one published load point: a closed loop of Concurrency
// streams with fixed input and output lengths, and the means measured.
type Figure struct {
	Concurrency, ISL, OSL int
	TTFTms, ITLms         float64 // means
	TokensPerSec          float64 // output tokens/s
	HeldOut               bool    // not used by the fit
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
		Config: Config{MaxNumSeqs: 256, MaxBatchedTokens: 8192, BlockSize: 16, KVBlocks: 29000, PrefixCaching: true,
			StepBaseNs: 18.9e6, PerSeqNs: 126.5e3, PerCtxTokenNs: 16.1, PerPrefillTokenNs: 53.2e3, PerPrefillAttnNs: 3.56, Jitter: 0.03},
		Figures: []Figure{
			{1, 5000, 500, 406.77, 18.58, 51.67, false},
			{5, 5000, 500, 546.7, 21.83, 218.48, true},
			{25, 5000, 500, 688.69, 38.75, 623.4, false},
			{50, 5000, 500, 834.51, 59.73, 814.37, false},
			{100, 5000, 500, 7996.25, 92.91, 917.26, false},
			{150, 5000, 500, 34794.22, 92.86, 920.9, true},
			{200, 5000, 500, 61680.22, 93.06, 920.54, true},
			{1, 500, 2000, 47.77, 18.91, 52.85, false},
		},
	},
}

// DefaultPreset is the engine mode's preset when none is named.
const DefaultPreset = "llama-3.3-70b-2xh100-fp8"

// PresetNamed finds a preset by name.
func PresetNamed(name string) (Preset, error) {
	var names []string
	for _, p := range Presets {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Preset{}, fmt.Errorf("no engine preset %q (known: %s)", name, strings.Join(names, ", "))
}
