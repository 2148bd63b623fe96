package report

import (
	"fmt"
	"io"
	"math"
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

// Comment is CommentMarkdown with the marker.
func (g Gate) Comment(rep *gate.Report, limit int) string {
	return CommentMarkdown(rep, g.Marker, limit)
}

// Failure is FailureMarkdown with the marker.
func (g Gate) Failure(f *gate.Failure, limit int) string { return FailureMarkdown(f, g.Marker, limit) }

// FailureMarkdown is the comment of a gate that could not run: no verdict,
// the job failed, the error and the log's last lines quoted as they are
// (in fences longer than any run of backticks in them, so nothing in them
// is markdown), and the commits and the run's links.
func FailureMarkdown(f *gate.Failure, marker string, limit int) string {
	// Another comment's marker in quoted text must not make it one.
	unmark := func(s string) string {
		return strings.ReplaceAll(s, "<!-- aiperf-action:", "<!-- (quoted) aiperf-action:")
	}
	render := func(logText string) string {
		var b strings.Builder
		if marker != "" {
			b.WriteString(marker + "\n")
		}
		b.WriteString("## ⛔ aiperf-action could not run: no verdict\n\n")
		b.WriteString("**This blocks the merge:** the job failed (exit 2) before the gate could judge this commit, and any earlier verdict on this pull request no longer stands. The error says what to fix.\n")
		if l := commitLine(f.Meta); l != "" {
			fmt.Fprintf(&b, "\n%s\n", l)
		}
		fmt.Fprintf(&b, "\n%s\n", fenced(unmark(f.Err)))
		if logText != "" {
			fmt.Fprintf(&b, "\n<details><summary>The log's last lines</summary>\n\n%s\n\n</details>\n", fenced(unmark(logText)))
		}
		return b.String()
	}
	if s := render(f.Log); len(s) <= limit {
		return s
	}
	return render("")
}

// fenced is s in a code fence longer than any run of backticks in it.
func fenced(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + "text\n" + strings.TrimRight(s, "\n") + "\n" + fence
}

var headline = map[gate.Verdict]string{
	gate.Pass:         "✅ aiperf-action: no performance regression",
	gate.Fail:         "❌ aiperf-action: performance regression",
	gate.Inconclusive: "⚠️ aiperf-action: inconclusive",
	gate.NoBaseline:   "🆕 aiperf-action: first run, no baseline yet",
}

// row is one compared statistic of one scenario, for the sentences above
// the tables.
type row struct {
	scenario string
	r        compare.Result
	unit     string
}

// worse is r's change as a worsening: positive is worse, whichever way
// the metric goes (a throughput's drop, a latency's rise), with its
// interval.
func worse(r compare.Result) (v, lo, hi float64) {
	if r.Direction == compare.LowerIsWorse {
		return -r.Change, -r.Hi, -r.Lo
	}
	return r.Change, r.Lo, r.Hi
}

// better reports whether r's whole interval lies past its tolerance on the
// good side: an improvement, not only a pass.
func better(r compare.Result) bool {
	_, _, hi := worse(r)
	return r.Metric != "error_rate" && r.Verdict == compare.Pass && hi < -r.Tolerance
}

// label is a statistic's short name and unit: "TTFT p50 (ms)".
func label(r compare.Result, unit string) string {
	s := metrics.ShortName(r.Metric)
	if r.Stat != "" && r.Stat != "value" {
		s += " " + r.Stat
	}
	if unit != "" && unit != "%" {
		s += " (" + unit + ")"
	}
	return s
}

// interval is "+24.5% to +31.2%".
func interval(lo, hi float64) string { return signedPct(lo) + " to " + signedPct(hi) }

// change is the signed change, with its sense when its interval leaves no
// doubt of it (the whole interval on one side of zero): "+27.8% worse",
// "+4.1% better" for a throughput.
func change(r compare.Result) string {
	if r.Metric == "error_rate" {
		return fmt.Sprintf("%+.2f pp", 100*r.Change)
	}
	_, lo, hi := worse(r)
	switch {
	case r.Verdict == compare.NotGated:
		return signedPct(r.Change)
	case lo > 0:
		return signedPct(r.Change) + " worse"
	case hi < 0:
		return signedPct(r.Change) + " better"
	}
	return signedPct(r.Change)
}

// rowVerdict is a table row's verdict: its icon and word, BETTER for an
// improvement, the reason inline when Holm's correction left it open, and
// a dagger when provisional.
func rowVerdict(r compare.Result) string {
	v := verdictIcon[r.Verdict] + " " + strings.ToUpper(strings.ReplaceAll(string(r.Verdict), "-", " "))
	if better(r) {
		v = "🚀 BETTER"
	}
	if r.Verdict == compare.Inconclusive && holmOnly(r) {
		v += " (Holm)"
	}
	if r.Provisional {
		v += " †"
	}
	return v
}

// holmOnly reports whether r was worse than its tolerance alone and left
// open by Holm's correction across the gated metrics.
func holmOnly(r compare.Result) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, "Holm") {
			return true
		}
	}
	return false
}

