package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/gputelemetry"
)

// gpuConsole writes a table per GPU, as AIPerf's GPU Telemetry Summary
// does (a counter's increase over the measurement in its avg column),
// then the energy and tokens per joule over all of them.
func gpuConsole(w io.Writer, t *gputelemetry.Telemetry) {
	f := func(v *float64) string {
		if v == nil {
			return "N/A"
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	var ok []string
	for _, e := range t.Endpoints {
		ok = append(ok, clip(e.URL, 80))
	}
	fmt.Fprintf(w, "\naiperf-action | GPU Telemetry | %d of %d DCGM endpoints scraped (%s) every %.3f s; the measurement's %.2f s, warmup left out\n",
		len(t.Endpoints), len(t.Configured), strings.Join(ok, ", "), t.IntervalS, t.WindowS)
	for _, g := range t.GPUs {
		title := fmt.Sprintf("%s | GPU %d | %s", clip(g.Endpoint, 80), g.Index, clip(g.Model, 60))
		if g.Duplicate != "" {
			fmt.Fprintf(w, "\n%s: the same GPU (%s) as at %s, not counted again\n", title, clip(g.UUID, 60), clip(g.Duplicate, 80))
			continue
		}
		var rows [][]string
		for _, fl := range gputelemetry.Fields {
			s, ok := g.Metrics[fl.Key]
			if !ok {
				continue
			}
			name := fmt.Sprintf("%s (%s)", fl.Key, s.Unit)
			if s.Delta != nil {
				rows = append(rows, []string{name + ", increase", f(s.Delta), "", "", "", "", "", ""})
				continue
			}
			rows = append(rows, []string{name, f(s.Avg), f(s.Min), f(s.Max), f(s.P99), f(s.P90), f(s.P50), f(s.Std)})
		}
		xid := "none"
		if len(g.XIDErrors) > 0 {
			xid = strings.Trim(fmt.Sprint(g.XIDErrors), "[]")
		}
		rows = append(rows, []string{"xid_errors (codes)", xid, "", "", "", "", "", ""})
		fmt.Fprintf(w, "\n%s\n", title)
		table(w, []string{"Metric", "avg", "min", "max", "p99", "p90", "p50", "std"}, rows)
	}
	if t.EnergyJ != nil {
		fmt.Fprintf(w, "Energy over the measurement: %.1f J", *t.EnergyJ)
		if t.OutputTokensPerJoule != nil {
			fmt.Fprintf(w, "; %.3f output tokens/J (%.4f J a token)", *t.OutputTokensPerJoule, *t.JoulesPerOutputToken)
		}
		fmt.Fprintln(w)
	}
}
