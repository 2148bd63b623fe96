package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The simulation: request latencies are lognormal (median 100 ms, σ 0.5);
// every run is shifted by its own run-level factor (3% lognormal noise, the
// drift that makes pooled request-level tests cry wolf), and its 10 time
// windows by an AR(1) factor (ρ 0.7, 2%), so neighbouring windows are
// correlated. A "tail" change multiplies latencies above the baseline's
// p90 (p99 moves by the full amount, p50 not at all); a "shift" multiplies
// every latency.
type simCfg struct {
	K, R   int
	change string  // "", "tail", "shift"
	size   float64 // +0.2 = 20% worse; negative is an improvement
}

const (
	simWindows   = 10
	simPerWindow = 200
	simRunNoise  = 0.03
	simWinNoise  = 0.02
	simRho       = 0.7
	simMedian    = 100.0
	simSigma     = 0.5
)

var simP90 = simMedian * math.Exp(simSigma*1.2815515655446004)

// hdrRound quantizes a latency in ms the way a µs HdrHistogram with 3
// significant figures stores it: 1024 steps per octave above 2048 µs.
func hdrRound(ms float64) float64 {
	us := ms * 1000
	if us > 2048 {
		step := math.Exp2(math.Floor(math.Log2(us)) - 10)
		us = math.Floor(us/step)*step + step/2
	}
	return math.Round(us) / 1000
}

func simRun(r *rand.Rand, change string, size float64) Sample {
	run := math.Exp(simRunNoise * r.NormFloat64())
	e := simWinNoise * r.NormFloat64()
	var s Sample
	xs := make([]float64, simPerWindow)
	for w := 0; w < simWindows; w++ {
		if w > 0 {
			e = simRho*e + math.Sqrt(1-simRho*simRho)*simWinNoise*r.NormFloat64()
		}
		for i := range xs {
			base := simMedian * math.Exp(simSigma*r.NormFloat64())
			x := base * run * math.Exp(e)
			switch {
			case change == "shift":
				x *= 1 + size
			case change == "tail" && base > simP90:
				x *= 1 + size
			}
			xs[i] = hdrRound(x)
		}
		s.Windows = append(s.Windows, FromValues(xs))
	}
	s.Total = Merge(s.Windows...)
	return s
}

// simFailRate runs trials comparisons and returns the fraction that FAILed
// overall (gating p50 and p99 at a 5% tolerance).
func simFailRate(cfg simCfg, trials int, seed uint64) float64 {
	opt := DefaultOptions
	opt.Resamples = 100
	var failed int
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for g := 0; g < runtime.GOMAXPROCS(0); g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range next {
				r := rand.New(rand.NewPCG(seed, uint64(t)))
				var base, cand []Sample
				for k := 0; k < cfg.K; k++ {
					base = append(base, simRun(r, "", 0))
				}
				for k := 0; k < cfg.R; k++ {
					cand = append(cand, simRun(r, cfg.change, cfg.size))
				}
				var in []Input
				for _, stat := range []string{"p50", "p99"} {
					in = append(in, Input{Spec: Spec{Metric: "latency", Stat: stat, Tolerance: 0.05}, Baseline: base, Candidate: cand})
				}
				opt := opt
				opt.Seed = uint64(t)
				if Compare(in, opt).Verdict == Fail {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		}()
	}
	for t := 0; t < trials; t++ {
		next <- t
	}
	close(next)
	wg.Wait()
	return float64(failed) / float64(trials)
}

func TestSimulatedGate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulation")
	}
	check := func(name string, cfg simCfg, trials int, ok func(float64) bool, want string) {
		t.Helper()
		rate := simFailRate(cfg, trials, 7)
		t.Logf("%-38s K=%-2d R=%d  fail rate %.3f over %d trials", name, cfg.K, cfg.R, rate, trials)
		if !ok(rate) {
			t.Errorf("%s: fail rate %.3f, want %s", name, rate, want)
		}
	}
	check("A/A", simCfg{10, 3, "", 0}, 500, func(r float64) bool { return r <= 0.01 }, "≤ 0.01")
	check("+20% p99 (tail) regression", simCfg{10, 3, "tail", 0.2}, 150, func(r float64) bool { return r >= 0.9 }, "≥ 0.90")
	check("+20% whole-distribution shift", simCfg{10, 3, "shift", 0.2}, 150, func(r float64) bool { return r >= 0.9 }, "≥ 0.90")
	for _, kr := range [][2]int{{1, 1}, {10, 3}} {
		check("−20% shift (improvement)", simCfg{kr[0], kr[1], "shift", -0.2}, 150, func(r float64) bool { return r == 0 }, "0")
		check("−20% tail (improvement)", simCfg{kr[0], kr[1], "tail", -0.2}, 150, func(r float64) bool { return r == 0 }, "0")
	}
}

// TestPowerTable prints the README's table of false-fail rates and power.
// It is slow; run it with AIPERF_POWER_TABLE=1 go test -run PowerTable -v ./compare
func TestPowerTable(t *testing.T) {
	if os.Getenv("AIPERF_POWER_TABLE") == "" {
		t.Skip("set AIPERF_POWER_TABLE=1 to print the table")
	}
	const trials = 400
	var b strings.Builder
	fmt.Fprintf(&b, "| K | R | A/A false-fail | +10%% shift | +20%% shift | +10%% p99 | +20%% p99 |\n|---|---|---|---|---|---|---|\n")
	for _, k := range []int{1, 5, 10} {
		for _, r := range []int{1, 3} {
			row := []float64{
				simFailRate(simCfg{k, r, "", 0}, trials, 11),
				simFailRate(simCfg{k, r, "shift", 0.1}, trials, 12),
				simFailRate(simCfg{k, r, "shift", 0.2}, trials, 13),
				simFailRate(simCfg{k, r, "tail", 0.1}, trials, 14),
				simFailRate(simCfg{k, r, "tail", 0.2}, trials, 15),
			}
			fmt.Fprintf(&b, "| %d | %d |", k, r)
			for _, v := range row {
				fmt.Fprintf(&b, " %.1f%% |", 100*v)
			}
			b.WriteString("\n")
		}
	}
	t.Logf("%d trials per cell, tolerance 5%%, α 5%%, gating p50 and p99:\n%s", trials, b.String())
}
