package report

import (
	"fmt"
	"io"
	"math"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// SideBySide writes a markdown table of two or more runs' headline
// figures, a column a run under its heading: TTFT and ITL percentiles and
// the output token throughput, read from each folder's run.json ("n/a"
// where a run has no such metric).
func SideBySide(w io.Writer, heads, dirs []string) error {
	var runs []*result.Run
	for _, d := range dirs {
		r, err := result.Read(d)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	fmt.Fprint(w, "|")
	for _, h := range heads {
		fmt.Fprintf(w, " | %s", h)
	}
	fmt.Fprint(w, " |\n|---")
	for range heads {
		fmt.Fprint(w, "|---")
	}
	fmt.Fprint(w, "|\n")
	row := func(name string, f func(r *result.Run) string) {
		fmt.Fprintf(w, "| %s", name)
		for _, r := range runs {
			fmt.Fprintf(w, " | %s", f(r))
		}
		fmt.Fprint(w, " |\n")
	}
	dist := func(metric string, pick func(d *metrics.Dist) float64) func(*result.Run) string {
		return func(r *result.Run) string {
			m, ok := r.Metrics[metric]
			if !ok || m.Dist == nil {
				return "n/a"
			}
			v := pick(m.Dist)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return "n/a" // (a ratio over a zero p50)
			}
			return fmt.Sprintf("%.3g", v)
		}
	}
	row("TTFT p50 (ms)", dist(metrics.TTFT, func(d *metrics.Dist) float64 { return d.P50 }))
	row("TTFT p99 (ms)", dist(metrics.TTFT, func(d *metrics.Dist) float64 { return d.P99 }))
	row("TTFT p99 / p50", dist(metrics.TTFT, func(d *metrics.Dist) float64 { return d.P99 / d.P50 }))
	row("ITL p50 (ms)", dist(metrics.ITL, func(d *metrics.Dist) float64 { return d.P50 }))
	row("ITL p99 (ms)", dist(metrics.ITL, func(d *metrics.Dist) float64 { return d.P99 }))
	row("output tokens/s", func(r *result.Run) string {
		if m, ok := r.Metrics[metrics.OutputTput]; ok && m.Rate != nil {
			return fmt.Sprintf("%.0f", m.Rate.Value)
		}
		return "n/a"
	})
	return nil
}
