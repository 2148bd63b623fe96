package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
)

// The comment's words: its headline, the next step, one sentence per
// statistic that matters, and what would decide an undecided scenario.

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
// improvement, the reason inline when the correction across metrics left it open, and
// a dagger when provisional.
func rowVerdict(r compare.Result) string {
	v := verdictIcon[r.Verdict] + " " + strings.ToUpper(strings.ReplaceAll(string(r.Verdict), "-", " "))
	if better(r) {
		v = "🚀 BETTER"
	}
	if r.Verdict == compare.Inconclusive && holmOnly(r) {
		v += " (Hommel)"
	}
	if r.Provisional {
		v += " †"
	}
	return v
}

// holmOnly reports whether r was worse than its tolerance alone and left
// open by the correction across the gated metrics (Hommel's).
func holmOnly(r compare.Result) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, "Hommel") {
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
		return fmt.Sprintf("⚠️ %s%s: %s (%s; interval %s) is worse than the %s tolerance on its own, but not after the correction across the gated metrics (Hommel)", name, where, signedPct(w), vals, interval(lo, hi), tol)
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
		if s.Compare == nil || s.CacheMismatch != "" {
			continue // (its runs and the baseline's measured other work: not judged)
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
		if s := cacheDiffers(rep); s != nil {
			return fmt.Sprintf("⚠️ Prefix cache differs from the baseline's in `%s`: not judged", EscapeMarkdown(s.Name))
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
	case rep.Verdict == gate.Inconclusive && cacheDiffers(rep) != nil && !rep.FailOnInconclusive:
		s := cacheDiffers(rep)
		name := "`" + EscapeMarkdown(s.Name) + "`"
		if s.CacheHotBaseline {
			return fmt.Sprintf("**Not blocked:** the stored baseline runs of %s measured the server's prefix cache, not its prefill, so %s is not judged. The default branch's next refresh (a push, or the `workflow_dispatch` refresh in docs/action.md) stores runs with prompts of their own.", name, name)
		}
		return fmt.Sprintf("**Not blocked:** this job's runs of %s were served from the server's prefix cache and the baseline's were not, so %s is not judged. Clear the cache before each run (`cache-reset: vllm`, `sglang` or `llama.cpp`), or let the job start its own server.", name, name)
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

// cacheDiffers is the first compared scenario whose runs the prefix
// cache served otherwise than the baseline's, or nil.
func cacheDiffers(rep *gate.Report) *gate.Scenario {
	for i := range rep.Scenarios {
		if s := &rep.Scenarios[i]; s.CacheMismatch != "" && s.Compare != nil {
			return s
		}
	}
	return nil
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
		arts := "[artifacts](" + m.RunURL + "#artifacts)"
		if m.HTMLReport {
			arts = "[artifacts](" + m.RunURL + "#artifacts) (`report.html`: every chart, offline)"
		}
		parts = append(parts, "[workflow run]("+m.RunURL+")", arts)
	}
	return strings.Join(parts, " · ")
}

// runCounts is "3 runs of this PR each", or the range when scenarios differ.
func runCounts(rep *gate.Report) string {
	lo, hi := -1, 0
	for i := range rep.Scenarios {
		if rep.Scenarios[i].Capacity != nil {
			continue // (a search: its probes, in its own line)
		}
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
