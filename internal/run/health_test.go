package run

import (
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// delayHist encodes n read delays of us microseconds, as a worker sends them.
func delayHist(t *testing.T, n int, us int64) string {
	t.Helper()
	h := hdr.New(1, 60_000_000, 3)
	for range n {
		h.RecordValue(us)
	}
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The warnings see what the workers reported: a busy worker and reads later
// than the token gap are called out; a calm run has no warning.
func TestWorkerHealthWarnings(t *testing.T) {
	sum := &metrics.Summary{Metrics: map[string]metrics.Metric{metrics.ITL: {Dist: &metrics.Dist{P50: 5}}}}
	out := &controller.Outcome{Workers: []controller.Worker{
		{ID: 0, Records: 100, Exited: true, CPUSeconds: 9, WallSeconds: 10,
			Stamps: &wire.Stamps{Stamps: record.Stamps{KernelReads: 100}, ReadDelay: delayHist(t, 100, 8000)}},
		{ID: 1, Records: 100, Exited: true, CPUSeconds: 2, WallSeconds: 10,
			Stamps: &wire.Stamps{Stamps: record.Stamps{KernelReads: 100}, ReadDelay: delayHist(t, 100, 100)}},
	}}
	var th result.ToolHealth
	workerHealth(&th, out, sum)
	if len(th.ClientCPU) != 2 || th.ClientCPU[0].Util != 0.9 {
		t.Fatalf("client CPU %+v", th.ClientCPU)
	}
	st := th.Stamps
	if st == nil || st.Source != "kernel" || st.KernelReads != 200 || st.ReadDelayMs == nil || st.ReadDelayMs.Count != 200 {
		t.Fatalf("stamps %+v", st)
	}
	if p99 := st.ReadDelayMs.P99; p99 < 7.9 || p99 > 8.1 {
		t.Errorf("read delay p99 %.3f ms, want 8 (the merged histograms)", p99)
	}
	all := strings.Join(th.Warnings, "\n")
	for _, want := range []string{"worker 0 used 90% of a core", "read delay p99 8.00 ms is above the inter-token latency p50 5.00 ms"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "worker 1") {
		t.Errorf("a worker at 20%% warned:\n%s", all)
	}

	calm := &controller.Outcome{Workers: []controller.Worker{
		{ID: 0, Records: 100, Exited: true, CPUSeconds: 3, WallSeconds: 10,
			Stamps: &wire.Stamps{Stamps: record.Stamps{KernelReads: 90, OtherReads: 10}, ReadDelay: delayHist(t, 90, 200)}},
	}}
	th = result.ToolHealth{}
	workerHealth(&th, calm, sum)
	if len(th.Warnings) != 0 {
		t.Errorf("calm run warned: %v", th.Warnings)
	}
	if th.Stamps.Source != "mixed" {
		t.Errorf("source %q with 10 unstamped reads, want mixed", th.Stamps.Source)
	}
}

// mergeStamps sums the workers' counts and merges their read delays; a
// histogram it can't read, or values its merge drops, are integrity
// problems that name the worker.
func TestMergeStamps(t *testing.T) {
	enc := func(h *hdr.Histogram) string {
		b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := hdr.New(1, 60_000_000, 3), hdr.New(1, 60_000_000, 3)
	for v := int64(1); v <= 100; v++ {
		a.RecordValue(v * 10)
		b.RecordValue(v * 20)
	}
	ws := []*wire.Stamps{{ReadDelay: enc(a)}, nil, {ReadDelay: enc(b)}}
	ws[0].KernelReads, ws[2].KernelReads, ws[2].OtherReads = 5, 7, 1
	st, lost := mergeStamps([]int{0, 1, 2}, ws)
	if len(lost) != 0 || st == nil || st.KernelReads != 12 || st.OtherReads != 1 || st.ReadDelayMs == nil || st.ReadDelayMs.Count != 200 {
		t.Fatalf("merged %+v (delay %+v), lost %v", st, st.ReadDelayMs, lost)
	}
	if st, lost := mergeStamps([]int{3}, []*wire.Stamps{nil}); st != nil || lost != nil {
		t.Fatalf("no worker's stamps: %+v, %v", st, lost)
	}
	narrow, wide := hdr.New(1, 1000, 3), hdr.New(1, 60_000_000, 3)
	narrow.RecordValue(10)
	wide.RecordValue(5_000_000)
	_, lost = mergeStamps([]int{4, 5, 6}, []*wire.Stamps{{ReadDelay: enc(narrow)}, {ReadDelay: enc(wide)}, {ReadDelay: "not a histogram"}})
	if len(lost) != 2 || !strings.Contains(lost[0], "worker 5") || !strings.Contains(lost[0], "1 values") || !strings.Contains(lost[1], "worker 6") {
		t.Fatalf("lost %q", lost)
	}
}
