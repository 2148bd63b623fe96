package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/judge"
)

// Compare renders rep as text, markdown or json.
func Compare(w io.Writer, format string, rep *judge.Report) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "markdown":
		compareMarkdown(w, rep)
		return nil
	case "text", "":
		compareText(w, rep)
		return nil
	}
	return fmt.Errorf("unknown format %q", format)
}

// cells are one result's rendered columns.
type cells struct {
	name, base, cand, change, interval, tol, mde, verdict string
}

func rowCells(r compare.Result, unit string) cells {
	c := cells{name: r.Name(), verdict: strings.ToUpper(strings.ReplaceAll(string(r.Verdict), "-", " "))}
	if r.Provisional {
		c.verdict += " (provisional)"
	}
	if r.Metric == "error_rate" {
		c.base, c.cand = pct(r.Baseline), pct(r.Candidate)
		c.change = fmt.Sprintf("%+.2f pp", 100*r.Change)
		c.interval, c.mde = "max "+pct(r.Tolerance), ""
		return c
	}
	if unit != "" {
		c.name += " (" + unit + ")"
	}
	c.base, c.cand = num(r.Baseline), num(r.Candidate)
	c.change = signedPct(r.Change)
	c.interval = "[" + signedPct(r.Lo) + ", " + signedPct(r.Hi) + "]"
	c.tol = fmt.Sprintf("%.3g%%", 100*r.Tolerance)
	if r.MDE > 0 {
		c.mde = fmt.Sprintf("%.1f%%", 100*r.MDE)
	}
	return c
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func pct(v float64) string       { return fmt.Sprintf("%.2f%%", 100*v) }
func signedPct(v float64) string { return fmt.Sprintf("%+.1f%%", 100*v) }

func unitOf(rep *judge.Report, i int) string {
	if i < len(rep.Units) {
		return rep.Units[i]
	}
	return ""
}

func compareText(w io.Writer, rep *judge.Report) {
	fmt.Fprintf(w, "aiperf-action compare: %d baseline run(s) vs %d candidate run(s), profile %s\n\n",
		len(rep.BaselineRuns), len(rep.CandidateRuns), rep.ProfileHash)
	header := []string{"metric", "baseline", "candidate", "change", "interval", "detects", "verdict"}
	var rows [][]string
	for i, r := range rep.Results {
		c := rowCells(r, unitOf(rep, i))
		rows = append(rows, []string{c.name, c.base, c.cand, c.change, c.interval, c.mde, c.verdict})
	}
	table(w, header, rows)
	fmt.Fprintf(w, "\nVerdict: %s\n", strings.ToUpper(string(rep.Verdict)))
	notes := notesOf(rep)
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	fmt.Fprintln(w, "\ninterval: 90% interval of the change (two one-sided 5% tests); detects: the worsening caught 4 times in 5.")
}

// notesOf gathers warnings, each once, prefixed with their metric.
func notesOf(rep *judge.Report) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range rep.Comparison.Warnings {
		add(s)
	}
	for _, r := range rep.Results {
		for _, s := range r.Warnings {
			add(r.Name() + ": " + s)
		}
	}
	return out
}

var verdictIcon = map[compare.Verdict]string{compare.Pass: "✅", compare.Fail: "❌", compare.Inconclusive: "⚠️", compare.NotGated: "➖"}

func compareMarkdown(w io.Writer, rep *judge.Report) {
	fmt.Fprintf(w, "### %s Performance gate: **%s**\n\n", verdictIcon[rep.Verdict], strings.ToUpper(string(rep.Verdict)))
	fmt.Fprintf(w, "%d baseline run(s) vs %d candidate run(s) · profile `%s`\n\n", len(rep.BaselineRuns), len(rep.CandidateRuns), EscapeMarkdown(rep.ProfileHash))
	fmt.Fprintln(w, "| metric | baseline | candidate | change | 90% interval | detects | verdict |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---:|---|")
	for i, r := range rep.Results {
		c := rowCells(r, unitOf(rep, i))
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s %s |\n", EscapeMarkdown(c.name), c.base, c.cand, c.change,
			EscapeMarkdown(c.interval), c.mde, verdictIcon[r.Verdict], EscapeMarkdown(c.verdict))
	}
	if notes := notesOf(rep); len(notes) > 0 {
		fmt.Fprintln(w, "\n<details><summary>Notes</summary>")
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintf(w, "- %s\n", EscapeMarkdown(n))
		}
		fmt.Fprintln(w, "\n</details>")
	}
}

// EscapeMarkdown makes text from runs and servers inert in markdown: it
// escapes markdown punctuation and HTML, flattens newlines, and puts a
// zero-width space after '@', in "://" and in "www." so that it can neither
// format, inject markup, mention anyone nor become a link in a PR comment.
func EscapeMarkdown(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '{', '}', '[', ']', '(', ')', '#', '+', '!', '|', '~', '>':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		case '&':
			b.WriteString("&amp;")
		case '@': // no @mention of anyone: a zero-width space after the @
			b.WriteString("@\u200b")
		case '\n', '\r':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	// No autolinks either (scheme://, www.): a zero-width space breaks
	// them, and stays invisible inside code spans, where entities would not.
	return autoLink.ReplaceAllString(b.String(), "$1\u200b$2")
}

var autoLink = regexp.MustCompile(`(?i)(:|\bwww)(//|\.)`)
