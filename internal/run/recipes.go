package run

import (
	"fmt"

	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/config"
)

// SearchAsked is what the search command's flags asked for: the
// objectives and the search's bounds, AIPerf's recipe, style and
// attainment fraction, the load searched (By: request-rate or
// concurrency) and its concurrency bounds; Streaming and Trace are the
// profile's, Set says whether a flag was given.
type SearchAsked struct {
	SLO                            SearchSLO
	Search                         capacity.Options
	TargetPct, Fraction            float64
	By, Recipe, Style              string
	ConcurrencyMin, ConcurrencyMax int
	Streaming, Trace               bool
	Set                            func(flag string) bool
}

// Plan is the search asked for: the load searched (config.SweepRequestRate
// or config.SweepConcurrency), the capacity search's options, and every
// problem with the flags at once, each naming its flag. AIPerf's recipes
// that ask for the highest load within objectives are a search by
// concurrency over 1 to 1000 unless bounded; the others, and AIPerf's
// Bayesian, Optuna and grid styles, are refused by name.
func (a SearchAsked) Plan() (param string, o capacity.Options, bad []string) {
	o = a.Search
	o.Target = a.TargetPct / 100
	if a.Set("itl-sla-ms") && a.Set("tpot-sla-ms") {
		bad = append(bad, "--itl-sla-ms and --tpot-sla-ms: give one (the same objective)")
	}
	if a.Set("slo-attainment-fraction") {
		if a.Set("search-attainment") {
			bad = append(bad, "--slo-attainment-fraction and --search-attainment: give one")
		}
		o.Target = a.Fraction
	}
	switch a.Style {
	case "", "smooth_isotonic", "monotonic":
	case "bo", "optuna", "grid":
		bad = append(bad, fmt.Sprintf("--search-style %s: AIPerf's Bayesian, Optuna and grid planners are not built here; this search (an isotonic fit with exact simultaneous intervals, replicates at the crossing) is smooth_isotonic's kind", a.Style))
	default:
		bad = append(bad, fmt.Sprintf("--search-style %q: want smooth_isotonic or monotonic", a.Style))
	}
	param = config.SweepRequestRate
	switch a.Recipe {
	case "":
	case "max-throughput-ttft-sla", "max-throughput-itl-sla", "max-concurrency-under-sla", "max-goodput-under-slo":
		a.By = "concurrency"
		if !a.Set("concurrency-max") {
			a.ConcurrencyMax = 1000 // (AIPerf's recipes' space: concurrency 1 to 1000)
		}
		need := map[string]bool{"max-throughput-ttft-sla": a.SLO.TTFTms > 0, "max-throughput-itl-sla": a.SLO.ITLms > 0}
		if ok, named := need[a.Recipe]; named && !ok {
			bad = append(bad, fmt.Sprintf("--search-recipe %s needs --%s", a.Recipe, map[string]string{"max-throughput-ttft-sla": "ttft-sla-ms", "max-throughput-itl-sla": "itl-sla-ms (or --tpot-sla-ms)"}[a.Recipe]))
		}
	case "prefill-ttft-curve":
		bad = append(bad, "--search-recipe prefill-ttft-curve is a sweep of input lengths, not a search: run it as `aiperf-action profile --search-recipe prefill-ttft-curve --isl-min N --isl-max M --streaming …`")
	case "concurrency-ramp", "decode-itl-curve", "pareto-sweep":
		bad = append(bad, fmt.Sprintf("--search-recipe %s: AIPerf's characterization recipes (a grid and a curve fitted to it) are not built here; a sweep of --concurrency 1,2,4,… (aiperf-action profile) gives the grid", a.Recipe))
	default:
		bad = append(bad, fmt.Sprintf("--search-recipe %q: want max-throughput-ttft-sla, max-throughput-itl-sla, max-concurrency-under-sla or max-goodput-under-slo", a.Recipe))
	}
	switch a.By {
	case "request-rate", "request_rate":
		if a.Set("concurrency-min") || a.Set("concurrency-max") {
			bad = append(bad, "--concurrency-min and --concurrency-max bound a search by concurrency: add --search-by concurrency")
		}
	case "concurrency":
		param = config.SweepConcurrency
		if a.Set("search-start") || a.Set("search-max") {
			bad = append(bad, "a search by concurrency starts at --concurrency-min and ends at --concurrency-max (not --search-start, --search-max)")
		}
		if a.ConcurrencyMin < 1 || a.ConcurrencyMax != 0 && a.ConcurrencyMax < a.ConcurrencyMin {
			bad = append(bad, fmt.Sprintf("--concurrency-min %d and --concurrency-max %d: want 1 ≤ min ≤ max", a.ConcurrencyMin, a.ConcurrencyMax))
		}
		o.Start, o.Max = float64(a.ConcurrencyMin), float64(a.ConcurrencyMax)
	default:
		bad = append(bad, fmt.Sprintf("--search-by %q: want request-rate or concurrency", a.By))
	}
	if a.SLO == (SearchSLO{}) {
		bad = append(bad, "give at least one objective: --ttft-sla-ms, --itl-sla-ms or --e2e-sla-ms")
	}
	if (a.SLO.TTFTms > 0 || a.SLO.ITLms > 0) && !a.Streaming {
		bad = append(bad, "--ttft-sla-ms and --itl-sla-ms need --streaming (a first token is only seen in a stream)")
	}
	if !(o.Target > 0 && o.Target < 1) {
		bad = append(bad, fmt.Sprintf("--search-attainment %g: want a percentage strictly between 0 and 100", a.TargetPct))
	}
	if a.Set("request-rate") || a.Set("concurrency") || a.Set("benchmark-duration") || a.Set("fixed-schedule") || a.Trace {
		bad = append(bad, "the search sets each probe's --request-rate (an open loop of --request-count requests): leave out --request-rate, --concurrency, --benchmark-duration and traces")
	}
	return param, o, bad
}
