package engine

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// loss is the sum of squared log errors of cfg's figures against the
// published ones the fit uses.
func loss(cfg Config, figs []Figure, logf func(string, ...any)) float64 {
	var l float64
	for _, f := range figs {
		if f.HeldOut {
			continue
		}
		m := f.Simulate(cfg)
		for _, e := range f.Errors(m) {
			d := math.Log1p(e.Rel)
			l += d * d
		}
		if logf != nil {
			logf("%s %d/%d: %+v", f.Describe(), f.ISL, f.OSL, f.Errors(m))
		}
	}
	return l
}

// TestFitPreset refits the preset AIPERF_FIT names to its figures, by
// coordinate descent from its current config; it prints the result.
func TestFitPreset(t *testing.T) {
	name := os.Getenv("AIPERF_FIT")
	if name == "" {
		t.Skip("AIPERF_FIT=<preset> refits that preset")
	}
	pr, err := PresetNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pr.Config
	cfg.Seed = 1
	if v := os.Getenv("AIPERF_FIT_START"); v != "" {
		// A start other than the preset's: JSON of the Config fields to change.
		if err := json.Unmarshal([]byte(v), &cfg); err != nil {
			t.Fatalf("AIPERF_FIT_START: %v", err)
		}
	}
	keep := os.Getenv("AIPERF_FIT_KEEP_BATCH") != "" // don't try other batch shapes
	best := loss(cfg, pr.Figures, nil)
	// The batch's shape: the best of vLLM's usual budgets and batch sizes.
	for _, set := range []func(*Config, int){
		func(c *Config, v int) { c.MaxBatchedTokens = v },
		func(c *Config, v int) { c.MaxNumSeqs = v },
	} {
		for _, v := range []int{128, 256, 512, 1024, 2048, 4096, 8192, 16384} {
			if keep {
				break
			}
			c := cfg
			set(&c, v)
			if l := loss(c, pr.Figures, nil); l < best {
				best, cfg = l, c
			}
		}
	}
	kv := float64(cfg.KVBlocks)
	params := []*float64{&cfg.StepBaseNs, &cfg.PerSeqNs, &cfg.PerCtxTokenNs, &cfg.PerPrefillTokenNs, &cfg.PerPrefillAttnNs, &cfg.FrontendNs, &cfg.FrontendSerialNs, &kv}
	for round := 0; round < 20; round++ {
		for _, p := range params {
			for _, f := range []float64{0.5, 0.7, 0.85, 0.95, 1.05, 1.15, 1.4, 2} {
				old := *p
				*p = old * f
				cfg.KVBlocks = int(kv)
				if l := loss(cfg, pr.Figures, nil); l < best {
					best = l
				} else {
					*p = old
					cfg.KVBlocks = int(kv)
				}
			}
		}
		t.Logf("round %d loss %.4f %+v", round, best, cfg)
	}
	loss(cfg, pr.Figures, t.Logf)
}