// sentence says one row in words, for the lines under the headline.
func sentence(x row) string {
	r := x.r
	name := "**" + EscapeMarkdown(label(r, "")) + "**"
	where := " in `" + EscapeMarkdown(x.scenario) + "`"
	if r.Metric == "error_rate" {
		return fmt.Sprintf("%s %s%s: %s, above the allowed %s", verdictIcon[r.Verdict], name, where, pct(r.Candidate), pct(r.Tolerance))
	}
	w, lo, hi := worse(r)
	vals := fmt.Sprintf("%s → %s %s", num(r.Baseline), num(r.Candidate), EscapeMarkdown(x.unit))
	tol := fmt.Sprintf("%.3g%%", 100*r.Tolerance)
	switch {
	case r.Verdict == compare.Fail:
		return fmt.Sprintf("❌ %s%s is **%s worse** (%s; 90%% interval of the worsening %s, past the %s tolerance)", name, where, pctAbs(w), vals, interval(lo, hi), tol)
	case better(r):
		return fmt.Sprintf("🚀 %s%s is **%s better** (%s; 90%% interval of the worsening %s)", name, where, pctAbs(w), vals, interval(lo, hi))
	case r.Verdict == compare.Inconclusive && holmOnly(r):
		return fmt.Sprintf("⚠️ %s%s: %s (%s; interval %s) is worse than the %s tolerance on its own, but not after Holm's correction across the gated metrics", name, where, signedPct(w), vals, interval(lo, hi), tol)
	case r.Verdict == compare.Inconclusive:
		return fmt.Sprintf("⚠️ %s%s: %s (%s); its 90%% interval %s reaches past the %s tolerance, so these runs can't tell", name, where, signedPct(w), vals, interval(lo, hi), tol)
	}
	return fmt.Sprintf("%s%s changed %s (%s; interval %s), inside the %s tolerance", name, where, signedPct(w), vals, interval(lo, hi), tol)
}

func pctAbs(v float64) string { return fmt.Sprintf("%.1f%%", 100*math.Abs(v)) }

// gatedRows are every scenario's gated rows (those with a verdict).
func gatedRows(rep *gate.Report) []row {
	var out []row
	for i := range rep.Scenarios {
		s := &rep.Scenarios[i]
		if s.Compare == nil {
			continue
		}
		for j, r := range s.Compare.Results {
			if r.Verdict != compare.NotGated {
				out = append(out, row{s.Name, r, unitOf(s.Compare, j)})
			}
		}
	}
	return out
}

// title is the comment's headline: for a failure, its worst regression.
func title(rep *gate.Report, rows []row) string {
	for _, s := range rep.Scenarios {
		if s.Broken != "" {
			return fmt.Sprintf("❌ Requests failed in `%s`: nothing was measured", EscapeMarkdown(s.Name))
		}
	}
	switch rep.Verdict {
	case gate.Fail:
		var worst *row
		w := 0.0
		for i := range rows {
			if rows[i].r.Verdict != compare.Fail || rows[i].r.Metric == "error_rate" {
				continue
			}
			if v, _, _ := worse(rows[i].r); worst == nil || v > w {
				worst, w = &rows[i], v
			}
		}
		if worst != nil {
			lead := "❌ Performance regression"
			if rep.Accepted != "" {
				lead = "☑️ Accepted regression"
			}
			return fmt.Sprintf("%s: %s %s worse in `%s`", lead, EscapeMarkdown(label(worst.r, "")), pctAbs(w), EscapeMarkdown(worst.scenario))
		}
	case gate.NoBaseline:
		for _, s := range rep.Scenarios {
			if s.OtherTestbeds {
				testbed := ""
				if rep.Meta.Testbed != "" {
					testbed = " `" + EscapeMarkdown(rep.Meta.Testbed) + "`"
				}
				return fmt.Sprintf("⚠️ Not compared: `%s` has no baseline on this testbed%s yet", EscapeMarkdown(s.Name), testbed)
			}
			if s.ProfileChanged != "" {
				return fmt.Sprintf("⚠️ Not compared: the load profile of `%s` changed", EscapeMarkdown(s.Name))
			}
		}
	case gate.Inconclusive:
		if s := envChanged(rep); s != nil {
			return fmt.Sprintf("⚠️ Environment changed in `%s`: not judged as a regression", EscapeMarkdown(s.Name))
		}
		n := 0
		for _, x := range rows {
			if x.r.Verdict == compare.Inconclusive {
				n++
			}
		}
		if rep.FailOnInconclusive && !rep.Advisory {
			return fmt.Sprintf("⚠️ Inconclusive: %s these runs can't decide", plural(n, "statistic"))
		}
		return fmt.Sprintf("⚠️ Inconclusive, not blocking: %s these runs can't decide", plural(n, "statistic"))
	}
	return headline[rep.Verdict]
}

