package run

import (
	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/config"
)

// SearchFlags are the search's own flags (the search command's, and a
// gate scenario's search: keys), bound to a flag set by BindSearch.
type SearchFlags struct {
	SLO                     SearchSLO
	Search                  capacity.Options
	TargetPct, Fraction     float64
	By, Recipe, Style       string
	ConcurrencyMin, ConcMax int
	fs                      *pflag.FlagSet
}

// BindSearch binds the search's flags to fs, in the help's Search group.
func BindSearch(fs *pflag.FlagSet) *SearchFlags {
	f := &SearchFlags{fs: fs}
	slo, o := &f.SLO, &f.Search
	fs.Float64Var(&slo.TTFTms, "ttft-sla-ms", 0, "objective: time to first token, ms from when the request was due (AIPerf's name)")
	fs.Float64Var(&slo.ITLms, "itl-sla-ms", 0, "objective: inter-token latency, ms (AIPerf's name)")
	fs.Float64Var(&slo.E2Ems, "e2e-sla-ms", 0, "objective: request latency, ms from when the request was due (AIPerf's name)")
	fs.Float64Var(&f.TargetPct, "search-attainment", 95, "percent of a probe's requests that must meet every objective (errors count as misses)")
	fs.Float64Var(&o.Start, "search-start", 1, "the first probe's request rate, requests/s")
	fs.Float64Var(&o.Max, "search-max", 0, "the highest request rate probed (0: none but the probe budget)")
	fs.Float64Var(&o.Step, "search-step", 1.5, "the staircase's factor between probes, until the attainment crosses the target")
	fs.Float64Var(&o.Precision, "search-precision", 0.05, "stop once the capacity's interval is at most this share of it")
	fs.IntVar(&o.MaxProbes, "search-max-iterations", 25, "the most probes (AIPerf's name)")
	fs.Float64Var(&o.Confidence, "confidence-level", 0.95, "of the capacity's interval (AIPerf's name)")
	fs.StringVar(&f.By, "search-by", "request-rate", "the load searched: request-rate (requests/s, an open loop, latencies from when each request was due) or concurrency (streams, a closed loop of whole numbers)")
	fs.IntVar(&f.ConcurrencyMin, "concurrency-min", 1, "with --search-by concurrency: the first probe's concurrency (AIPerf's name)")
	fs.IntVar(&f.ConcMax, "concurrency-max", 0, "with --search-by concurrency: the highest probed (0: none but the budget; AIPerf's recipes: 1000)")
	fs.StringVar(&f.Recipe, "search-recipe", "", "AIPerf's recipes that ask for the highest load within objectives: max-throughput-ttft-sla, max-throughput-itl-sla, max-concurrency-under-sla, max-goodput-under-slo (each a search by concurrency; `aiperf-action profile --search-recipe …` runs it too)")
	fs.StringVar(&f.Style, "search-style", "", "AIPerf's: smooth_isotonic or monotonic (this search is an isotonic fit with exact intervals either way)")
	fs.Float64Var(&slo.ITLms, "tpot-sla-ms", 0, "alias of --itl-sla-ms (AIPerf's name)")
	fs.Float64Var(&f.Fraction, "slo-attainment-fraction", 0, "the share (0 to 1) of requests that must meet every objective (AIPerf's name; --search-attainment in percent)")
	for _, n := range SearchFlagNames {
		fs.SetAnnotation(n, config.GroupAnnotation, []string{"Search"})
	}
	return f
}

// SearchFlagNames are the flags BindSearch binds.
var SearchFlagNames = []string{"ttft-sla-ms", "itl-sla-ms", "e2e-sla-ms", "search-attainment", "search-start", "search-max", "search-step", "search-precision", "search-max-iterations", "confidence-level",
	"search-by", "concurrency-min", "concurrency-max", "search-recipe", "search-style", "tpot-sla-ms", "slo-attainment-fraction"}

// Asked is what the flags (parsed) ask of a search of profile p: Plan
// it for the load searched, the options and every problem.
func (f *SearchFlags) Asked(p *config.Profile) SearchAsked {
	return SearchAsked{SLO: f.SLO, Search: f.Search, TargetPct: f.TargetPct, Fraction: f.Fraction, By: f.By, Recipe: f.Recipe, Style: f.Style,
		ConcurrencyMin: f.ConcurrencyMin, ConcurrencyMax: f.ConcMax, Streaming: p.Streaming, Trace: p.InputFile != "" && p.Trace(), Set: f.fs.Changed}
}
