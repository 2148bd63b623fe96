package compare

import (
	"cmp"
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
	// Job-level noise: with perJob > 0 the baseline's runs come perJob to a
	// job and the candidate's R runs from one job; each job shifts its runs
	// by its own factor (jobNoise, lognormal) and each run by runNoise.
	// perJob 0: independent runs with simRunNoise, as before.
	perJob             int
	jobNoise, runNoise float64
	unlabeled          bool // the runs don't say their job: the one-level model, as before jobs
	noPrior            bool // the job variance without JobNoisePrior, as before it
	// paired: both arms run side by side in one job (R pairs; K unused).
	paired bool
	// maxR > R: adaptive, R more runs (pairs) at each look while
	// inconclusive, up to maxR, at the levels of Looks.
	maxR int
	// perWindow: requests per window (0: simPerWindow); stats: the
	// quantiles gated (nil: p50 and p99).
	perWindow int
	stats     []string
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

func simRun(r *rand.Rand, cfg simCfg, change string, size float64) Sample {
	return simJobRun(r, cfg, change, size, 1, simRunNoise)
}

// simJobRun is simRun with its job's factor and its own run noise.
func simJobRun(r *rand.Rand, cfg simCfg, change string, size, job, runNoise float64) Sample {
	run := job * math.Exp(runNoise*r.NormFloat64())
	e := simWinNoise * r.NormFloat64()
	var s Sample
	xs := make([]float64, cmp.Or(cfg.perWindow, simPerWindow))
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
	fail, _ := simRates(cfg, trials, seed)
	return fail
}

// simRuns draws one side's runs: K independent ones, or perJob to a job.
func simRuns(r *rand.Rand, cfg simCfg, n int, side, change string, size float64) []Sample {
	var out []Sample
	job := 1.0
	for k := 0; k < n; k++ {
		if cfg.perJob == 0 {
			out = append(out, simRun(r, cfg, change, size))
			continue
		}
		if k%cfg.perJob == 0 {
			job = math.Exp(cfg.jobNoise * r.NormFloat64())
		}
		s := simJobRun(r, cfg, change, size, job, cfg.runNoise)
		if !cfg.unlabeled {
			s.Job = fmt.Sprintf("%s-%d", side, k/cfg.perJob)
		}
		out = append(out, s)
	}
	return out
}

// simRates runs trials comparisons and returns the fractions that FAILed
// and that PASSed overall (gating p50 and p99 at a 5% tolerance).
func simRates(cfg simCfg, trials int, seed uint64) (fail, pass float64) {
	fail, pass, _ = simAdaptive(cfg, trials, seed)
	return fail, pass
}

// simAdaptive is simRates that also returns the mean candidate runs (pairs)
// a comparison took.
func simAdaptive(cfg simCfg, trials int, seed uint64) (fail, pass, meanRuns float64) {
	opt := DefaultOptions
	opt.Resamples = 100
	if cfg.noPrior {
		opt.JobNoisePrior = 0
	}
	var failed, passed, runs int
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for g := 0; g < runtime.GOMAXPROCS(0); g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range next {
				r := rand.New(rand.NewPCG(seed, uint64(t)))
				most := max(cfg.R, cfg.maxR)
				var base, cand []Sample
				if cfg.paired {
					job := math.Exp(cfg.jobNoise * r.NormFloat64()) // one job for both arms
					for k := 0; k < most; k++ {
						base = append(base, simJobRun(r, cfg, "", 0, job, cfg.runNoise))
						cand = append(cand, simJobRun(r, cfg, cfg.change, cfg.size, job, cfg.runNoise))
					}
				} else {
					base = simRuns(r, cfg, cfg.K, "base", "", 0)
					candCfg := cfg
					if cfg.perJob > 0 {
						candCfg.perJob = most // the candidate's runs are one job
					}
					cand = simRuns(r, candCfg, most, "cand", cfg.change, cfg.size)
				}
				var v Verdict
				n := 0
				looks := LooksAgainst(cfg.R, most, cfg.K, opt.Alpha) // as the gate plans them
				if cfg.paired {
					looks = Looks(cfg.R, most, opt.Alpha)
				}
				for _, look := range looks {
					n = look.N
					b := base
					if cfg.paired {
						b = base[:n]
					}
					var in []Input
					stats := cfg.stats
					if stats == nil {
						stats = []string{"p50", "p99"}
					}
					for _, stat := range stats {
						in = append(in, Input{Spec: Spec{Metric: "latency", Stat: stat, Tolerance: 0.05}, Baseline: b, Candidate: cand[:n], Paired: cfg.paired})
					}
					opt := opt
					opt.Seed, opt.Alpha, opt.PassAlpha = uint64(t), look.Alpha, look.PassAlpha
					if v = Compare(in, opt).Verdict; v != Inconclusive {
						break
					}
				}
				mu.Lock()
				runs += n
				switch v {
				case Fail:
					failed++
				case Pass:
					passed++
				}
				mu.Unlock()
			}
		}()
	}
	for t := 0; t < trials; t++ {
		next <- t
	}
	close(next)
	wg.Wait()
	return float64(failed) / float64(trials), float64(passed) / float64(trials), float64(runs) / float64(trials)
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
	check("A/A", simCfg{K: 10, R: 3, change: "", size: 0}, 500, func(r float64) bool { return r <= 0.01 }, "≤ 0.01")
	check("+20% p99 (tail) regression", simCfg{K: 10, R: 3, change: "tail", size: 0.2}, 150, func(r float64) bool { return r >= 0.9 }, "≥ 0.90")
	check("+20% whole-distribution shift", simCfg{K: 10, R: 3, change: "shift", size: 0.2}, 150, func(r float64) bool { return r >= 0.9 }, "≥ 0.90")
	for _, kr := range [][2]int{{1, 1}, {10, 3}} {
		check("−20% shift (improvement)", simCfg{K: kr[0], R: kr[1], change: "shift", size: -0.2}, 150, func(r float64) bool { return r == 0 }, "0")
		check("−20% tail (improvement)", simCfg{K: kr[0], R: kr[1], change: "tail", size: -0.2}, 150, func(r float64) bool { return r == 0 }, "0")
	}
}

