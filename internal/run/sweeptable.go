package run

import (
	"fmt"
	"io"
	"slices"
	"strconv"
)

// WriteTable writes the sweep's table: a line a value (its runs' mean
// request and token throughput, TTFT and latency p99), the Pareto front
// marked.
func (res *SweepResult) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "\n%-16s %12s %14s %14s %14s  %s\n", res.Param, "requests/s", "output tok/s", "TTFT p99 ms", "latency p99 ms", "Pareto")
	for i, v := range res.Values {
		if len(v.Runs) == 0 {
			fmt.Fprintf(w, "%-16s %12s\n", strconv.FormatFloat(v.Value, 'g', -1, 64), "(no run)")
			continue
		}
		get := func(k string) string {
			if st, ok := v.Stats[k]; ok {
				return strconv.FormatFloat(st.Mean, 'f', 2, 64)
			}
			return "-"
		}
		mark := ""
		if slices.Contains(res.Pareto, i) {
			mark = "*"
		}
		fmt.Fprintf(w, "%-16s %12s %14s %14s %14s  %s\n", strconv.FormatFloat(v.Value, 'g', -1, 64), get("request_throughput_avg"),
			get("output_token_throughput_avg"), get("time_to_first_token_p99"), get("request_latency_p99"), mark)
	}
}