// answer is the lines under the headline: each failing, undecided or
// improved statistic in a sentence; when all passed, the largest change.
func answer(rows []row) []string {
	var out []string
	for _, x := range rows {
		if x.r.Verdict == compare.Fail || x.r.Verdict == compare.Inconclusive || better(x.r) {
			out = append(out, sentence(x))
		}
	}
	if len(out) > 0 {
		return out
	}
	var worst *row
	for i := range rows {
		if rows[i].r.Metric == "error_rate" {
			continue
		}
		if worst == nil || math.Abs(rows[i].r.Change) > math.Abs(worst.r.Change) {
			worst = &rows[i]
		}
	}
	if worst != nil {
		out = append(out, "The largest change: "+sentence(*worst)+".")
	}
	return out
}

// remedy is what the pull request's author can do to decide a scenario's
// undecided statistics: more runs, seeded baselines, or paired A/B.
func remedy(s *gate.Scenario) string {
	var needR, needK, r, k int
	var needTol float64
	holm := false
	for _, x := range s.Compare.Results {
		if x.Verdict != compare.Inconclusive {
			continue
		}
		needR, needK, needTol = max(needR, x.NeedR), max(needK, x.NeedK), max(needTol, x.NeedTolerance)
		r, k = x.R, x.K
		holm = holm || holmOnly(x)
	}
	switch {
	case needK > 0:
		return fmt.Sprintf("`repeats: %d` (now %d) and %d baseline runs (now %d), which a maintainer seeds with a `workflow_dispatch` refresh (docs/action.md); or paired A/B (`baseline-server`), which runs the base build beside this one and needs no stored baselines", needK, r, needK, k)
	case needR > 0:
		return fmt.Sprintf("`max-repeats: %d`, so that the gate adds runs until it decides (or `repeats: %d`, now %d)", needR, needR, r)
	case needTol > 0:
		return fmt.Sprintf("paired A/B (`baseline-server`), which runs the base build beside this one in the same job, so that the job's noise cancels; or a tolerance of at least %.3g%%, since this job's noise hides anything finer whatever its runs", 100*needTol)
	case holm:
		return "more runs (`max-repeats`, so that the gate adds them until it decides)"
	}
	return ""
}

// decide is one line saying what would decide a scenario's undecided
// statistics, or failing on INCONCLUSIVE instead.
func decide(s *gate.Scenario) string {
	how := remedy(s)
	if how == "" {
		return ""
	}
	return "**To decide:** " + how + "; or `fail-on-inconclusive: true` to fail on INCONCLUSIVE instead of passing."
}

