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
	sf := run.BindSearch(fs)
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
	param, o, bad := sf.Asked(&p).Plan()
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
	doc, res, err := run.Search(ctx, p, run.SearchOptions{Dir: dir, Param: param, SLO: sf.SLO, Search: o, Recipe: sf.Recipe,
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
