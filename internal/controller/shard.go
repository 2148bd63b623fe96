package controller

import (
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// Shards splits every phase of plan across workers, the way k6 splits
// executors into segments: a ceiling is divided evenly (so there are never
// more workers than the smallest ceiling), entries are interleaved over the
// plan in proportion to each worker's share, and a cycling pool goes whole
// to every worker, which takes every W-th request of it. Each shard starts
// as a copy of base (where and how to send).
func Shards(plan *schedule.Plan, base wire.ShardSpec, workers int) []*wire.ShardSpec {
	for _, ph := range plan.Phases {
		if ph.Ceiling > 0 {
			workers = min(workers, ph.Ceiling)
		}
	}
	workers = max(workers, 1)
	shards := make([]*wire.ShardSpec, workers)
	for i := range shards {
		s := base
		s.Phases = nil
		shards[i] = &s
	}
	for _, ph := range plan.Phases {
		weights := make([]int, workers)
		for i := range weights {
			weights[i] = 1
		}
		if ph.Ceiling > 0 {
			weights = Split(ph.Ceiling, workers)
		}
		parts := make([]wire.PhaseShard, workers)
		for w := range parts {
			parts[w] = wire.PhaseShard{Phase: ph, Stride: workers, Offset: w}
			parts[w].Entries = nil
			if ph.Ceiling > 0 {
				parts[w].Concurrency = weights[w]
			}
		}
		if ph.Cycle {
			for w := range parts {
				parts[w].Entries = ph.Entries
			}
		} else {
			for i, w := range Assign(len(ph.Entries), weights) {
				parts[w].Entries = append(parts[w].Entries, ph.Entries[i])
			}
		}
		for w := range shards {
			shards[w].Phases = append(shards[w].Phases, parts[w])
		}
	}
	return shards
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

// Assign gives each of count requests to a worker in proportion to its
// concurrency, interleaved (smooth weighted round robin), so every worker's
// share is spread over the whole plan. It returns worker indices per request.
func Assign(count int, weights []int) []int {
	total := 0
	for _, w := range weights {
		total += w
	}
	cur := make([]int, len(weights))
	out := make([]int, count)
	for i := range out {
		best := 0
		for j, w := range weights {
			cur[j] += w
			if cur[j] > cur[best] {
				best = j
			}
		}
		cur[best] -= total
		out[i] = best
	}
	return out
}
