package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/charts"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// LoadRuns reads every run at paths (run folders, run.json files, folders
// of run folders), each labelled by its folder; a folder holding a
// capacity search gives its estimate instead of its probes' runs.
func LoadRuns(paths []string) (runs []*charts.Run, search *capacity.Estimate, searchNote string, err error) {
	for _, p := range paths {
		if _, serr := os.Stat(filepath.Join(p, run.SearchFile)); serr == nil {
			doc, err := run.ReadSearch(p)
			if err != nil {
				return nil, nil, "", err
			}
			if search != nil {
				return nil, nil, "", fmt.Errorf("%s: one capacity search a report", p)
			}
			e := doc.Estimate
			search = &e
			searchNote = fmt.Sprintf("%d probes, stopped on %s; objectives %s", len(doc.Probes), doc.Stopped, doc.SLO)
			continue
		}
		loaded, err := result.ReadAll(p)
		if err != nil {
			return nil, nil, "", err
		}
		for _, l := range loaded {
			r, err := charts.Load(l.Path)
			if err != nil {
				return nil, nil, "", err
			}
			runs = append(runs, r)
		}
	}
	// Labels: each folder's name, with its parent's where two share one.
	seen := map[string]int{}
	for _, r := range runs {
		seen[r.Label]++
	}
	for _, r := range runs {
		if seen[r.Label] > 1 {
			r.Label = filepath.Base(filepath.Dir(r.Dir)) + "/" + r.Label
		}
	}
	return runs, search, searchNote, nil
}

// WritePlots writes the charts of runs (and a search) into dir, and says
// what it wrote and what it could not draw.
func WritePlots(runs []*charts.Run, search *capacity.Estimate, dir, format string, o charts.Options, stdout io.Writer) error {
	var cs []charts.Chart
	var skipped []string
	switch {
	case len(runs) == 1:
		cs, skipped = charts.Single(runs[0], o)
	case len(runs) > 1:
		cs, skipped = charts.Multi(runs, o)
	}
	if search != nil {
		c, err := charts.Attainment(*search, o)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", c.Name, err))
		} else {
			cs = append(cs, *c)
		}
	}
	if len(cs) == 0 {
		return fmt.Errorf("nothing to draw: %s", strings.Join(skipped, "; "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range cs {
		path, err := charts.Write(c, dir, format)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	for _, s := range skipped {
		fmt.Fprintf(stdout, "not drawn: %s\n", s)
	}
	return nil
}
