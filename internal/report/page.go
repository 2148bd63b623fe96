package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aiperf-action/aiperf-action/internal/charts"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// PageInput is what the report command was given: run, search or gate
// results folders, baseline and candidate runs to compare, and the page's
// title and drawing options.
type PageInput struct {
	Paths, Baseline, Candidate []string
	Title, Version             string
	Options                    charts.Options
}

// WritePage writes report.html to out, atomically: a gate results folder
// (one path holding comparison.json) is rebuilt from it, and from is that
// file; else the page of the runs, a search and, with baseline and
// candidate runs, compare's verdict over them.
func WritePage(out string, pi PageInput) (from string, err error) {
	if (len(pi.Baseline) > 0) != (len(pi.Candidate) > 0) {
		return "", errors.New("--baseline and --candidate go together")
	}
	if len(pi.Paths) == 1 && len(pi.Baseline) == 0 {
		if art := filepath.Join(pi.Paths[0], gate.ArtifactFile); fileExists(art) {
			_, rep, err := gate.ReadArtifact(art)
			if err != nil {
				return "", err
			}
			b, err := GateHTML(rep, pi.Paths[0], pi.Version)
			if err != nil {
				return "", err
			}
			if err := result.WriteFileAtomic(out, b); err != nil {
				return "", fmt.Errorf("%s: %v", out, err)
			}
			return art, nil
		}
	}
	in := HTMLInput{Title: pi.Title, Options: pi.Options, Version: pi.Version}
	if len(pi.Baseline) > 0 {
		st, err := judge.Default.Parse()
		if err != nil {
			return "", err
		}
		base, err := judge.Load("--baseline", pi.Baseline)
		if err != nil {
			return "", err
		}
		cand, err := judge.Load("--candidate", pi.Candidate)
		if err != nil {
			return "", err
		}
		if in.Comparison, err = judge.Compare(st, base, cand); err != nil {
			return "", err
		}
		if in.Baseline, _, _, err = LoadRuns(pi.Baseline); err != nil {
			return "", err
		}
		if in.Candidate, _, _, err = LoadRuns(pi.Candidate); err != nil {
			return "", err
		}
	}
	if in.Runs, in.Search, in.SearchNote, err = LoadRuns(pi.Paths); err != nil {
		return "", err
	}
	if in.Comparison == nil && len(in.Runs) == 0 && in.Search == nil {
		return "", errors.New("give run folders, a search folder, or --baseline and --candidate runs")
	}
	if err := result.WriteAtomicFunc(out, func(w io.Writer) error { return HTML(w, in) }); err != nil {
		return "", fmt.Errorf("%s: %v", out, err)
	}
	return "", nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
