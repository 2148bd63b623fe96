package controller

import (
	"fmt"
	"sort"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// Shards splits every phase of plan across workers, the way k6 splits
// executors into segments: a ceiling is divided evenly (so there are never
// more workers than the smallest ceiling), entries are interleaved over the
// plan in proportion to each worker's share, and a cycling pool goes whole
// to every worker, which takes every W-th request of it. Each shard starts
// as a copy of base (where and how to send) and says which plan it is a
// share of: each worker generates its own entries from it, so no process
// ever holds the whole plan. With the profile's --worker-weights, the
// requests and each ceiling are dealt in proportion to them (a machine
// twice the size takes twice the share), and the workers are as many as
// the weights (CheckWeights: every ceiling holds one a worker).
func Shards(plan *schedule.Plan, p *config.Profile, base wire.ShardSpec, workers int) []*wire.ShardSpec {
	given := p.WorkerWeights
	if len(given) > 0 {
		workers = len(given)
	}
	for _, ph := range plan.Phases {
		if len(given) > 0 {
			break
		}
		if ph.Ceiling > 0 {
			workers = min(workers, ph.Ceiling)
		}
		if ph.Prefill > 0 {
			workers = min(workers, ph.Prefill) // (each worker holds a share of at least one)
		}
	}
	workers = max(workers, 1)
	shards := make([]*wire.ShardSpec, workers)
	for i := range shards {
		s := base
		s.Phases = nil
		s.Plan = &wire.PlanSpec{Schema: wire.PlanSchema, Profile: p, Seed: plan.Seed, InputDigest: plan.InputDigest}
		if plan.Tokenizer != nil {
			s.Plan.Tokenizer = plan.Tokenizer.Digest()
		}
		shards[i] = &s
	}
	for _, ph := range plan.Phases {
		weights := make([]int, workers)
		for i := range weights {
			weights[i] = 1
		}
		if len(given) > 0 {
			copy(weights, given)
		}
		if ph.Ceiling > 0 {
			weights = Split(ph.Ceiling, workers)
			if len(given) > 0 {
				weights = Proportional(ph.Ceiling, given)
			}
		}
		counts := make([]int, workers)
		if ph.Cycle {
			for w := range counts {
				counts[w] = ph.Len()
			}
		} else {
			counts = ph.Counts(weights)
		}
		for w := range shards {
			part := wire.PhaseShard{Phase: ph, Stride: workers, Offset: w, Count: counts[w], Total: ph.Len(), Weights: weights}
			part.Entries = nil
			if ph.Ceiling > 0 {
				part.Concurrency = weights[w]
			}
			if ph.Prefill > 0 {
				part.Prefill = Split(ph.Prefill, workers)[w]
				if len(given) > 0 {
					part.Prefill = Proportional(ph.Prefill, given)[w]
				}
			}
			shards[w].Phases = append(shards[w].Phases, part)
		}
	}
	return shards
}

// CheckWeights says why --worker-weights cannot split plan: a ceiling (or
// a prefill limit) below the number of workers leaves one without a slot.
func CheckWeights(plan *schedule.Plan, weights []int) error {
	for _, ph := range plan.Phases {
		for _, c := range []struct {
			name string
			v    int
		}{{"concurrency", ph.Ceiling}, {"prefill concurrency", ph.Prefill}} {
			if c.v > 0 && c.v < len(weights) {
				return fmt.Errorf("--worker-weights: the %s phase's %s %d is below the %d workers: each needs a slot", ph.Name, c.name, c.v, len(weights))
			}
		}
	}
	return nil
}

// Proportional divides c across workers in proportion to weights (largest
// remainders first), each at least one where c allows.
func Proportional(c int, weights []int) []int {
	total := 0
	for _, w := range weights {
		total += w
	}
	out := make([]int, len(weights))
	rem := make([]int, len(weights)) // each quota's remainder, in units of 1/total
	given := 0
	for i, w := range weights {
		out[i] = c * w / total
		rem[i] = c * w % total
		given += out[i]
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
	for k := 0; given < c; k++ {
		out[order[k%len(order)]]++
		given++
	}
	// None at zero while another has two or more.
	for i := range out {
		for out[i] == 0 {
			j := 0
			for k := range out {
				if out[k] > out[j] {
					j = k
				}
			}
			if out[j] < 2 {
				break
			}
			out[j]--
			out[i]++
		}
	}
	return out
}

// Split divides concurrency c across n workers (the first c%n get one
// more), like k6 execution segments. n is capped at c.
func Split(c, n int) []int {
	n = max(1, min(n, c))
	out := make([]int, n)
	for i := range out {
		out[i] = c / n
		if i < c%n {
			out[i]++
		}
	}
	return out
}
