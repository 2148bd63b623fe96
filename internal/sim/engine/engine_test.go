package engine

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func preset(t *testing.T) Config {
	t.Helper()
	p, err := PresetNamed(DefaultPreset)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config
	c.Seed = 1
	return c
}

// FigureTable simulates each of a preset's published load points and
// returns the markdown table the README shows, and the worst relative
// error of the fitted and of the held-out points.
func FigureTable(p Preset) (string, float64, float64) {
	var b strings.Builder
	b.WriteString("| concurrency | ISL / OSL | TTFT ms (published) | ITL ms (published) | tokens/s (published) | fit |\n|---|---|---|---|---|---|\n")
	var fitErr, heldErr float64
	for _, f := range p.Figures {
		cfg := p.Config
		cfg.Seed = 1
		o := Simulate(cfg, Load{Requests: max(6*f.Concurrency, 12), Warmup: 2 * f.Concurrency, ISL: f.ISL, OSL: f.OSL, Concurrency: f.Concurrency})
		got := [3]float64{Mean(o.TTFTms), Mean(o.ITLms), o.TokensPerSec}
		want := [3]float64{f.TTFTms, f.ITLms, f.TokensPerSec}
		cells := make([]string, 3)
		for i := range got {
			e := got[i]/want[i] - 1
			if f.HeldOut {
				heldErr = math.Max(heldErr, math.Abs(e))
			} else {
				fitErr = math.Max(fitErr, math.Abs(e))
			}
			cells[i] = fmt.Sprintf("%.4g (%.4g, %+.1f%%)", got[i], want[i], 100*e)
		}
		use := "fitted"
		if f.HeldOut {
			use = "held out"
		}
		fmt.Fprintf(&b, "| %d | %d / %d | %s | %s | %s | %s |\n", f.Concurrency, f.ISL, f.OSL, cells[0], cells[1], cells[2], use)
	}
	return b.String(), fitErr, heldErr
}

// Each preset reproduces the figures it was fitted to within 15%, and the
// ones held out of the fit within 20%.
func TestPresetsMatchSources(t *testing.T) {
	for _, p := range Presets {
		if err := p.Config.Check(); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		table, fit, held := FigureTable(p)
		t.Logf("%s (%s):\n%s", p.Name, p.Source, table)
		if fit > 0.15 {
			t.Errorf("%s: a fitted figure is off by %.1f%%", p.Name, 100*fit)
		}
		if held > 0.20 {
			t.Errorf("%s: a held-out figure is off by %.1f%%", p.Name, 100*held)
		}
	}
}

// Throughput rises with concurrency and then saturates at the engine's
// capacity (its batch and KV cache), where more streams only queue.
func TestThroughputSaturates(t *testing.T) {
	cfg := preset(t)
	var tput, ttft []float64
	conc := []int{1, 16, 128, 512, 1024}
	for _, c := range conc {
		o := Simulate(cfg, Load{Requests: 4 * c, Warmup: c, ISL: 512, OSL: 128, Concurrency: c})
		tput = append(tput, o.TokensPerSec)
		ttft = append(ttft, Median(o.TTFTms))
		t.Logf("c=%4d: %.0f tokens/s, TTFT p50 %.0f ms, running at most %d, preemptions %d", c, o.TokensPerSec, Median(o.TTFTms), o.Stats.MaxRunningReached, o.Stats.Preemptions)
	}
	if !(tput[1] > 8*tput[0] && tput[2] > 2*tput[1]) {
		t.Errorf("throughput does not grow with concurrency: %v", tput)
	}
	if r := tput[4] / tput[3]; r > 1.1 {
		t.Errorf("throughput still grows past the batch limit: 512 → 1024 streams gave %.2fx", r)
	}
	if ttft[4] < 2*ttft[3] {
		t.Errorf("past capacity the extra streams should queue: TTFT p50 %.0f ms at 512, %.0f ms at 1024", ttft[3], ttft[4])
	}
}

