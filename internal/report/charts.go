package report

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

func meanPercentiles(runs []*result.Run, name string) (p50, p90, p99 float64, unit string, ok bool) {
	n := 0
	for _, r := range runs {
		m, has := r.Metrics[name]
		if !has || m.Dist == nil {
			continue
		}
		p50 += m.Dist.P50
		p90 += m.Dist.P90
		p99 += m.Dist.P99
		unit = m.Dist.Unit
		n++
	}
	if n == 0 {
		return 0, 0, 0, "", false
	}
	return p50 / float64(n), p90 / float64(n), p99 / float64(n), unit, true
}

var chartSafe = regexp.MustCompile(`[^A-Za-z0-9 _.-]+`)

// percentileChart is a mermaid chart of p50/p90/p99 for TTFT (or request
// latency when not streaming): bars for this PR, a line for the baseline,
// on an axis from zero, so neither hides the other and a gap is drawn to
// scale.
func percentileChart(s *gate.Scenario) string {
	name := metrics.TTFT
	if _, _, _, _, ok := meanPercentiles(s.Candidate, name); !ok {
		name = metrics.RequestLatency
	}
	c50, c90, c99, unit, ok := meanPercentiles(s.Candidate, name)
	if !ok {
		return ""
	}
	top := c99
	b50, b90, b99, _, hasBase := meanPercentiles(s.Baseline, name)
	if hasBase {
		top = max(top, b99)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "```mermaid\n%s\nxychart-beta\n  title \"%s: %s (%s)\"\n  x-axis [p50, p90, p99]\n  y-axis \"%s\" 0 --> %s\n", chartColors,
		chartSafe.ReplaceAllString(s.Name, "_"), metrics.ShortName(name), chartSafe.ReplaceAllString(unit, "_"), chartSafe.ReplaceAllString(unit, "_"), axisTop(top))
	fmt.Fprintf(&b, "  bar [%.2f, %.2f, %.2f]\n", c50, c90, c99)
	if hasBase {
		fmt.Fprintf(&b, "  line [%.2f, %.2f, %.2f]\n", b50, b90, b99)
	}
	b.WriteString("```\n")
	if hasBase {
		b.WriteString("\nBars: this PR; line: the baseline (means over runs).\n")
	} else {
		b.WriteString("\nBars: this PR (means over runs).\n")
	}
	return b.String()
}

// The charts' colours, in series order: the PR blue, the baseline orange
// (a line in the percentile chart; in the trend, bars are the jobs and
// the line their mean), so that neither
// reads as the other in GitHub's default theme.
const (
	chartColors = `%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "#4c78a8, #f58518"}}}}%%`
	trendColors = `%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "#f58518, #4c78a8"}}}}%%`
)

// axisTop is a round top for an axis from zero: 10% over v, to two
// significant figures.
func axisTop(v float64) string {
	if !(v > 0) {
		return "1"
	}
	v *= 1.1
	e := int(math.Floor(math.Log10(v))) - 1
	k := math.Ceil(v / math.Pow10(e))
	if e >= 0 {
		return fmt.Sprintf("%.0f", k*math.Pow10(e))
	}
	return fmt.Sprintf("%.*f", -e, k*math.Pow10(e))
}

// trendLimit is how many of the default branch's newest jobs a trend shows.
const trendLimit = 10

// trendChart shows each gated statistic over the baseline's jobs (a job's
// runs averaged: each refresh of the default branch is one), oldest first,
// with this PR's mean beside them; nothing with fewer than two jobs.
func trendChart(s *gate.Scenario) string {
	if s.Compare == nil || s.Paired {
		return ""
	}
	type job struct {
		name, commit string
		runs         []*result.Run
	}
	var jobs []job
	for i, r := range s.Baseline {
		if n := len(jobs); n > 0 && r.Job != "" && jobs[n-1].name == r.Job {
			jobs[n-1].runs = append(jobs[n-1].runs, r)
			continue
		}
		c := ""
		if i < len(s.BaselineCommits) {
			c = s.BaselineCommits[i]
		}
		jobs = append(jobs, job{r.Job, c, []*result.Run{r}})
	}
	if len(jobs) < 2 {
		return ""
	}
	if len(jobs) > trendLimit {
		jobs = jobs[len(jobs)-trendLimit:]
	}
	var b strings.Builder
	for j, r := range s.Compare.Results {
		if r.Verdict == compare.NotGated || r.Metric == "error_rate" {
			continue
		}
		mean := func(runs []*result.Run) (float64, bool) {
			sum, n := 0.0, 0
			for _, run := range runs {
				if v, ok := statOf(run, r.Metric, r.Stat); ok {
					sum += v
					n++
				}
			}
			return sum / float64(max(n, 1)), n > 0
		}
		cand, ok := mean(s.Candidate)
		if !ok {
			continue
		}
		var bars, labels []string
		top, sum := cand, 0.0
		seen := map[string]int{}
		for k, jb := range jobs {
			v, ok := mean(jb.runs)
			if !ok {
				bars = nil
				break
			}
			top, sum = max(top, v), sum+v
			bars = append(bars, fmt.Sprintf("%.2f", v))
			// The commit a job ran (a second job of one commit, "abc1234 2");
			// its place from the newest where the store names none.
			l := chartSafe.ReplaceAllString(jb.commit[:min(len(jb.commit), 7)], "_")
			if l == "" {
				l = fmt.Sprint(k - len(jobs))
			}
			if seen[l]++; seen[l] > 1 {
				l += fmt.Sprintf(" %d", seen[l])
			}
			labels = append(labels, "\""+l+"\"")
		}
		if bars == nil {
			continue
		}
		unit := chartSafe.ReplaceAllString(unitOf(s.Compare, j), "_")
		m := fmt.Sprintf("%.2f", sum/float64(len(jobs)))
		fmt.Fprintf(&b, "```mermaid\n%s\nxychart-beta\n  title \"%s: %s\"\n  x-axis [%s, \"PR\"]\n  y-axis \"%s\" 0 --> %s\n  bar [%s, %.2f]\n  line [%s]\n```\n\n",
			trendColors, chartSafe.ReplaceAllString(s.Name, "_"), chartSafe.ReplaceAllString(label(r, ""), "_"), strings.Join(labels, ", "), unit, axisTop(top),
			strings.Join(bars, ", "), cand, strings.TrimSuffix(strings.Repeat(m+", ", len(jobs)+1), ", "))
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString("Bars: the default branch's jobs by the commit each ran, oldest first (a job's mean over its runs), then this PR; line: the mean of those jobs.\n")
	return b.String()
}

// statOf is one run's value of a statistic: a percentile of its
// distribution, or its rate.
func statOf(r *result.Run, metric, stat string) (float64, bool) {
	m, ok := r.Metrics[metric]
	switch {
	case !ok:
		return 0, false
	case m.Dist != nil:
		return m.Dist.Get(stat)
	case m.Rate != nil:
		return m.Rate.Value, true
	}
	return 0, false
}
