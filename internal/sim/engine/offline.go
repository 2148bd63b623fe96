package engine

import (
	"math"
	"math/rand/v2"
	"sort"
)

// A Load is a workload for Simulate: a closed loop of Concurrency streams
// (each sends its next request when its last one finishes), or an open
// loop of Poisson arrivals at Rate requests/s, seeded.
type Load struct {
	Requests int
	ISL, OSL int
	// OSLSpread, when set, draws each request's output length uniformly
	// from OSL ± OSLSpread (seeded), as requests that stop at their end of
	// sequence do.
	OSLSpread   int
	Concurrency int     // closed loop
	Rate        float64 // open loop (Poisson), requests/s
	Seed        uint64
	// Hashes gives request i's prompt block hashes (nil: every prompt its
	// own, so nothing is shared).
	Hashes func(i int) []uint64
	// Warmup requests (the first ones) are left out of the outcome, so a
	// closed loop's start-up burst is not in the figures.
	Warmup int
}

// Outcome is what a simulated run measured, as a client would.
type Outcome struct {
	TTFTms []float64 // per request, in request order
	ITLms  []float64 // per request with 2 or more tokens: (last − first)/(tokens − 1)
	// TokensPerSec is the output token throughput in steady state: for a
	// closed loop by Little's law over the measured requests (streams ×
	// mean tokens / mean latency: every stream is always busy, and a
	// deterministic model's start-up waves would bias a window's count);
	// for an open loop, the tokens emitted from the first measured arrival
	// to the last arrival, over that time.
	TokensPerSec float64
	// Over the whole run, every request counted, from the first arrival
	// to the last token (what `vllm bench serve` reports as its
	// duration): requests and output tokens per second.
	RequestsPerSec    float64
	WholeTokensPerSec float64
	Stats             Stats
}

// Median of xs (0 for none).
func Median(xs []float64) float64 { return Quantile(xs, 0.5) }

// Quantile is the p-quantile of xs by linear interpolation (0 for none).
func Quantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	x := p * float64(len(s)-1)
	i := int(math.Floor(x))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (x-float64(i))*(s[i+1]-s[i])
}

// Mean of xs (0 for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var t float64
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

// Simulate runs the load through an engine in virtual time, instantly.
func Simulate(cfg Config, l Load) Outcome {
	e := New(cfg)
	n := l.Requests
	seqs := make([]*Seq, n)
	arrival := make([]int64, n)
	first := make([]int64, n)
	last := make([]int64, n)
	lens := rand.New(rand.NewPCG(l.Seed, 0x0511))
	for i := range seqs {
		osl := l.OSL
		if l.OSLSpread > 0 {
			osl += lens.IntN(2*l.OSLSpread+1) - l.OSLSpread
		}
		seqs[i] = &Seq{ISL: l.ISL, OSL: max(osl, 1)}
		if l.Hashes != nil {
			seqs[i].Hashes = l.Hashes(i)
		}
		first[i] = -1
	}
	index := make(map[*Seq]int, n)
	for i, s := range seqs {
		index[s] = i
	}
	// A request arrives at arrival[i] and reaches the engine's queue at
	// ready[i], through the front end.
	fe := NewFrontend(cfg)
	ready := make([]int64, n)
	next := 0        // the next request not yet arrived
	var queued []int // arrived, not yet in the engine, in arrival order
	if l.Concurrency > 0 {
		for ; next < min(l.Concurrency, n); next++ {
			ready[next] = fe.Ready(0)
			queued = append(queued, next) // all at t = 0
		}
	} else {
		r := rand.New(rand.NewPCG(l.Seed, 0xa221))
		t := 0.0
		for i := range arrival {
			arrival[i] = int64(t * 1e9)
			t += r.ExpFloat64() / l.Rate
		}
	}
	var now int64
	done := 0
	type emission struct {
		t int64
		n int
	}
	var emits []emission
	for done < n {
		if l.Concurrency == 0 {
			for next < n && arrival[next] <= now {
				ready[next] = fe.Ready(arrival[next])
				queued = append(queued, next)
				next++
			}
		}
		k := 0
		for ; k < len(queued) && ready[queued[k]] <= now; k++ {
			i := queued[k]
			seqs[i].Arrival = arrival[i]
			e.Add(seqs[i])
		}
		queued = queued[k:]
		if e.Idle() {
			// Jump to the next request's reaching the engine.
			if len(queued) > 0 {
				now = ready[queued[0]]
				continue
			}
			if next < n && l.Concurrency == 0 {
				now = arrival[next]
				continue
			}
			break
		}
		dur, emitted, finished := e.Step()
		now += dur
		emits = append(emits, emission{now, len(emitted)})
		for _, s := range emitted {
			i := index[s]
			if first[i] < 0 {
				first[i] = now
			}
			last[i] = now
		}
		for range finished {
			done++
			if l.Concurrency > 0 && next < n {
				arrival[next] = now
				ready[next] = fe.Ready(now)
				queued = append(queued, next)
				next++
			}
		}
	}
	var o Outcome
	w := min(max(l.Warmup, 0), n-1)
	for i, s := range seqs {
		if first[i] < 0 || i < w {
			continue
		}
		o.TTFTms = append(o.TTFTms, float64(first[i]-arrival[i])/1e6)
		if s.Generated > 1 {
			o.ITLms = append(o.ITLms, float64(last[i]-first[i])/1e6/float64(s.Generated-1))
		}
	}
	if l.Concurrency > 0 {
		var toks, lat float64 // streams × mean tokens / mean latency: the counts cancel
		for i := w; i < n; i++ {
			if first[i] >= 0 {
				toks += float64(seqs[i].Generated)
				lat += float64(last[i] - arrival[i])
			}
		}
		if lat > 0 {
			o.TokensPerSec = float64(min(l.Concurrency, n)) * toks / lat * 1e9
		}
	} else if from, to := arrival[w], arrival[n-1]; to > from {
		var toks int64
		for _, em := range emits {
			if em.t > from && em.t <= to {
				toks += int64(em.n)
			}
		}
		o.TokensPerSec = float64(toks) / (float64(to-from) / 1e9)
	}
	var end int64
	var toks int64
	for i, s := range seqs {
		if first[i] >= 0 {
			end = max(end, last[i])
			toks += int64(s.Generated)
		}
	}
	if d := float64(end-arrival[0]) / 1e9; d > 0 {
		o.RequestsPerSec = float64(done) / d
		o.WholeTokensPerSec = float64(toks) / d
	}
	o.Stats = e.Stats()
	return o
}
