package controller

import (
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
// ever holds the whole plan.
func Shards(plan *schedule.Plan, p *config.Profile, base wire.ShardSpec, workers int) []*wire.ShardSpec {
	for _, ph := range plan.Phases {
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
		if ph.Ceiling > 0 {
			weights = Split(ph.Ceiling, workers)
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
			}
			shards[w].Phases = append(shards[w].Phases, part)
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