// Runs come in jobs (3% job-to-job noise, 1% run-to-run; the baseline's 10
// runs stored 3 to a job, the candidate's 3 runs one job): a model with
// the job in it keeps false alarms and a PASS at the tolerance rare, which
// the one-level model did not (it treated one job's runs as independent).
func TestSimulatedGateJobs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulation")
	}
	jobs := func(change string, size float64, unlabeled bool) simCfg {
		return simCfg{K: 10, R: 3, change: change, size: size, perJob: 3, jobNoise: 0.03, runNoise: 0.01, unlabeled: unlabeled}
	}
	check := func(name string, cfg simCfg, trials int, ok func(fail, pass float64) bool, want string) {
		t.Helper()
		fail, pass := simRates(cfg, trials, 17)
		t.Logf("%-40s fail %.3f, pass %.3f over %d trials", name, fail, pass, trials)
		if !ok(fail, pass) {
			t.Errorf("%s: fail %.3f, pass %.3f; want %s", name, fail, pass, want)
		}
	}
	check("A/A", jobs("", 0, false), 300, func(f, _ float64) bool { return f <= 0.01 }, "fail ≤ 0.01")
	check("+5% shift (at the tolerance)", jobs("shift", 0.05, false), 200, func(_, p float64) bool { return p <= 0.05 }, "pass ≤ 0.05")
	check("−10% shift (improvement)", jobs("shift", -0.1, false), 150, func(f, _ float64) bool { return f == 0 }, "fail 0")
	// The job-noise prior buys the power that 4 jobs' worth of job variance
	// (3 df) could not: 86% before it.
	check("+20% shift", jobs("shift", 0.2, false), 150, func(f, _ float64) bool { return f >= 0.9 }, "fail ≥ 0.90")
	check("−20% tail (improvement)", jobs("tail", -0.2, false), 150, func(f, _ float64) bool { return f == 0 }, "fail 0")
	// Paired A/B in one job (5 pairs): the job's noise cancels.
	paired := simCfg{R: 5, paired: true, jobNoise: 0.03, runNoise: 0.01}
	check("paired A/A (5 pairs)", paired, 200, func(f, _ float64) bool { return f <= 0.01 }, "fail ≤ 0.01")
	at := paired
	at.change, at.size = "shift", 0.05
	check("paired +5% shift (at the tolerance)", at, 200, func(_, p float64) bool { return p <= 0.05 }, "pass ≤ 0.05")
	// Adaptive repeats (3 runs a look, up to 9) keep the error control
	// across their looks.
	adaptive := simCfg{K: 10, R: 3, maxR: 9}
	check("adaptive A/A (3 to 9 runs)", adaptive, 150, func(f, _ float64) bool { return f <= 0.01 }, "fail ≤ 0.01")
	adaptive.change, adaptive.size = "shift", 0.05
	check("adaptive +5% shift (at the tolerance)", adaptive, 150, func(_, p float64) bool { return p <= 0.05 }, "pass ≤ 0.05")
	// The one-level model on the same runs, for contrast (not asserted
	// beyond what it shows: it fails unchanged candidates).
	fail, _ := simRates(jobs("", 0, true), 300, 17)
	t.Logf("%-40s fail %.3f over 300 trials", "A/A, one-level model (jobs not told)", fail)
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
				simFailRate(simCfg{K: k, R: r, change: "", size: 0}, trials, 11),
				simFailRate(simCfg{K: k, R: r, change: "shift", size: 0.1}, trials, 12),
				simFailRate(simCfg{K: k, R: r, change: "shift", size: 0.2}, trials, 13),
				simFailRate(simCfg{K: k, R: r, change: "tail", size: 0.1}, trials, 14),
				simFailRate(simCfg{K: k, R: r, change: "tail", size: 0.2}, trials, 15),
			}
			fmt.Fprintf(&b, "| %d | %d |", k, r)
			for _, v := range row {
				fmt.Fprintf(&b, " %.1f%% |", 100*v)
			}
			b.WriteString("\n")
		}
	}
	t.Logf("%d trials per cell, tolerance 5%%, α 5%%, gating p50 and p99:\n%s", trials, b.String())

	// FAIL and PASS rates, independent runs and runs in jobs.
	var j strings.Builder
	fmt.Fprintf(&j, "| noise | model | A/A | +5%% (at the tolerance) | −10%% | +10%% shift | +20%% shift | +20%% p99 |\n|---|---|---|---|---|---|---|---|\n")
	cell := func(cfg simCfg, seed uint64) string {
		tr := trials
		if cfg.perWindow > 0 {
			tr = trials / 2 // five times the requests a run
		}
		f, p, n := simAdaptive(cfg, tr, seed)
		if cfg.maxR > cfg.R {
			return fmt.Sprintf(" %.1f%% / %.1f%% (%.1f runs) |", 100*f, 100*p, n)
		}
		return fmt.Sprintf(" %.1f%% / %.1f%% |", 100*f, 100*p)
	}
	for _, row := range []struct {
		noise, model string
		cfg          simCfg
	}{
		{"3% per run", "runs", simCfg{K: 10, R: 3}},
		{"3% per run", "runs, adaptive 3 to 9", simCfg{K: 10, R: 3, maxR: 9}},
		{"3% per run, 10,000 requests a run", "runs", simCfg{K: 10, R: 3, perWindow: 1000}},
		{"3% per run, 10,000 requests a run", "runs, adaptive 3 to 9", simCfg{K: 10, R: 3, maxR: 9, perWindow: 1000}},
		{"3% per run, 10,000 requests a run", "runs, adaptive 3 to 12", simCfg{K: 10, R: 3, maxR: 12, perWindow: 1000}},
		{"3% job, 1% run, 3 runs a job", "one level (jobs not told)", simCfg{K: 10, R: 3, perJob: 3, jobNoise: 0.03, runNoise: 0.01, unlabeled: true}},
		{"3% job, 1% run, 3 runs a job", "jobs and runs, no prior", simCfg{K: 10, R: 3, perJob: 3, jobNoise: 0.03, runNoise: 0.01, noPrior: true}},
		{"3% job, 1% run, 3 runs a job", "jobs and runs", simCfg{K: 10, R: 3, perJob: 3, jobNoise: 0.03, runNoise: 0.01}},
		{"3% job, 1% run, 3 runs a job, 10,000 requests a run", "jobs and runs", simCfg{K: 10, R: 3, perJob: 3, jobNoise: 0.03, runNoise: 0.01, perWindow: 1000}},
		{"6% job, 1% run, 3 runs a job", "jobs and runs, no prior", simCfg{K: 10, R: 3, perJob: 3, jobNoise: 0.06, runNoise: 0.01, noPrior: true}},
		{"6% job, 1% run, 3 runs a job", "jobs and runs", simCfg{K: 10, R: 3, perJob: 3, jobNoise: 0.06, runNoise: 0.01}},
		{"3% job, 1% run", "paired A/B, 3 pairs in one job", simCfg{R: 3, paired: true, jobNoise: 0.03, runNoise: 0.01}},
		{"3% job, 1% run", "paired A/B, 5 pairs in one job", simCfg{R: 5, paired: true, jobNoise: 0.03, runNoise: 0.01}},
		{"3% job, 1% run", "paired A/B, 8 pairs in one job", simCfg{R: 8, paired: true, jobNoise: 0.03, runNoise: 0.01}},
		{"3% job, 1% run", "paired A/B, adaptive 3 to 12 pairs", simCfg{R: 3, maxR: 12, paired: true, jobNoise: 0.03, runNoise: 0.01}},
		{"3% job, 1% run, 10,000 requests a run", "paired A/B, 5 pairs in one job", simCfg{R: 5, paired: true, jobNoise: 0.03, runNoise: 0.01, perWindow: 1000}},
		{"3% job, 1% run, 10,000 requests a run", "paired A/B, adaptive 3 to 12 pairs", simCfg{R: 3, maxR: 12, paired: true, jobNoise: 0.03, runNoise: 0.01, perWindow: 1000}},
	} {
		fmt.Fprintf(&j, "| %s | %s |", row.noise, row.model)
		for i, c := range []struct {
			change string
			size   float64
		}{{"", 0}, {"shift", 0.05}, {"shift", -0.1}, {"shift", 0.1}, {"shift", 0.2}, {"tail", 0.2}} {
			cfg := row.cfg
			cfg.change, cfg.size = c.change, c.size
			j.WriteString(cell(cfg, 21+uint64(i)))
		}
		j.WriteString("\n")
	}
	t.Logf("K=10, R=3, %d trials per cell (%d with 10,000 requests a run), FAIL / PASS rates:\n%s", trials, trials/2, j.String())
}
