package schedule

// Share returns an iterator over worker me's share of a built phase: the
// entries a RoundRobin of weights deals to me, so each worker's share is
// spread over the whole phase. The others' are passed over (their draws
// made, their bodies not). A hand-made phase's entries are all its own.
func (ph *Phase) Share(weights []int, me int) *Iter {
	it := ph.Iter()
	if ph.generated() && len(weights) > 1 {
		it.share, it.me = NewRoundRobin(weights), me
	}
	return it
}

// RoundRobin deals requests to workers in proportion to their weights,
// interleaved (smooth weighted round robin): with weights 3:2 it deals
// 0,1,0,1,0 and again.
type RoundRobin struct {
	weights, cur []int
	total        int
}

// NewRoundRobin returns a dealer over weights.
func NewRoundRobin(weights []int) *RoundRobin {
	r := &RoundRobin{weights: weights, cur: make([]int, len(weights))}
	for _, w := range weights {
		r.total += w
	}
	return r
}

// Next is the worker the next request goes to.
func (r *RoundRobin) Next() int {
	best := 0
	for j, w := range r.weights {
		r.cur[j] += w
		if r.cur[j] > r.cur[best] {
			best = j
		}
	}
	r.cur[best] -= r.total
	return best
}

// Counts is how many of the phase's entries a RoundRobin of weights deals
// each worker (Share's shares): one by one, or a multi-turn session whole.
func (ph *Phase) Counts(weights []int) []int {
	counts := make([]int, len(weights))
	rr := NewRoundRobin(weights)
	if ph.gen != nil && ph.gen.turns != nil {
		for _, n := range ph.gen.turns {
			counts[rr.Next()] += n
		}
		return counts
	}
	for range ph.Len() {
		counts[rr.Next()]++
	}
	return counts
}
