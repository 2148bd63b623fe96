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
	o := newOffline(cfg, l)
	o.run()
	return o.outcome()
}

// emission is how many tokens one engine step emitted, and when.
type emission struct {
	t int64
	n int
}

// offline is one Simulate: the requests, when each arrived, reached the
// engine, and saw its first and last token, in virtual time.
type offline struct {
	l       Load
	e       *Engine
	fe      *Frontend
	n       int
	seqs    []*Seq
	index   map[*Seq]int
	arrival []int64
	ready   []int64 // when request i reaches the engine's queue, through the front end
	first   []int64
	last    []int64
	next    int   // the next request not yet arrived
	queued  []int // arrived, not yet in the engine, in arrival order
	emits   []emission
	done    int
}

// newOffline lays out the requests: their lengths, and their arrivals
// (a closed loop's first Concurrency at 0, the rest as slots free up; an
// open loop's on Poisson gaps).
func newOffline(cfg Config, l Load) *offline {
	n := l.Requests
	o := &offline{l: l, e: New(cfg), fe: NewFrontend(cfg), n: n, seqs: make([]*Seq, n), index: make(map[*Seq]int, n),
		arrival: make([]int64, n), ready: make([]int64, n), first: make([]int64, n), last: make([]int64, n)}
	lens := rand.New(rand.NewPCG(l.Seed, 0x0511))
	for i := range o.seqs {
		osl := l.OSL
		if l.OSLSpread > 0 {
			osl += lens.IntN(2*l.OSLSpread+1) - l.OSLSpread
		}
		o.seqs[i] = &Seq{ISL: l.ISL, OSL: max(osl, 1)}
		if l.Hashes != nil {
			o.seqs[i].Hashes = l.Hashes(i)
		}
		o.first[i] = -1
		o.index[o.seqs[i]] = i
	}
	if l.Concurrency > 0 {
		for ; o.next < min(l.Concurrency, n); o.next++ {
			o.ready[o.next] = o.fe.Ready(0)
			o.queued = append(o.queued, o.next) // all at t = 0
		}
	} else {
		r := rand.New(rand.NewPCG(l.Seed, 0xa221))
		t := 0.0
		for i := range o.arrival {
			o.arrival[i] = int64(t * 1e9)
			t += r.ExpFloat64() / l.Rate
		}
	}
	return o
}

// run steps the engine until every request is done, jumping over idle
// time to the next arrival.
func (o *offline) run() {
	l, e, n := o.l, o.e, o.n
	var now int64
	for o.done < n {
		if l.Concurrency == 0 {
			for o.next < n && o.arrival[o.next] <= now {
				o.ready[o.next] = o.fe.Ready(o.arrival[o.next])
				o.queued = append(o.queued, o.next)
				o.next++
			}
		}
		k := 0
		for ; k < len(o.queued) && o.ready[o.queued[k]] <= now; k++ {
			i := o.queued[k]
			o.seqs[i].Arrival = o.arrival[i]
			e.Add(o.seqs[i])
		}
		o.queued = o.queued[k:]
		if e.Idle() {
			// Jump to the next request's reaching the engine.
			if len(o.queued) > 0 {
				now = o.ready[o.queued[0]]
				continue
			}
			if o.next < n && l.Concurrency == 0 {
				now = o.arrival[o.next]
				continue
			}
			break
		}
		dur, emitted, finished := e.Step()
		now += dur
		o.emits = append(o.emits, emission{now, len(emitted)})
		for _, s := range emitted {
			i := o.index[s]
			if o.first[i] < 0 {
				o.first[i] = now
			}
			o.last[i] = now
		}
		for range finished {
			o.done++
			if l.Concurrency > 0 && o.next < n {
				o.arrival[o.next] = now
				o.ready[o.next] = o.fe.Ready(now)
				o.queued = append(o.queued, o.next)
				o.next++
			}
		}
	}
}

// outcome is what the run measured, the first Warmup requests left out
// of the latencies and the throughput.
func (o *offline) outcome() Outcome {
	l, n, seqs, first, last, arrival := o.l, o.n, o.seqs, o.first, o.last, o.arrival
	var out Outcome
	w := min(max(l.Warmup, 0), n-1)
	for i, s := range seqs {
		if first[i] < 0 || i < w {
			continue
		}
		out.TTFTms = append(out.TTFTms, float64(first[i]-arrival[i])/1e6)
		if s.Generated > 1 {
			out.ITLms = append(out.ITLms, float64(last[i]-first[i])/1e6/float64(s.Generated-1))
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
			out.TokensPerSec = float64(min(l.Concurrency, n)) * toks / lat * 1e9
		}
	} else if from, to := arrival[w], arrival[n-1]; to > from {
		var toks int64
		for _, em := range o.emits {
			if em.t > from && em.t <= to {
				toks += int64(em.n)
			}
		}
		out.TokensPerSec = float64(toks) / (float64(to-from) / 1e9)
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
		out.RequestsPerSec = float64(o.done) / d
		out.WholeTokensPerSec = float64(toks) / d
	}
	out.Stats = o.e.Stats()
	return out
}
