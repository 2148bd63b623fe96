package run

import (
	"encoding/json"
	"path/filepath"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// SearchHistoryFile is AIPerf's record of a search, written beside
// search.json in AIPerf's shape for scripts that read AIPerf's.
const SearchHistoryFile = "search_history.json"

// WriteSearchHistory writes search_history.json from a search's record:
// AIPerf's config (the search space, the SLA as per-request objectives
// at the target attainment, the recipe), one iteration a probe (its load
// as AIPerf's dotted path, its attainment as the objective), the best
// trial (the highest load the interval says holds), the boundary
// summary (the capacity and its interval) and why it stopped.
func WriteSearchHistory(dir string, doc *SearchDoc, recipe string, lo, hi float64) error {
	path := "phases.profiling.request_rate"
	kind := "real"
	if doc.Param == "concurrency" {
		path, kind = "phases.profiling.concurrency", "int"
	}
	var filters []map[string]any
	for _, f := range []struct {
		tag string
		v   float64
	}{{"time_to_first_token", doc.SLO.TTFTms}, {"inter_token_latency", doc.SLO.ITLms}, {"request_latency", doc.SLO.E2Ems}} {
		if f.v > 0 {
			filters = append(filters, map[string]any{"metric_tag": f.tag, "op": "le", "threshold": f.v, "unit": "ms",
				"stat": "per-request, every objective at once", "attainment": doc.Target})
		}
	}
	var iters []map[string]any
	bestIdx := -1
	feasible := 0
	e := doc.Estimate
	for i, p := range doc.Probes {
		ok := p.Attainment() >= doc.Target
		if ok {
			feasible++
		}
		iters = append(iters, map[string]any{"iteration_idx": i, "variation_values": map[string]float64{path: p.Load},
			"objective_values": []float64{p.Attainment()}, "requests": p.N, "good": p.Good, "replicate": p.Replicate, "feasible": ok, "dir": p.Dir})
		if e.LoBounded && p.Load == e.Lo && bestIdx < 0 {
			bestIdx = i
		}
	}
	var best []map[string]any
	if bestIdx >= 0 {
		p := doc.Probes[bestIdx]
		best = append(best, map[string]any{"iteration_idx": bestIdx, "variation_values": map[string]float64{path: p.Load},
			"objective_values": []float64{p.Attainment()}, "feasible": true, "feasible_count": feasible, "pareto_rank": 0})
	}
	h := map[string]any{
		"config": map[string]any{
			"planner":        "aiperf-action capacity: staircase, isotonic fit, exact simultaneous intervals, replicates at the crossing",
			"objectives":     []map[string]any{{"metric": "slo_attainment", "stat": "share of requests", "direction": "MAXIMIZE_LOAD", "threshold": doc.Target}},
			"search_space":   []map[string]any{{"path": path, "lo": lo, "hi": hi, "kind": kind}},
			"sla_filters":    filters,
			"max_iterations": len(doc.Probes),
		},
		"iterations":  iters,
		"best_trials": best,
		"boundary_summary": map[string]any{"parameter": path, "capacity": e.Capacity, "lo": e.Lo, "hi": e.Hi, "lo_bounded": e.LoBounded,
			"hi_bounded": e.HiBounded, "confidence": e.Confidence, "cliff": e.Cliff},
		"recipe":             nilIfEmpty(recipe),
		"convergence_reason": nilIfEmpty(doc.Stopped),
	}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	return result.WriteFileAtomic(filepath.Join(dir, SearchHistoryFile), append(b, '\n'))
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
