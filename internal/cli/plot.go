package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/charts"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// chartFlags are plot's and report's drawing flags.
type chartFlags struct {
	theme     string
	maxPoints int
	timeline  int
}

func (c *chartFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&c.theme, "theme", "light", "light or dark (AIPerf's)")
	fs.IntVar(&c.maxPoints, "max-points", 4000, "most requests a chart draws one by one; past it, buckets of send time, each its median, p99, least and greatest (the chart says so)")
	fs.IntVar(&c.timeline, "timeline-requests", 1000, "requests the request timeline draws (the first, by when each was due), in lanes by slot")
}

func (c *chartFlags) options() (charts.Options, error) {
	if c.theme != "light" && c.theme != "dark" {
		return charts.Options{}, fmt.Errorf("--theme %q: want light or dark", c.theme)
	}
	if c.maxPoints < 10 || c.timeline < 1 {
		return charts.Options{}, fmt.Errorf("--max-points %d, --timeline-requests %d: want at least 10 and 1", c.maxPoints, c.timeline)
	}
	return charts.Options{Dark: c.theme == "dark", MaxPoints: c.maxPoints, TimelineMax: c.timeline}, nil
}

func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("plot", pflag.ContinueOnError)
	var cf chartFlags
	cf.bind(fs)
	out, format := "", "png"
	var dashboard bool
	fs.StringVarP(&out, "output", "o", "", "folder for the charts (default: the first path's plots/, or artifacts/plots)")
	fs.StringVar(&format, "format", format, "png or svg")
	fs.BoolVar(&dashboard, "dashboard", false, "AIPerf's interactive dashboard: refused (aiperf-action report writes one self-contained HTML file instead)")
	if code, ok := parseFlagsArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "aiperf-action plot: %v\n", err)
		return ExitError
	}
	o, err := cf.options()
	switch {
	case dashboard:
		err = errors.Join(err, errors.New("--dashboard: an interactive dashboard (a web server) is not built; aiperf-action report RUN... -o report.html writes every chart into one file that opens offline"))
	case format != "png" && format != "svg":
		err = errors.Join(err, fmt.Errorf("--format %q: want png or svg", format))
	}
	if err != nil {
		return fail(err)
	}
	paths := fs.Args()
	if len(paths) == 0 {
		paths = []string{"artifacts"}
	}
	runs, search, _, err := report.LoadRuns(paths)
	if err != nil {
		return fail(err)
	}
	if out == "" {
		out = filepath.Join(paths[0], "plots")
	}
	if err := report.WritePlots(runs, search, out, format, o, stdout); err != nil {
		return fail(err)
	}
	return ExitOK
}

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	start := time.Now()
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	var cf chartFlags
	cf.bind(fs)
	out, title := "report.html", ""
	var baseline, candidate []string
	fs.StringVarP(&out, "output", "o", out, "the HTML file to write")
	fs.StringVar(&title, "title", "", "the page's title")
	fs.StringArrayVar(&baseline, "baseline", nil, "baseline runs to compare (same forms as compare's; repeatable)")
	fs.StringArrayVar(&candidate, "candidate", nil, "candidate runs to compare with them (repeatable)")
	if code, ok := parseFlagsArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "aiperf-action report: %v\n", err)
		return ExitError
	}
	o, err := cf.options()
	if err != nil {
		return fail(err)
	}
	in := report.HTMLInput{Title: title, Options: o, Version: Version}
	if (len(baseline) > 0) != (len(candidate) > 0) {
		return fail(errors.New("--baseline and --candidate go together"))
	}
	if len(baseline) > 0 {
		st, err := judge.Default.Parse()
		if err != nil {
			return fail(err)
		}
		base, err := judge.Load("--baseline", baseline)
		if err != nil {
			return fail(err)
		}
		cand, err := judge.Load("--candidate", candidate)
		if err != nil {
			return fail(err)
		}
		if in.Comparison, err = judge.Compare(st, base, cand); err != nil {
			return fail(err)
		}
		if in.Baseline, _, _, err = report.LoadRuns(baseline); err != nil {
			return fail(err)
		}
		if in.Candidate, _, _, err = report.LoadRuns(candidate); err != nil {
			return fail(err)
		}
	}
	if args := fs.Args(); len(args) == 1 && len(baseline) == 0 {
		// A gate's results folder: its comparison.json and its runs.
		if _, err := os.Stat(filepath.Join(args[0], gate.ArtifactFile)); err == nil {
			_, rep, err := gate.ReadArtifact(filepath.Join(args[0], gate.ArtifactFile))
			if err != nil {
				return fail(err)
			}
			b, err := report.GateHTML(rep, args[0], Version)
			if err != nil {
				return fail(err)
			}
			if err := result.WriteFileAtomic(out, b); err != nil {
				return fail(fmt.Errorf("%s: %v", out, err))
			}
			fmt.Fprintf(stdout, "wrote %s (%d bytes, %.1f s) from %s: open it in a browser, offline\n", out, len(b), time.Since(start).Seconds(), filepath.Join(args[0], gate.ArtifactFile))
			return ExitOK
		}
	}
	if in.Runs, in.Search, in.SearchNote, err = report.LoadRuns(fs.Args()); err != nil {
		return fail(err)
	}
	if in.Comparison == nil && len(in.Runs) == 0 && in.Search == nil {
		return fail(errors.New("give run folders, a search folder, or --baseline and --candidate runs"))
	}
	if err := result.WriteAtomicFunc(out, func(w io.Writer) error { return report.HTML(w, in) }); err != nil {
		return fail(fmt.Errorf("%s: %v", out, err))
	}
	st, _ := os.Stat(out)
	fmt.Fprintf(stdout, "wrote %s (%d bytes, %.1f s): open it in a browser, offline\n", out, st.Size(), time.Since(start).Seconds())
	return ExitOK
}

// autoPlot is --auto-plot: the run's charts in its plots/ folder, read
// back from the artifacts just written. A chart that fails is a warning;
// the run's exit code stands.
func autoPlot(dir string, stdout, stderr io.Writer) {
	r, err := charts.Load(dir)
	if err == nil {
		err = report.WritePlots([]*charts.Run{r}, nil, filepath.Join(dir, "plots"), "png", charts.Options{}, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action profile: --auto-plot: %v\n", err)
	}
}
