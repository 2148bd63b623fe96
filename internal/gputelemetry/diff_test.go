package gputelemetry

import (
	"strings"
	"testing"
)

func tel(model, driver string, sm float64, n int) *Telemetry {
	t := &Telemetry{}
	for i := range n {
		t.GPUs = append(t.GPUs, GPU{Index: i, Model: model, Driver: driver, Metrics: map[string]Stat{"sm_clock": {Unit: "MHz", P50: ptr(sm)}}})
	}
	return t
}

func TestDiff(t *testing.T) {
	base := tel("NVIDIA H100 80GB HBM3", "570.124.06", 1980, 2)
	if d := Diff(base, tel("NVIDIA H100 80GB HBM3", "570.124.06", 1965, 2)); len(d) != 0 {
		t.Errorf("15 MHz of boost wander is a change: %v", d)
	}
	var got []string
	for _, c := range Diff(base, tel("NVIDIA A100-SXM4-80GB", "575.51.03", 1410, 1)) {
		got = append(got, c.String())
	}
	want := []string{"gpus (DCGM) 2× NVIDIA H100 80GB HBM3 → 1× NVIDIA A100-SXM4-80GB", "gpu driver (DCGM) 570.124.06 → 575.51.03", "gpu SM clock p50 1980 MHz → 1410 MHz"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("changes\n%q\nwant\n%q", got, want)
	}
	if d := Diff(base, nil); d != nil {
		t.Errorf("against no telemetry: %v", d)
	}
	dup := tel("NVIDIA H100 80GB HBM3", "570.124.06", 1980, 3)
	dup.GPUs[2].Duplicate = "http://other/metrics"
	if d := Diff(base, dup); len(d) != 0 {
		t.Errorf("a GPU seen twice counted twice: %v", d)
	}
}
