package run

import (
	"fmt"

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
	for _, w := range out.Workers {
		if w.Exited && w.WallSeconds > 0 {
			th.ClientCPU = append(th.ClientCPU, result.WorkerCPU{Worker: w.ID, CPUSeconds: w.CPUSeconds, WallSeconds: w.WallSeconds, Util: w.CPUSeconds / w.WallSeconds})
		}
		th.GCPauseMs += float64(w.GCPause) / 1e6
		th.WorkerPIDs[w.ID] = w.PID
		th.Records[w.ID] = w.Records
		stamps = append(stamps, w.Stamps)
	}
	th.Stamps = wire.MergeStamps(stamps)
	th.Integrity = append(th.Integrity, out.Problems...)
	th.LostInFlight = out.LostInFlight
	th.Warnings = append(th.Warnings, healthWarnings(th, sum)...)
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
