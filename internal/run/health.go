package run

import (
	"fmt"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// Tool-health thresholds: beyond them the tester may have shaped the load.
const (
	lagWarnMs     = 1.0
	rateWarnRatio = 0.98
	stealWarnPct  = 5.0 // percent of CPU time taken by the hypervisor
	cpuWarnUtil   = 0.8 // share of a core above which a worker may be the limit
)

// workerHealth adds what the controller learnt of the workers to th, then
// the warnings that need it.
func workerHealth(th *result.ToolHealth, out *controller.Outcome, sum *metrics.Summary) {
	th.WorkerPIDs = map[int]int{}
	th.Records = map[int]uint64{}
	var stamps []*wire.Stamps
	var ids []int
	for _, w := range out.Workers {
		if w.Exited && w.WallSeconds > 0 {
			th.ClientCPU = append(th.ClientCPU, result.WorkerCPU{Worker: w.ID, CPUSeconds: w.CPUSeconds, WallSeconds: w.WallSeconds, Util: w.CPUSeconds / w.WallSeconds, MaxRSSMB: float64(w.MaxRSSBytes) / (1 << 20)})
		}
		th.GCPauseMs += float64(w.GCPause) / 1e6
		th.WorkerPIDs[w.ID] = w.PID
		th.Records[w.ID] = w.Records
		stamps, ids = append(stamps, w.Stamps), append(ids, w.ID)
		if c := w.Clock; c != nil {
			th.Clocks = append(th.Clocks, result.WorkerClock{Worker: w.ID, OffsetNs: c.OffsetNs, UncertaintyNs: c.UncertaintyNs, RTTNs: c.RTTNs, Samples: c.Samples})
		}
	}
	var lost []string
	th.Stamps, lost = mergeStamps(ids, stamps)
	th.Integrity = append(append(th.Integrity, out.Problems...), lost...)
	th.LostInFlight = out.LostInFlight
	th.Warnings = append(th.Warnings, healthWarnings(th, sum)...)
}

// LostKind is the error kind of the requests a lost worker had sent and
// never recorded: their outcome is unknown, so they count as failed.
const LostKind = "lost_in_flight"

// countLost adds n requests lost in flight to c: in the requests and the
// errors, under LostKind with the first problem as its example, so that
// run.json's counts and the console's error table hold them by number.
func countLost(c metrics.Counts, n int, problems []string) metrics.Counts {
	c.Requests += n
	c.Errors += n
	kinds := make(map[string]int, len(c.ErrorsByKind)+1)
	for k, v := range c.ErrorsByKind {
		kinds[k] = v
	}
	kinds[LostKind] += n
	c.ErrorsByKind = kinds
	ex := make(map[string]string, len(c.ErrorExamples)+1)
	for k, v := range c.ErrorExamples {
		ex[k] = v
	}
	if _, ok := ex[LostKind]; !ok {
		msg := fmt.Sprintf("%d requests a lost worker had sent were never recorded", n)
		if len(problems) > 0 {
			msg += ": " + strings.Join(problems, "; ")
		}
		ex[LostKind] = msg
	}
	c.ErrorExamples = ex
	return c
}

// healthWarnings says where the tester itself may have been the limit.
func healthWarnings(th *result.ToolHealth, sum *metrics.Summary) []string {
	var w []string
	if l := th.ScheduleLagMs; l != nil && l.P99 > lagWarnMs {
		w = append(w, fmt.Sprintf("schedule lag p99 %.2f ms is above %.0f ms: requests left later than planned", l.P99, lagWarnMs))
	}
	for _, c := range th.ClientCPU {
		if c.Util > cpuWarnUtil {
			w = append(w, fmt.Sprintf("worker %d used %.0f%% of a core: the tester may have been the limit (try more --workers, or check with calibrate)", c.Worker, 100*c.Util))
		}
	}
	if th.CPUStealPct != nil && *th.CPUStealPct > stealWarnPct {
		w = append(w, fmt.Sprintf("the hypervisor stole %.1f%% of this machine's CPU time during the run: timings may be disturbed", *th.CPUStealPct))
	}
	if th.PlannedRate > 0 && th.AchievedRate < rateWarnRatio*th.PlannedRate {
		w = append(w, fmt.Sprintf("achieved rate %.2f req/s is below %.0f%% of the planned %.2f req/s", th.AchievedRate, 100*rateWarnRatio, th.PlannedRate))
	}
	// A chunk read later than the next one arrived carries the next one's
	// receive time (the kernel merges what waits in a socket).
	if st := th.Stamps; st != nil && st.ReadDelayMs != nil && sum != nil {
		if itl, ok := sum.Metrics[metrics.ITL]; ok && itl.Dist != nil && itl.Dist.P50 > 0 && st.ReadDelayMs.P99 > itl.Dist.P50 {
			w = append(w, fmt.Sprintf("read delay p99 %.2f ms is above the inter-token latency p50 %.2f ms: some chunks were read after the next one arrived and carry its time (try more --workers, or check with calibrate)", st.ReadDelayMs.P99, itl.Dist.P50))
		}
	}
	return w
}

// mergeStamps sums the workers' stamp counts and merges their read-delay
// histograms into run.json's stamps; nil when no worker reported any. A
// histogram that can't be decoded, or values a merge dropped, are named
// in lost (integrity problems), not left out quietly.
func mergeStamps(ids []int, workers []*wire.Stamps) (st *result.Stamps, lost []string) {
	st = &result.Stamps{}
	var delay *hdr.Histogram
	n := 0
	for k, w := range workers {
		id := ids[k]
		if w == nil {
			continue
		}
		n++
		st.Add(w.Stamps)
		if w.ReadDelay == "" {
			continue
		}
		h, err := hdr.Decode([]byte(w.ReadDelay))
		if err != nil {
			lost = append(lost, fmt.Sprintf("worker %d's read-delay histogram: %v (left out of read_delay_ms)", id, err))
			continue
		}
		if delay == nil {
			delay = h
		} else if dropped := delay.Merge(h); dropped > 0 {
			lost = append(lost, fmt.Sprintf("worker %d's read-delay histogram: %d values outside the merged range were dropped from read_delay_ms", id, dropped))
		}
	}
	if n == 0 {
		return nil, lost
	}
	st.Source = st.Stamps.Source()
	if delay != nil {
		st.ReadDelayMs = metrics.HistDist("ms", "us", 1000, delay)
	}
	return st, lost
}
