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
	group("ttft-sla-ms", "itl-sla-ms", "e2e-sla-ms", "search-attainment", "search-start", "search-max", "search-step", "search-precision", "search-max-iterations", "confidence-level")
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
	o.Target = targetPct / 100
	if !fs.Changed("request-count") && !fs.Changed("num-requests") {
		p.RequestCount = 300 // (a probe of AIPerf's default 10 requests decides nothing)
	}
	var bad []string
	if slo == (run.SearchSLO{}) {
		bad = append(bad, "give at least one objective: --ttft-sla-ms, --itl-sla-ms or --e2e-sla-ms")
	}
	if (slo.TTFTms > 0 || slo.ITLms > 0) && !p.Streaming {
		bad = append(bad, "--ttft-sla-ms and --itl-sla-ms need --streaming (a first token is only seen in a stream)")
	}
	if !(o.Target > 0 && o.Target < 1) {
		bad = append(bad, fmt.Sprintf("--search-attainment %g: want a percentage strictly between 0 and 100", targetPct))
	}
	if fs.Changed("request-rate") || fs.Changed("concurrency") || fs.Changed("benchmark-duration") || fs.Changed("fixed-schedule") || p.InputFile != "" && p.Trace() {
		bad = append(bad, "the search sets each probe's --request-rate (an open loop of --request-count requests): leave out --request-rate, --concurrency, --benchmark-duration and traces")
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "aiperf-action search: %s\n", strings.Join(bad, "; "))
		return ExitError
	}
	dir, probes := p.ArtifactDir, 0
	if dir == "" {
		dir = filepath.Join("artifacts", "search")
	}
	o.OnProbe = func(pb capacity.Probe, e capacity.Estimate) {
		fmt.Fprintf(stdout, "probe %2d: %8.4g requests/s (run %d): %5.1f%% of %d requests good; %s\n", probes+1, pb.Load, pb.Replicate+1, 100*pb.Attainment(), pb.N, e)
		probes++
	}
	doc, res, err := run.Search(ctx, p, run.SearchOptions{Dir: dir, SLO: slo, Search: o,
		Run:     run.Options{Cmdline: "aiperf-action search " + strings.Join(args, " "), Stderr: stderr},
		Resumed: func(n int) { probes = n; fmt.Fprintf(stdout, "resuming: %d probes in %s\n", n, dir) }})
	if doc == nil {
		fmt.Fprintf(stderr, "aiperf-action search: %v\n", err)
		return ExitError
	}
	if len(res.Probes) > 0 {
		fmt.Fprintf(stdout, "\n%s; stopped on %s after %d probes. %s\n", res.Estimate, res.Stopped, len(res.Probes), filepath.Join(dir, SearchFile))
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
