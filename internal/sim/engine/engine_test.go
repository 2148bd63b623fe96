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
	b.WriteString("| load | ISL / OSL | TTFT ms (published) | ITL ms (published) | output tokens/s (published) | requests/s (published) | fit |\n|---|---|---|---|---|---|---|\n")
	var fitErr, heldErr float64
	cfg := p.Config
	cfg.Seed = 1
	for _, f := range p.Figures {
		cells := map[string]string{}
		for _, e := range f.Errors(f.Simulate(cfg)) {
			if f.HeldOut {
				heldErr = math.Max(heldErr, math.Abs(e.Rel))
			} else {
				fitErr = math.Max(fitErr, math.Abs(e.Rel))
			}
			cells[e.Metric] = fmt.Sprintf("%.4g (%.4g, %+.1f%%)", e.Got, e.Want, 100*e.Rel)
		}
		row := []string{f.Describe(), fmt.Sprintf("%d / %d", f.ISL, f.OSL)}
		for _, m := range []string{"TTFT ms", "ITL ms", "output tokens/s", "requests/s"} {
			c, ok := cells[m]
			if !ok {
				c = "—"
			}
			row = append(row, c)
		}
		use := "fitted"
		if f.HeldOut {
			use = "held out"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", strings.Join(row, " | "), use)
	}
	return b.String(), fitErr, heldErr
}

// Each preset reproduces the figures it was fitted to, and the ones held
// out of the fit, within 15%.
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
		if held > 0.15 {
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

// The front end takes each request in arrival order: a burst queues there
// one FrontendSerialNs at a time, and each then waits FrontendNs more;
// requests apart by more than the serial share never queue.
func TestFrontendQueuesABurst(t *testing.T) {
	f := NewFrontend(Config{FrontendNs: 5e6, FrontendSerialNs: 2e6})
	for i := int64(0); i < 4; i++ {
		if got, want := f.Ready(0), (i+1)*2e6+5e6; got != want {
			t.Fatalf("burst request %d ready at %d ns, want %d", i, got, want)
		}
	}
	if got, want := f.Ready(100e6), int64(100e6+2e6+5e6); got != want {
		t.Fatalf("a later request ready at %d, want %d (no queue)", got, want)
	}
	// In Simulate a burst's TTFT then grows by the serial share per request.
	cfg := preset(t)
	cfg.FrontendNs, cfg.FrontendSerialNs = 0, 20e6
	o := Simulate(cfg, Load{Requests: 40, ISL: 64, OSL: 4, Rate: math.Inf(1), Seed: 1})
	first, last := o.TTFTms[0], o.TTFTms[len(o.TTFTms)-1]
	if last-first < 39*20*0.9 {
		t.Fatalf("a burst of 40 through a 20 ms front end: TTFT %.0f ms first, %.0f ms last; want ~780 ms apart", first, last)
	}
}
