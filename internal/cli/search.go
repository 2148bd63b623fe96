package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// SearchFile is the search's record in its artifact folder (run.SearchFile).
const SearchFile = run.SearchFile

func runSearch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("search", pflag.ContinueOnError)
	p := config.DefaultProfile
	p.Bind(fs)
	var slo run.SearchSLO
	var o capacity.Options
	var targetPct float64
	group := func(names ...string) {
		for _, n := range names {
			fs.SetAnnotation(n, config.GroupAnnotation, []string{"Search"})
		}
	}
	fs.Float64Var(&slo.TTFTms, "ttft-sla-ms", 0, "objective: time to first token, ms from when the request was due (AIPerf's name)")
	fs.Float64Var(&slo.ITLms, "itl-sla-ms", 0, "objective: inter-token latency, ms (AIPerf's name)")
	fs.Float64Var(&slo.E2Ems, "e2e-sla-ms", 0, "objective: request latency, ms from when the request was due (AIPerf's name)")
	fs.Float64Var(&targetPct, "search-attainment", 95, "percent of a probe's requests that must meet every objective (errors count as misses)")
	fs.Float64Var(&o.Start, "search-start", 1, "the first probe's request rate, requests/s")
	fs.Float64Var(&o.Max, "search-max", 0, "the highest request rate probed (0: none but the probe budget)")
	fs.Float64Var(&o.Step, "search-step", 1.5, "the staircase's factor between probes, until the attainment crosses the target")
	fs.Float64Var(&o.Precision, "search-precision", 0.05, "stop once the capacity's interval is at most this share of it")
	fs.IntVar(&o.MaxProbes, "search-max-iterations", 25, "the most probes (AIPerf's name)")
	fs.Float64Var(&o.Confidence, "confidence-level", 0.95, "of the capacity's interval (AIPerf's name)")
	var by, recipe, style string
	var cmin, cmax int
	var fraction float64
	fs.StringVar(&by, "search-by", "request-rate", "the load searched: request-rate (requests/s, an open loop, latencies from when each request was due) or concurrency (streams, a closed loop of whole numbers)")
	fs.IntVar(&cmin, "concurrency-min", 1, "with --search-by concurrency: the first probe's concurrency (AIPerf's name)")
	fs.IntVar(&cmax, "concurrency-max", 0, "with --search-by concurrency: the highest probed (0: none but the budget; AIPerf's recipes: 1000)")
	fs.StringVar(&recipe, "search-recipe", "", "AIPerf's recipes that ask for the highest load within objectives: max-throughput-ttft-sla, max-throughput-itl-sla, max-concurrency-under-sla, max-goodput-under-slo (each a search by concurrency; `aiperf-action profile --search-recipe …` runs it too)")
	fs.StringVar(&style, "search-style", "", "AIPerf's: smooth_isotonic or monotonic (this search is an isotonic fit with exact intervals either way)")
	fs.Float64Var(&slo.ITLms, "tpot-sla-ms", 0, "alias of --itl-sla-ms (AIPerf's name)")
	fs.Float64Var(&fraction, "slo-attainment-fraction", 0, "the share (0 to 1) of requests that must meet every objective (AIPerf's name; --search-attainment in percent)")
	group("ttft-sla-ms", "itl-sla-ms", "e2e-sla-ms", "search-attainment", "search-start", "search-max", "search-step", "search-precision", "search-max-iterations", "confidence-level",
		"search-by", "concurrency-min", "concurrency-max", "search-recipe", "search-style", "tpot-sla-ms", "slo-attainment-fraction")
	flags, positional := config.SplitArgs(fs, args)
	if code, ok := parseFlags(fs, flags, stdout, stderr); !ok {
		return code
	}
	if len(positional) == 1 && !fs.Changed("model") {
		p.Model = positional[0]
	} else if len(positional) > 0 {
		fmt.Fprintf(stderr, "aiperf-action search: unexpected argument %q\n", strings.Join(positional, " "))
		return ExitError
	}
	if !fs.Changed("url") {
		p.URL = config.DefaultURL
	}
	if !fs.Changed("request-count") && !fs.Changed("num-requests") {
		p.RequestCount = 300 // (a probe of AIPerf's default 10 requests decides nothing)
	}
	param, o, bad := run.SearchAsked{SLO: slo, Search: o, TargetPct: targetPct, Fraction: fraction, By: by, Recipe: recipe, Style: style,
		ConcurrencyMin: cmin, ConcurrencyMax: cmax, Streaming: p.Streaming, Trace: p.InputFile != "" && p.Trace(), Set: fs.Changed}.Plan()
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "aiperf-action search: %s\n", strings.Join(bad, "; "))
		return ExitError
	}
	dir, probes := p.ArtifactDir, 0
	if dir == "" {
		dir = filepath.Join("artifacts", "search")
	}
	unit := "requests/s"
	if param == config.SweepConcurrency {
		unit = "streams"
	}
	o.OnProbe = func(pb capacity.Probe, e capacity.Estimate) {
		fmt.Fprintf(stdout, "probe %2d: %8.4g %s (run %d): %5.1f%% of %d requests good; %s\n", probes+1, pb.Load, unit, pb.Replicate+1, 100*pb.Attainment(), pb.N, e)
		probes++
	}
	doc, res, err := run.Search(ctx, p, run.SearchOptions{Dir: dir, Param: param, SLO: slo, Search: o, Recipe: recipe,
		Run:     run.Options{Cmdline: "aiperf-action search " + strings.Join(args, " "), Stderr: stderr},
		Resumed: func(n int) { probes = n; fmt.Fprintf(stdout, "resuming: %d probes in %s\n", n, dir) }})
	if doc == nil {
		fmt.Fprintf(stderr, "aiperf-action search: %v\n", err)
		return ExitError
	}
	if len(res.Probes) > 0 {
		fmt.Fprintf(stdout, "\n%s (loads in %s); stopped on %s after %d probes. %s (and AIPerf's %s)\n", res.Estimate, unit, res.Stopped, len(res.Probes), filepath.Join(dir, SearchFile), run.SearchHistoryFile)
	}
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action search: %v\n", err)
		if ctx.Err() != nil {
			return ExitInterrupted
		}
		return ExitError
	}
	return ExitOK
}