// An open loop below capacity sees TTFT near the prefill time; past
// capacity the queue grows and TTFT with it.
func TestTTFTGrowsPastCapacity(t *testing.T) {
	cfg := preset(t)
	sat := Simulate(cfg, Load{Requests: 2048, Warmup: 512, ISL: 512, OSL: 128, Concurrency: 512})
	capacity := sat.TokensPerSec / 128 // requests/s
	below := Simulate(cfg, Load{Requests: 1500, Warmup: 200, ISL: 512, OSL: 128, Rate: 0.5 * capacity, Seed: 3})
	above := Simulate(cfg, Load{Requests: 1500, Warmup: 200, ISL: 512, OSL: 128, Rate: 1.5 * capacity, Seed: 3})
	b, a := Median(below.TTFTms), Median(above.TTFTms)
	t.Logf("capacity %.1f req/s; TTFT p50 at 0.5x %.0f ms, at 1.5x %.0f ms", capacity, b, a)
	if a < 5*b {
		t.Errorf("TTFT p50 %.0f ms past capacity against %.0f ms below it: no queueing", a, b)
	}
}

// A prompt whose blocks are cached is prefilled only past them: TTFT drops
// on repeats, and not after the cache is reset or with caching off.
func TestPrefixCacheCutsTTFT(t *testing.T) {
	cfg := preset(t)
	cfg.Jitter = 0
	same := BlockHashes(seqTokens(4096, 1), cfg.BlockSize)
	o := Simulate(cfg, Load{Requests: 3, ISL: 4096, OSL: 4, Concurrency: 1, Hashes: func(int) []uint64 { return same }})
	t.Logf("TTFT of three identical prompts: %.1f, %.1f, %.1f ms; %d of %d prompt tokens hit", o.TTFTms[0], o.TTFTms[1], o.TTFTms[2], o.Stats.PrefixHits, o.Stats.PrefixQueries)
	if !(o.TTFTms[1] < 0.3*o.TTFTms[0] && o.TTFTms[2] < 0.3*o.TTFTms[0]) {
		t.Errorf("repeats were not served from the cache: %v", o.TTFTms)
	}
	cfg.PrefixCaching = false
	off := Simulate(cfg, Load{Requests: 3, ISL: 4096, OSL: 4, Concurrency: 1, Hashes: func(int) []uint64 { return same }})
	if off.TTFTms[1] < 0.9*off.TTFTms[0] {
		t.Errorf("with prefix caching off a repeat was faster: %v", off.TTFTms)
	}
	// Reset between requests: the repeat pays the full prefill again.
	cfg.PrefixCaching = true
	e := New(cfg)
	ttft := func() int64 {
		s := &Seq{ISL: 4096, OSL: 1, Hashes: same}
		e.Add(s)
		var t int64
		for s.Generated == 0 {
			d, _, _ := e.Step()
			t += d
		}
		return t
	}
	first := ttft()
	cached := ttft()
	e.ResetPrefixCache()
	reset := ttft()
	if !(cached < first/3 && reset > first*9/10) {
		t.Errorf("first %d ns, cached %d ns, after reset %d ns", first, cached, reset)
	}
}

func seqTokens(n int, seed uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = seed*1_000_003 + uint64(i)
	}
	return out
}

// With a KV cache too small for the batch, the newest sequences are
// preempted and recomputed, and every request still finishes whole.
func TestPreemptionWhenKVFull(t *testing.T) {
	cfg := preset(t)
	cfg.KVBlocks = 1200 // 19,200 tokens for 64 sequences of up to 1024
	o := Simulate(cfg, Load{Requests: 192, ISL: 512, OSL: 512, Concurrency: 64})
	t.Logf("preemptions %d, running at most %d, %d requests done", o.Stats.Preemptions, o.Stats.MaxRunningReached, o.Stats.FinishedRequests)
	if o.Stats.Preemptions == 0 {
		t.Fatal("no preemption with a full KV cache")
	}
	if o.Stats.FinishedRequests != 192 || len(o.TTFTms) != 192 {
		t.Fatalf("%d of 192 finished", o.Stats.FinishedRequests)
	}
	roomy := preset(t)
	if r := Simulate(roomy, Load{Requests: 192, ISL: 512, OSL: 512, Concurrency: 64}); r.Stats.Preemptions != 0 {
		t.Errorf("%d preemptions with room to spare", r.Stats.Preemptions)
	}
}
