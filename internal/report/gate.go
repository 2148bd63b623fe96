package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// Gate renders the gate's report for gate.Run: the run table in the log,
// report.md and the job summary, and the PR comment, each starting with
// Marker (the sticky comment's).
type Gate struct{ Marker string }

var _ gate.Renderer = Gate{}

// Run prints a finished profile run's table.
func (Gate) Run(w io.Writer, r *run.Result) { Console(w, r.Run) }

// Markdown is GateMarkdown with the marker.
func (g Gate) Markdown(rep *gate.Report, full bool) string { return GateMarkdown(rep, g.Marker, full) }

// HTML is GateHTML.
func (Gate) HTML(rep *gate.Report, resultsDir string) ([]byte, error) {
	return GateHTML(rep, resultsDir, run.Version)
}

// PNGs is GatePNGs.
func (Gate) PNGs(s *gate.Scenario) ([]gate.ChartPNG, error) { return GatePNGs(s) }

// Comment is CommentMarkdown with the marker.
func (g Gate) Comment(rep *gate.Report, limit int) string {
	return CommentMarkdown(rep, g.Marker, limit)
}

// GateMarkdown renders the PR comment / job summary. With full false it
// leaves out the collapsed details and charts (for the size-limited comment).
//
// Its first lines are the answer and the next step, then the commits and
// links; each scenario's table has five columns (a phone shows them),
// with the tolerances in a details block under it.
func GateMarkdown(rep *gate.Report, marker string, full bool) string {
	var b strings.Builder
	if marker != "" {
		b.WriteString(marker + "\n")
	}
	rows := gatedRows(rep)
	fmt.Fprintf(&b, "## %s\n\n%s\n", title(rep, rows), nextStep(rep, rows))
	if l := commitLine(rep.Meta); l != "" {
		fmt.Fprintf(&b, "\n%s\n", l)
	}
	b.WriteString("\n")
	for _, l := range answer(rows) {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	if len(rows) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "**%s** · %s%s\n\n", strings.ToUpper(string(rep.Verdict)), plural(len(rep.Scenarios), "scenario"), runCounts(rep))
	for i := range rep.Scenarios {
		s := &rep.Scenarios[i]
		fmt.Fprintf(&b, "### `%s`: %s\n\n", EscapeMarkdown(s.Name), strings.ToUpper(string(s.Verdict())))
		if s.Broken != "" {
			fmt.Fprintf(&b, "❌ **Not a measurement:** %s.\n\nThese runs are neither compared nor stored as a baseline, and no label accepts them: fix what the errors name (the model name, the endpoint, the server) and run again.\n\n", EscapeMarkdown(s.Broken))
		} else if s.Compare == nil && s.ProfileChanged != "" {
			fmt.Fprintf(&b, "⚠️ **Not compared:** %s\n\n", EscapeMarkdown(s.ProfileChanged))
			if l := capacityLine(s); l != "" {
				b.WriteString(l + "\n\n")
			}
			candidateTable(&b, s)
		} else if s.Compare == nil && s.Capacity != nil {
			fmt.Fprintf(&b, "%s\n\nNo baseline search for this scenario and profile yet: this search becomes the baseline when merged to the default branch.\n\n", capacityLine(s))
		} else if s.Compare == nil {
			fmt.Fprintf(&b, "No baseline runs for this scenario and profile yet: these runs become the baseline when merged to the default branch.\n\n")
			candidateTable(&b, s)
		} else {
			if s.Capacity != nil {
				fmt.Fprintf(&b, "A capacity search of this PR against %s.\n\n%s\n\n", EscapeMarkdown(s.BaselineSource), capacityLine(s))
			} else {
				fmt.Fprintf(&b, "%s of this PR against %s (%s).\n\n", plural(s.CandidateCount(), "run"), EscapeMarkdown(s.BaselineSource), plural(s.BaselineCount(), "run"))
			}
			if s.CacheMismatch != "" {
				fmt.Fprintf(&b, "⚠️ **Prefix cache differs from the baseline's:** %s. These runs and the baseline's measured different work, so this scenario reads INCONCLUSIVE, never FAIL or PASS.\n\n", EscapeMarkdown(s.CacheMismatch))
			}
			switch {
			case s.EnvHardware && s.Paired:
				fmt.Fprintf(&b, "⚠️ **Environment differs between the arms:** %s. The baseline server's GPUs are not the candidate's as their DCGM exporters report them, so a worsening here is no evidence against this PR: it reads INCONCLUSIVE, never FAIL.\n\n", EscapeMarkdown(s.EnvChanged))
			case s.EnvHardware:
				fmt.Fprintf(&b, "⚠️ **Environment changed:** %s. The machine or its drivers differ from the baseline's newest runs, so a worsening here is no evidence against this PR: it reads INCONCLUSIVE, never FAIL.\n\n", EscapeMarkdown(s.EnvChanged))
			case s.EnvChanged != "":
				fmt.Fprintf(&b, "ℹ️ **Changed since the baseline:** %s.\n\n", EscapeMarkdown(s.EnvChanged))
			}
			comparisonTables(&b, s)
			if line := decide(s); line != "" && s.Verdict() == gate.Inconclusive {
				b.WriteString(line + "\n\n")
			}
		}
		if !full {
			continue
		}
		notes := toolWarnings(s)
		if s.Compare != nil {
			notes = append(groupedNotes(s.Compare), notes...)
		}
		if len(notes) > 0 {
			b.WriteString("<details><summary>Notes</summary>\n\n")
			for _, n := range notes {
				fmt.Fprintf(&b, "- %s\n", n)
			}
			b.WriteString("\n</details>\n\n")
		}
		if chart := attainmentChart(s); chart != "" {
			b.WriteString("<details><summary>Attainment against load</summary>\n\n" + chart + "\n</details>\n\n")
		}
		if chart := percentileChart(s); chart != "" {
			b.WriteString("<details><summary>Latency percentiles</summary>\n\n" + chart + "\n</details>\n\n")
		}
		if chart := trendChart(s); chart != "" {
			b.WriteString("<details><summary>Trend on the default branch</summary>\n\n" + chart + "\n</details>\n\n")
		}
		if len(s.Images) > 0 {
			b.WriteString("<details><summary>Distributions</summary>\n\n")
			for _, im := range s.Images {
				fmt.Fprintf(&b, "![%s](%s)\n\n", EscapeMarkdown(im.Title), im.URL)
			}
			b.WriteString("From each run's histogram; grey: the baseline's runs.\n</details>\n\n")
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "> %s\n\n", EscapeMarkdown(n))
	}
	m := rep.Meta
	b.WriteString("<details><summary>Run metadata</summary>\n\n")
	for _, kv := range [][2]string{{"model", m.Model}, {"server", m.Server}, {"seed", fmt.Sprint(m.Seed)}, {"repeats", fmt.Sprint(m.Repeats)},
		{"runner", m.Runner}, {"testbed", m.Testbed}, {"environment", m.Environment}, {"commit", m.Commit}, {"event", m.Event}, {"baseline store", m.Store}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "- %s: %s\n", kv[0], EscapeMarkdown(kv[1]))
		}
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

