package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/calibrate"
)

// Calibration renders calibrate's table.
func Calibration(w io.Writer, cal *calibrate.Calibration) {
	if cal.Against != "" {
		fmt.Fprintf(w, "aiperf-action calibrate: against %s, %s streams, TTFT %g ms, ITL %g ms, %d tokens; per step one warmup request a stream, then about %gs measured; ITL p99 err is the chunk-gap p99's\n\n", cal.Truth, cal.EndpointType, cal.TTFTMs, cal.ITLMs, cal.OSL, cal.DurationS)
	} else {
		fmt.Fprintf(w, "aiperf-action calibrate: exact-mode server, %s streams, TTFT %g ms, ITL %g ms, %d tokens; per step a %gs ramp, then %gs measured\n\n", cal.EndpointType, cal.TTFTMs, cal.ITLMs, cal.OSL, cal.RampS, cal.DurationS)
	}
	fmt.Fprintln(w, "  conc  workers   rate(ach/ideal)  TTFT p50 err  TTFT p99 err  ITL p99 err  lag p99   read p99   client CPU/proc     chunks/s  CPU µs/chunk  steal  ok")
	for _, s := range cal.Steps {
		var cpus []string
		for _, u := range s.ClientCPU {
			cpus = append(cpus, fmt.Sprintf("%.0f%%", 100*u))
		}
		ok := "yes"
		if !s.Pass {
			ok = "NO: " + strings.Join(s.Why, "; ")
		}
		fmt.Fprintf(w, "%6d  %7d  %7.1f/s %6.1f%%  %+9.2f ms  %+9.2f ms  %+8.2f ms  %5.2f ms  %6.2f ms  %-18s %9.0f  %12.1f  %4.1f%%  %s\n",
			s.Concurrency, s.Workers, s.AchievedRate, s.RatePct, s.TTFTP50ErrMs, s.TTFTP99ErrMs, s.ITLP99ErrMs, s.LagP99Ms, s.ReadDelayP99,
			strings.Join(cpus, " "), s.ChunksPerSec, s.CPUUsPerChunk, s.StealPct, ok)
	}
	fmt.Fprintln(w, "\n  conc  TTFT from write p50 err  p99 err  dials  connection setup p50  p99")
	for _, s := range cal.Steps {
		fmt.Fprintf(w, "%6d  %+20.2f ms  %+7.2f ms  %5d  %17.2f ms  %6.2f ms\n", s.Concurrency, s.TTFTWriteP50ErrMs, s.TTFTWriteP99ErrMs, s.Dials, s.ConnSetupP50Ms, s.ConnSetupP99Ms)
	}
	for _, s := range cal.Steps {
		if s.Stamps != "kernel" {
			fmt.Fprintf(w, "\n(concurrency %d: timestamps %q, not all the kernel's receive time: how late the client read is partly in the errors)\n", s.Concurrency, s.Stamps)
			break
		}
	}
	b := cal.Bounds
	fmt.Fprintf(w, "\nbounds: TTFT p50 error ≤ %g ms, TTFT p99 error ≤ %g ms, ITL p99 error ≤ %g ms, rate ≥ %g%%\n", b.TTFTP50Ms, b.TTFTP99Ms, b.ITLP99Ms, b.MinRate)
	if cal.TrustedUpTo > 0 {
		fmt.Fprintf(w, "this runner can be trusted up to %d concurrent streams\n", cal.TrustedUpTo)
	} else {
		fmt.Fprintln(w, "this runner stayed within the bounds at no step")
	}
}
