package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"

	"github.com/aiperf-action/aiperf-action/internal/charts"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// GateHTML is the gate's report.html: each scenario's verdict and table,
// its candidate's CDFs over the baseline's runs, and its first candidate
// run over time, the candidate runs read back from the results folder
// (resultsDir/<scenario>/run-N, and baseline-N of a paired A/B). A report
// rebuilt from comparison.json alone has no stored baseline runs: its
// CDFs are the candidate's.
func GateHTML(rep *gate.Report, resultsDir, version string) ([]byte, error) {
	in := HTMLInput{Title: "aiperf-action gate: " + strings.ToUpper(string(rep.Verdict)), Version: version}
	m := rep.Meta
	in.Lines = append(in.Lines, fmt.Sprintf("model %s; server %s; runner %s; testbed %s", m.Model, m.Server, m.Runner, m.Testbed))
	if m.Head != "" {
		l := "commit " + m.Head
		if m.Base != "" {
			l += " against " + m.Base
		}
		if m.RunURL != "" {
			l += "; " + m.RunURL
		}
		in.Lines = append(in.Lines, l)
	}
	for _, s := range rep.Scenarios {
		hs := HTMLScenario{Name: s.Name, Verdict: string(s.Verdict()), Comparison: s.Compare,
			Notes: []string{fmt.Sprintf("%d candidate runs against %d baseline runs", s.CandidateCount(), s.BaselineCount())}}
		for _, note := range []string{s.Broken, s.ProfileChanged, s.CacheMismatch, s.EnvChanged, s.BaselineSource} {
			if note != "" {
				hs.Notes = append(hs.Notes, note)
			}
		}
		dir := filepath.Join(resultsDir, run.SafeName(s.Name))
		var err error
		if hs.Candidate, err = loadGlob(dir, "run-"); err != nil {
			return nil, err
		}
		if s.Paired {
			if hs.Baseline, err = loadGlob(dir, "baseline-"); err != nil {
				return nil, err
			}
		} else {
			for i, r := range s.Baseline {
				label := fmt.Sprintf("baseline %d", i+1)
				if i < len(s.BaselineCommits) {
					label += " @" + s.BaselineCommits[i]
				}
				hs.Baseline = append(hs.Baseline, &charts.Run{Label: label, Run: r, NoRecord: "a stored baseline run keeps its run.json only"})
			}
		}
		hs.Trends = trends(&s)
		in.Scenarios = append(in.Scenarios, hs)
	}
	var b bytes.Buffer
	err := HTML(&b, in)
	return b.Bytes(), err
}

// loadGlob loads dir's run folders named prefix<N>, in order of N.
func loadGlob(dir, prefix string) ([]*charts.Run, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil // (a scenario that wrote nothing: nothing to draw)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "run.json")); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	sort.Slice(names, func(i, j int) bool {
		var a, b int
		fmt.Sscan(strings.TrimPrefix(names[i], prefix), &a)
		fmt.Sscan(strings.TrimPrefix(names[j], prefix), &b)
		return a < b
	})
	var out []*charts.Run
	for _, n := range names {
		r, err := charts.Load(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// trends is a chart a gated statistic of the stored baseline runs by the
// commit each ran, with the candidate's mean across them (an unpaired
// comparison with two stored runs or more).
func trends(s *gate.Scenario) []charts.Chart {
	if s.Compare == nil || s.Paired || len(s.Baseline) < 2 {
		return nil
	}
	var out []charts.Chart
	for j, r := range s.Compare.Results {
		if r.Verdict == compare.NotGated || r.Metric == "error_rate" {
			continue
		}
		var vals []float64
		var labels []string
		for i, run := range s.Baseline {
			v, ok := statOf(run, r.Metric, r.Stat)
			if !ok {
				continue
			}
			l := fmt.Sprint(i + 1)
			if i < len(s.BaselineCommits) && s.BaselineCommits[i] != "" {
				l = s.BaselineCommits[i][:min(7, len(s.BaselineCommits[i]))]
			}
			vals, labels = append(vals, v), append(labels, l)
		}
		sum, n := 0.0, 0
		for _, run := range s.Candidate {
			if v, ok := statOf(run, r.Metric, r.Stat); ok {
				sum, n = sum+v, n+1
			}
		}
		if n == 0 {
			continue
		}
		c, err := charts.Trend(fmt.Sprintf("trend_%d", j), "Trend of "+r.Name()+" by commit", unitOf(s.Compare, j), labels, vals, sum/float64(n), n, charts.Options{})
		if err == nil {
			out = append(out, *c)
		}
	}
	return out
}

// GatePNGs is a compared scenario's charts for the comment, as PNG: the
// candidate's TTFT and request latency CDFs over the baseline's runs. A
// CDF needs run.json's histograms only, so the runs the gate holds (the
// run.json it wrote, and the stored baseline's) are drawn, and no
// records.jsonl is read again.
func GatePNGs(s *gate.Scenario) ([]gate.ChartPNG, error) {
	wrap := func(runs []*result.Run, label string) []*charts.Run {
		out := make([]*charts.Run, len(runs))
		for i, r := range runs {
			out[i] = &charts.Run{Label: fmt.Sprintf("%s %d", label, i+1), Run: r}
		}
		return out
	}
	base, cand := wrap(s.Baseline, "baseline"), wrap(s.Candidate, "run")
	var out []gate.ChartPNG
	for _, m := range []struct{ name, metric, label string }{{"cdf_ttft", metrics.TTFT, "TTFT"}, {"cdf_latency", metrics.RequestLatency, "request latency"}} {
		c, err := charts.CompareCDF(base, cand, charts.Options{}, m.name, m.metric, m.label)
		if err != nil {
			continue // (a run without it: a non-streamed scenario has no TTFT)
		}
		var b bytes.Buffer
		wt, err := c.Plot.WriterTo(charts.Width, charts.Height, "png")
		if err == nil {
			_, err = wt.WriteTo(&b)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", c.Name, err)
		}
		out = append(out, gate.ChartPNG{Name: c.Name, Title: c.Title, PNG: b.Bytes()})
	}
	return out, nil
}
