package worker

import (
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// The concurrency ramp opens global slot g at ramp·g/(C−1); worker w of W
// owns global slots w, w+W, ...
func TestUnlockAt(t *testing.T) {
	t.Parallel()
	start := time.Unix(100, 0)
	ph := &wire.PhaseShard{Phase: schedule.Phase{Ceiling: 5, ConcRampNs: int64(4 * time.Second)}, Stride: 2, Offset: 1}
	r := &phaseRun{ph: ph, start: start}
	for j, want := range []time.Duration{1 * time.Second, 3 * time.Second, 4 * time.Second} {
		if got := r.unlockAt(j).Sub(start); got != want {
			t.Errorf("slot %d opens at %s, want %s", j, got, want)
		}
	}
	ph.ConcRampNs = 0
	if r.unlockAt(2) != start {
		t.Error("without a ramp every slot opens at the start")
	}
}

func TestCycleEntries(t *testing.T) {
	t.Parallel()
	pool := []schedule.Entry{{SessionID: "a"}, {SessionID: "b"}, {SessionID: "c"}}
	ph := &wire.PhaseShard{Phase: schedule.Phase{Cycle: true, Entries: pool, Seed: 1, CancelPct: 100, CancelDelay: 7}, Stride: 2, Offset: 1}
	r := &phaseRun{ph: ph}
	e, ok := r.entry(2) // global request 2·2+1 = 5 → pool[5 mod 3] = "c"
	if !ok || e.Index != 5 || e.SessionID != "c-5" || e.CancelAfterNs != 7 {
		t.Fatalf("entry %+v", e)
	}
}