// nextStep is the comment's second line: whether the pull request is
// blocked, and what its author can do about it.
func nextStep(rep *gate.Report, rows []row) string {
	switch {
	case rep.Broken():
		return "**This blocks the merge, and no label accepts it:** no measurement was made. Fix what the errors below name, and push again."
	case rep.Verdict == gate.Fail && rep.Accepted != "":
		return fmt.Sprintf("**Accepted:** %s, so the regression is reported, not failed. Once merged, the default branch's next refresh stores these runs, and later pull requests are compared with the runs since the step.", EscapeMarkdown(rep.Accepted))
	case rep.Advisory && (rep.Verdict == gate.Fail || rep.Verdict == gate.Inconclusive):
		return "**Advisory:** this gate reports and never fails the job (`advisory: true`)."
	case rep.Verdict == gate.Fail && rep.AcceptLabel != "":
		return fmt.Sprintf("**This blocks the merge.** If the slowdown is intended, add the label `%s`: the gate then re-judges these results as accepted, with no new load.", EscapeMarkdown(rep.AcceptLabel))
	case rep.Verdict == gate.Fail:
		return "**This blocks the merge.**"
	case rep.Verdict == gate.Inconclusive && envChanged(rep) != nil && !rep.FailOnInconclusive:
		return "**Not blocked:** this job ran on another machine or driver than the baseline's newest runs, so a slowdown may be the machine's. Keep the gate's runners alike (a runner label, or `testbed:` naming the machine), or let the default branch's next refresh make this machine the baseline."
	case rep.Verdict == gate.Inconclusive:
		lead := "**Not blocked:** an undecided result passes."
		if rep.FailOnInconclusive {
			lead = "**This blocks the merge** (`fail-on-inconclusive: true`): these runs could not decide."
		}
		for i := range rep.Scenarios {
			if s := &rep.Scenarios[i]; s.Verdict() == gate.Inconclusive && s.Compare != nil {
				if how := remedy(s); how != "" {
					return lead + " To decide: " + how + "."
				}
			}
		}
		return lead
	case rep.Verdict == gate.NoBaseline:
		for _, s := range rep.Scenarios {
			if s.ProfileChanged != "" {
				return "**Not blocked:** a scenario whose profile or testbed changed is not compared; the default branch's next run there stores its baseline."
			}
		}
		return "**Nothing to do:** these runs pass. Once the default branch runs the gate (a push, or the `workflow_dispatch` seed in docs/action.md), its runs are the baseline pull requests are compared with."
	}
	return "**Nothing to do:** every gated statistic is within its tolerance."
}

// envChanged is the first scenario whose FAIL was set aside because the
// machine changed, or nil.
func envChanged(rep *gate.Report) *gate.Scenario {
	for i := range rep.Scenarios {
		if s := &rep.Scenarios[i]; s.EnvHardware && s.Compare != nil && s.Compare.Verdict == compare.Fail {
			return s
		}
	}
	return nil
}

// commitLine names the commit judged and what it was judged against, and
// links the workflow run and its artifacts.
func commitLine(m gate.Meta) string {
	var parts []string
	short := func(s string) string { return "`" + EscapeMarkdown(s[:min(len(s), 7)]) + "`" }
	switch {
	case m.Head != "" && m.Base != "":
		parts = append(parts, short(m.Head)+" against base "+short(m.Base))
	case m.Head != "":
		parts = append(parts, "commit "+short(m.Head))
	}
	if m.RunURL != "" {
		parts = append(parts, "[workflow run]("+m.RunURL+")", "[artifacts]("+m.RunURL+"#artifacts)")
	}
	return strings.Join(parts, " · ")
}

// runCounts is "3 runs of this PR each", or the range when scenarios differ.
func runCounts(rep *gate.Report) string {
	lo, hi := -1, 0
	for i := range rep.Scenarios {
		n := rep.Scenarios[i].CandidateCount()
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	switch {
	case lo < 0:
		return ""
	case lo == hi:
		return fmt.Sprintf(" · %s of this PR each", plural(hi, "run"))
	}
	return fmt.Sprintf(" · %d to %d runs of this PR", lo, hi)
}

// plural is "1 run", "3 runs".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
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
			candidateTable(&b, s)
		} else if s.Compare == nil {
			fmt.Fprintf(&b, "No baseline runs for this scenario and profile yet: these runs become the baseline when merged to the default branch.\n\n")
			candidateTable(&b, s)
		} else {
			fmt.Fprintf(&b, "%s of this PR against %s (%s).\n\n", plural(s.CandidateCount(), "run"), EscapeMarkdown(s.BaselineSource), plural(s.BaselineCount(), "run"))
			switch {
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
		if chart := percentileChart(s); chart != "" {
			b.WriteString("<details><summary>Latency percentiles</summary>\n\n" + chart + "\n</details>\n\n")
		}
		if chart := trendChart(s); chart != "" {
			b.WriteString("<details><summary>Trend on the default branch</summary>\n\n" + chart + "\n</details>\n\n")
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
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", EscapeMarkdown(label(r, unit)), base, cand, ch, rowVerdict(r))
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
		b.WriteString(" _Holm_: with several gated statistics each needs stronger evidence, so that one false alarm among them all stays as unlikely as for one.")
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
			if strings.HasPrefix(w, "with this noise") || strings.HasPrefix(w, "provisional: ") || strings.Contains(w, "Holm") {
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
