package engine

import (
	"math"
	"os"
	"testing"
)

type pub struct {
	c, isl, osl     int
	ttft, itl, tput float64
}

func loss(cfg Config, pts []pub, verbose func(string, ...any)) float64 {
	var l float64
	for _, p := range pts {
		o := Simulate(cfg, Load{Requests: max(6*p.c, 12), Warmup: 2 * p.c, ISL: p.isl, OSL: p.osl, Concurrency: p.c})
		tt, it, tp := Mean(o.TTFTms), Mean(o.ITLms), o.TokensPerSec
		for _, r := range [][2]float64{{tt, p.ttft}, {it, p.itl}, {tp, p.tput}} {
			d := math.Log(r[0] / r[1])
			l += d * d
		}
		if verbose != nil {
			verbose("c=%d %d/%d: ttft %.1f (%.1f) itl %.2f (%.2f) tput %.1f (%.1f) preempt %d", p.c, p.isl, p.osl, tt, p.ttft, it, p.itl, tp, p.tput, o.Stats.Preemptions)
		}
	}
	return l
}

// TestFitPreset refits the default preset to its figures (AIPERF_FIT=1).
func TestFitPreset(t *testing.T) {
	if os.Getenv("AIPERF_FIT") == "" {
		t.Skip()
	}
	pr, _ := PresetNamed(DefaultPreset)
	var nim70, nim70held []pub
	for _, f := range pr.Figures {
		p := pub{f.Concurrency, f.ISL, f.OSL, f.TTFTms, f.ITLms, f.TokensPerSec}
		if f.HeldOut {
			nim70held = append(nim70held, p)
		} else {
			nim70 = append(nim70, p)
		}
	}
	cfg := Config{MaxNumSeqs: 256, MaxBatchedTokens: 2048, BlockSize: 16, KVBlocks: 29000,
		StepBaseNs: 18e6, PerSeqNs: 100e3, PerCtxTokenNs: 10, PerPrefillTokenNs: 56e3, PerPrefillAttnNs: 4, Jitter: 0.03, Seed: 1}
	params := []*float64{&cfg.StepBaseNs, &cfg.PerSeqNs, &cfg.PerCtxTokenNs, &cfg.PerPrefillTokenNs, &cfg.PerPrefillAttnNs}
	kv := float64(cfg.KVBlocks)
	best := loss(cfg, nim70, nil)
	for _, b := range []int{2048, 4096, 8192} {
		c := cfg
		c.MaxBatchedTokens = b
		if l := loss(c, nim70, nil); l < best {
			best, cfg = l, c
		}
	}
	for round := 0; round < 10; round++ {
		for _, p := range append(params, &kv) {
			for _, f := range []float64{0.7, 0.85, 0.95, 1.05, 1.15, 1.4} {
				old := *p
				*p = old * f
				cfg.KVBlocks = int(kv)
				if l := loss(cfg, nim70, nil); l < best {
					best = l
				} else {
					*p = old
					cfg.KVBlocks = int(kv)
				}
			}
		}
		t.Logf("round %d loss %.4f %+v", round, best, cfg)
	}
	loss(cfg, nim70, t.Logf)
	t.Log("held out:")
	loss(cfg, nim70held, t.Logf)
}
