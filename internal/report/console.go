// Package report renders results for people: the console table of a run
// (from its run.json alone), compare's text, markdown and JSON, the
// calibration table, the demo's side-by-side table, and the gate's PR
// comment and job summary with their charts.
//
// Server text (error messages) is data; renderers that put it into markup
// must escape it. The console table has AIPerf's columns and row names, so
// that numbers can be read side by side with an AIPerf run.
package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// Console writes the metrics table, error counts and tool health of run.
func Console(w io.Writer, r *result.Run) {
	header := []string{"Metric", "avg", "min", "max", "p99", "p90", "p50", "std"}
	var rows [][]string
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, name := range metrics.Order {
		m, ok := r.Metrics[name]
		if !ok {
			continue
		}
		if d := m.Dist; d != nil {
			rows = append(rows, []string{fmt.Sprintf("%s (%s)", metrics.DisplayName(name), d.Unit),
				f(d.Avg), f(d.Min), f(d.Max), f(d.P99), f(d.P90), f(d.P50), f(d.Std)})
		} else if m.Rate != nil {
			rows = append(rows, []string{fmt.Sprintf("%s (%s)", metrics.DisplayName(name), m.Rate.Unit),
				f(m.Rate.Value), "N/A", "N/A", "N/A", "N/A", "N/A", "N/A"})
		}
	}
	rows = append(rows, []string{"Request Count (requests)", strconv.Itoa(r.Counts.OK), "N/A", "N/A", "N/A", "N/A", "N/A", "N/A"})
	fmt.Fprintf(w, "\naiperf-action | LLM Metrics | %s %s | %s\n", r.Target.EndpointType, streamWord(r.Target.Streaming), r.Target.Model)
	table(w, header, rows)

	if r.Counts.Errors > 0 {
		fmt.Fprintf(w, "\nErrors: %d of %d requests failed\n", r.Counts.Errors, r.Counts.Requests)
		kinds := make([]string, 0, len(r.Counts.ErrorsByKind))
		for k := range r.Counts.ErrorsByKind {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool {
			ci, cj := r.Counts.ErrorsByKind[kinds[i]], r.Counts.ErrorsByKind[kinds[j]]
			return ci > cj || ci == cj && kinds[i] < kinds[j]
		})
		for _, k := range kinds {
			fmt.Fprintf(w, "  %-24s %6d  %s\n", k, r.Counts.ErrorsByKind[k], clip(r.Counts.ErrorExamples[k], 100))
		}
	}
	if c := r.Counts; c.Cancelled > 0 {
		var parts []string
		for _, cause := range []string{"planned", "grace", "stop"} {
			if n := c.CancelledBy[cause]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", cause, n))
			}
		}
		fmt.Fprintf(w, "Cancelled: %d requests (%s)\n", c.Cancelled, strings.Join(parts, ", "))
	}
	if r.GPUTelemetry != nil {
		gpuConsole(w, r.GPUTelemetry)
	}
	th := r.ToolHealth
	lag := "n/a"
	if th.ScheduleLagMs != nil {
		lag = fmt.Sprintf("p50 %.3f ms, p99 %.3f ms", th.ScheduleLagMs.P50, th.ScheduleLagMs.P99)
	}
	fmt.Fprintf(w, "\nTool health: %d worker processes, schedule lag %s\n", th.Workers, lag)
	if th.RequestedRate > 0 || th.PlannedRate > 0 {
		fmt.Fprintf(w, "  rate: requested %.2f, planned %.2f, achieved %.2f requests/s\n", th.RequestedRate, th.PlannedRate, th.AchievedRate)
	}
	if len(th.ClientCPU) > 0 {
		var parts []string
		for _, c := range th.ClientCPU {
			parts = append(parts, fmt.Sprintf("w%d %.0f%%", c.Worker, 100*c.Util))
		}
		fmt.Fprintf(w, "  client CPU per worker (share of a core): %s; GC pause %.2f ms total\n", strings.Join(parts, ", "), th.GCPauseMs)
	}
	if st := th.Stamps; st != nil {
		fmt.Fprintf(w, "  timestamps: %s\n", stampLine(st))
	}
	if th.CPUStealPct != nil {
		fmt.Fprintf(w, "  CPU steal during the run: %.1f%%\n", *th.CPUStealPct)
	}
	if th.SlotWaits > 0 {
		fmt.Fprintf(w, "  %d requests were due but waited for a concurrency slot (see *_from_due metrics)\n", th.SlotWaits)
	}
	for _, p := range th.Integrity {
		fmt.Fprintf(w, "  INTEGRITY: %s\n", p)
	}
	for _, warn := range th.Warnings {
		fmt.Fprintf(w, "  WARNING: %s\n", warn)
	}
	fmt.Fprintf(w, "Seed %d, profile_hash %s, %.2f s\n", r.Seed, r.ProfileHash, r.DurationS)
}

func streamWord(s bool) string {
	if s {
		return "streaming"
	}
	return "non-streaming"
}

// table writes an aligned table: the first column left-aligned, the rest right.
func table(w io.Writer, header []string, rows [][]string) {
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(" | " + pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = strings.Repeat("-", widths[i])
	}
	fmt.Fprintln(w, strings.Join(sep, "-+-"))
	for _, r := range rows {
		line(r)
	}
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// stampLine says how responses were timed, and how late the event loop
// read what the kernel had received.
func stampLine(st *result.Stamps) string {
	var s string
	switch {
	case st.Source == "kernel" && st.NetHTTP == 0:
		s = fmt.Sprintf("kernel receive time on all %d reads", st.KernelReads)
	case st.Source == "kernel":
		s = fmt.Sprintf("kernel receive time (%d event-loop reads, %d net/http requests)", st.KernelReads, st.NetHTTP)
	case st.Source == "read":
		s = "when each read returned"
	default:
		s = fmt.Sprintf("kernel receive time on %d event-loop reads and %d of %d net/http requests; the rest when reads returned (%d loop reads)",
			st.KernelReads, st.NetHTTPKernel, st.NetHTTP, st.OtherReads)
	}
	if d := st.ReadDelayMs; d != nil {
		s += fmt.Sprintf("; read delay (kept out of the latencies) p50 %.3f ms, p99 %.3f ms", d.P50, d.P99)
	}
	return s
}
