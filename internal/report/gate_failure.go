package report

import (
	"fmt"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/gate"
)

// The comment of a gate that could not run.

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
