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
	"github.com/aiperf-action/aiperf-action/internal/report"
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
	from, err := report.WritePage(out, report.PageInput{Paths: fs.Args(), Baseline: baseline, Candidate: candidate, Title: title, Version: Version, Options: o})
	if err != nil {
		return fail(err)
	}
	st, _ := os.Stat(out)
	if from != "" {
		fmt.Fprintf(stdout, "wrote %s (%d bytes, %.1f s) from %s: open it in a browser, offline\n", out, st.Size(), time.Since(start).Seconds(), from)
		return ExitOK
	}
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
