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
	Requests    int
	ISL, OSL    int
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
	Stats        Stats
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
	for i := range seqs {
		seqs[i] = &Seq{ISL: l.ISL, OSL: l.OSL}
		if l.Hashes != nil {
			seqs[i].Hashes = l.Hashes(i)
		}
		first[i] = -1
	}
	index := make(map[*Seq]int, n)
	for i, s := range seqs {
		index[s] = i
	}
	next := 0 // the next request not yet arrived
	var pending []int
	if l.Concurrency > 0 {
		for ; next < min(l.Concurrency, n); next++ {
			pending = append(pending, next) // all at t = 0
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
				pending = append(pending, next)
				next++
			}
		}
		for _, i := range pending {
			if l.Concurrency > 0 {
				arrival[i] = now
			}
			seqs[i].Arrival = arrival[i]
			e.Add(seqs[i])
		}
		pending = pending[:0]
		if e.Idle() {
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
				pending = append(pending, next)
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
	o.Stats = e.Stats()
	return o
}
