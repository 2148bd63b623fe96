package report

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// Gate renders the gate's report for gate.Run: the run table in the log,
// report.md and the job summary, and the PR comment, each starting with
// Marker (the sticky comment's).
type Gate struct{ Marker string }

var _ gate.Renderer = Gate{}

// Run prints a finished profile run's table.
func (Gate) Run(w io.Writer, r *run.Result) { Console(w, r.Run, r.Summary.ErrorMsgs) }

// Markdown is GateMarkdown with the marker.
func (g Gate) Markdown(rep *gate.Report, full bool) string { return GateMarkdown(rep, g.Marker, full) }

// Comment is CommentMarkdown with the marker.
func (g Gate) Comment(rep *gate.Report, limit int) string {
	return CommentMarkdown(rep, g.Marker, limit)
}

var headline = map[gate.Verdict]string{
	gate.Pass:         "✅ aiperf-action: no performance regression",
	gate.Fail:         "❌ aiperf-action: performance regression",
	gate.Inconclusive: "⚠️ aiperf-action: inconclusive",
	gate.NoBaseline:   "🆕 aiperf-action: first run, no baseline yet",
}

// GateMarkdown renders the PR comment / job summary. With full false it
// leaves out the collapsed details and charts (for the size-limited comment).
func GateMarkdown(rep *gate.Report, marker string, full bool) string {
	var b strings.Builder
	if marker != "" {
		b.WriteString(marker + "\n")
	}
	fmt.Fprintf(&b, "## %s\n\n", headline[rep.Verdict])
	fmt.Fprintf(&b, "**Verdict: %s** · %d scenario(s) · %d candidate run(s) each\n\n", strings.ToUpper(string(rep.Verdict)), len(rep.Scenarios), rep.Meta.Repeats)
	for i := range rep.Scenarios {
		s := &rep.Scenarios[i]
		fmt.Fprintf(&b, "### `%s`: %s\n\n", EscapeMarkdown(s.Name), strings.ToUpper(string(s.Verdict())))
		if s.Compare == nil {
			fmt.Fprintf(&b, "No baseline runs for this scenario and profile yet: these runs become the baseline when merged to the default branch.\n\n")
			candidateTable(&b, s)
		} else {
			fmt.Fprintf(&b, "Compared %d candidate run(s) with %s (%d run(s)).\n\n", len(s.Candidate), EscapeMarkdown(s.BaselineSource), len(s.Baseline))
			b.WriteString("| metric | baseline | candidate | change | 90% interval | tolerance | detects | verdict |\n|---|---:|---:|---:|---|---:|---:|---|\n")
			for j, r := range s.Compare.Results {
				c := rowCells(r, unitOf(s.Compare, j))
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s %s |\n", EscapeMarkdown(c.name), c.base, c.cand, c.change,
					EscapeMarkdown(c.interval), EscapeMarkdown(c.tol), EscapeMarkdown(c.mde), verdictIcon[r.Verdict], EscapeMarkdown(c.verdict))
			}
			b.WriteString("\n")
		}
		if !full {
			continue
		}
		notes := toolWarnings(s)
		if s.Compare != nil {
			notes = append(notesOf(s.Compare), notes...)
		}
		if len(notes) > 0 {
			b.WriteString("<details><summary>Notes</summary>\n\n")
			for _, n := range notes {
				fmt.Fprintf(&b, "- %s\n", EscapeMarkdown(n))
			}
			b.WriteString("\n</details>\n\n")
		}
		if chart := percentileChart(s); chart != "" {
			b.WriteString("<details><summary>Latency percentiles</summary>\n\n" + chart + "\n</details>\n\n")
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "> %s\n\n", EscapeMarkdown(n))
	}
	m := rep.Meta
	b.WriteString("<details><summary>Run metadata</summary>\n\n| | |\n|---|---|\n")
	for _, kv := range [][2]string{{"model", m.Model}, {"server", m.Server}, {"seed", fmt.Sprint(m.Seed)}, {"repeats", fmt.Sprint(m.Repeats)},
		{"runner", m.Runner}, {"commit", m.Commit}, {"event", m.Event}, {"baseline store", m.Store}} {
		fmt.Fprintf(&b, "| %s | %s |\n", kv[0], EscapeMarkdown(kv[1]))
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

// CommentMarkdown is GateMarkdown cut to fit GitHub's comment limit: the
// full text when it fits, else the tables only with a pointer to the job
// summary, else the headline only.
func CommentMarkdown(rep *gate.Report, marker string, limit int) string {
	if s := GateMarkdown(rep, marker, true); len(s) <= limit {
		return s
	}
	s := GateMarkdown(rep, marker, false) + "\n_Details and charts are in the job summary._\n"
	if len(s) <= limit {
		return s
	}
	return fmt.Sprintf("%s\n## %s\n\nThe report is too long for a comment: see the job summary.\n", marker, headline[rep.Verdict])
}

func candidateTable(b *strings.Builder, s *gate.Scenario) {
	if len(s.Candidate) == 0 {
		return
	}
	b.WriteString("| metric | p50 | p90 | p99 |\n|---|---:|---:|---:|\n")
	for _, name := range []string{metrics.TTFT, metrics.ITL, metrics.RequestLatency} {
		p50, p90, p99, unit, ok := meanPercentiles(s.Candidate, name)
		if ok {
			fmt.Fprintf(b, "| %s (%s) | %s | %s | %s |\n", EscapeMarkdown(name), EscapeMarkdown(unit), num(p50), num(p90), num(p99))
		}
	}
	b.WriteString("\n")
}

func toolWarnings(s *gate.Scenario) []string {
	var out []string
	for _, r := range s.Candidate {
		for _, w := range r.ToolHealth.Warnings {
			out = append(out, "tool health: "+w)
		}
	}
	return out
}

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

// percentileChart is a mermaid bar chart of p50/p90/p99, baseline against
// candidate, for TTFT (or request latency when not streaming).
func percentileChart(s *gate.Scenario) string {
	name := metrics.TTFT
	if _, _, _, _, ok := meanPercentiles(s.Candidate, name); !ok {
		name = metrics.RequestLatency
	}
	c50, c90, c99, unit, ok := meanPercentiles(s.Candidate, name)
	if !ok {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "```mermaid\nxychart-beta\n  title \"%s: %s (%s)\"\n  x-axis [p50, p90, p99]\n  y-axis \"%s\"\n",
		chartSafe.ReplaceAllString(s.Name, "_"), name, chartSafe.ReplaceAllString(unit, "_"), chartSafe.ReplaceAllString(unit, "_"))
	if b50, b90, b99, _, ok := meanPercentiles(s.Baseline, name); ok {
		fmt.Fprintf(&b, "  bar [%.2f, %.2f, %.2f]\n", b50, b90, b99)
	}
	fmt.Fprintf(&b, "  bar [%.2f, %.2f, %.2f]\n```\n", c50, c90, c99)
	if len(s.Baseline) > 0 {
		b.WriteString("\nFirst bar: baseline; second: candidate (means over runs).\n")
	}
	return b.String()
}