// comparisonTables writes a scenario's five-column table (metric, base,
// PR, change with its interval, verdict), then its tolerances and what
// its runs can detect in a details block, with the words explained.
func comparisonTables(b *strings.Builder, s *gate.Scenario) {
	b.WriteString("| metric | base | PR | change (90% interval) | verdict |\n|---|---:|---:|---|---|\n")
	var tol strings.Builder
	tol.WriteString("| metric | tolerance | detects |\n|---|---:|---:|\n")
	provisional, holm, pp := "", false, false
	for j, r := range s.Compare.Results {
		unit := unitOf(s.Compare, j)
		base, cand, ch := num(r.Baseline), num(r.Candidate), change(r)+" ("+interval(r.Lo, r.Hi)+")"
		t, mde := fmt.Sprintf("%.3g%%", 100*r.Tolerance), "–"
		if r.MDE > 0 {
			mde = fmt.Sprintf("%.1f%%", 100*r.MDE)
		}
		if r.Metric == "error_rate" {
			base, cand, ch, t, mde, pp = pct(r.Baseline), pct(r.Candidate), change(r), "max "+pct(r.Tolerance), "–", true
		}
		if r.Verdict == compare.NotGated {
			t = "not gated"
		}
		if r.Provisional && provisional == "" {
			provisional = "an assumed noise floor stands in for the run-to-run noise"
			for _, w := range r.Warnings {
				if x, ok := strings.CutPrefix(w, "provisional: "); ok {
					provisional = x
				}
			}
		}
		holm = holm || holmOnly(r)
		v := rowVerdict(r)
		if s.CacheMismatch != "" && (r.Verdict == compare.Fail || r.Verdict == compare.Pass) && r.Metric != "error_rate" {
			v = "⚠️ NOT JUDGED (prefix cache)"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", EscapeMarkdown(label(r, unit)), base, cand, ch, v)
		fmt.Fprintf(&tol, "| %s | %s | %s |\n", EscapeMarkdown(label(r, unit)), t, mde)
	}
	b.WriteString("\n")
	if provisional != "" {
		b.WriteString("† provisional: " + EscapeMarkdown(provisional) + ".\n\n")
	}
	b.WriteString("<details><summary>Tolerances, and what these runs can detect</summary>\n\n" + tol.String() + "\n")
	b.WriteString("_change_: the PR against the base, with the 90% interval it lies in; _worse_ or _better_ only when the whole interval says so. " +
		"_tolerance_: the worsening allowed before the gate fails. _detects_: the smallest worsening these runs catch 4 times in 5. " +
		"_NOT GATED_: shown, never judged (the notes say why).")
	if holm {
		b.WriteString(" _Hommel_: with several gated statistics each needs stronger evidence, unless several show it, so that one false alarm among them all stays as unlikely as for one.")
	}
	if pp {
		b.WriteString(" _pp_: percentage points, an error rate's change.")
	}
	b.WriteString("\n\n</details>\n\n")
}

// groupedNotes are a comparison's warnings, escaped, each text once with
// the statistics it applies to; the runs-needed notes are left to decide's
// one line.
func groupedNotes(rep *judge.Report) []string {
	var order []string
	who := map[string][]string{}
	for _, w := range rep.Comparison.Warnings {
		if _, ok := who[w]; !ok {
			order = append(order, w)
			who[w] = nil
		}
	}
	for j, r := range rep.Results {
		for _, w := range r.Warnings {
			if strings.HasPrefix(w, "with this noise") || strings.HasPrefix(w, "provisional: ") || strings.Contains(w, "Hommel") {
				continue
			}
			if _, ok := who[w]; !ok {
				order = append(order, w)
			}
			who[w] = append(who[w], label(r, unitOf(rep, j)))
		}
	}
	out := make([]string, 0, len(order))
	for _, w := range order {
		if len(who[w]) == 0 {
			out = append(out, EscapeMarkdown(w))
			continue
		}
		out = append(out, "**"+EscapeMarkdown(strings.Join(who[w], ", "))+"**: "+EscapeMarkdown(w))
	}
	return out
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
			fmt.Fprintf(b, "| %s (%s) | %s | %s | %s |\n", EscapeMarkdown(metrics.ShortName(name)), EscapeMarkdown(unit), num(p50), num(p90), num(p99))
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
