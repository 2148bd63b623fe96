package worker

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/client"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
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
	r := &phaseRun{ph: ph, pool: pool}
	var next atomic.Int64
	next.Store(2)
	e, ok := r.entry(&next) // global request 2·2+1 = 5 → pool[5 mod 3] = "c"
	if !ok || e.Index != 5 || e.SessionID != "c-5" || e.CancelAfterNs != 7 {
		t.Fatalf("entry %+v", e)
	}
}

// A scheduler that gets to its due requests only after the duration's end
// (a busy machine: here the phase starts late, after its own end) still
// sends every planned request and records it; it used to drop them
// without a record, and the run said records were lost.
func TestLateSchedulerSendsEveryPlannedRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"a b"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	var entries []schedule.Entry
	for i := 0; i < 20; i++ {
		entries = append(entries, schedule.Entry{Index: i, DueNs: int64(i) * int64(time.Millisecond), Body: []byte(`{}`)})
	}
	ph := &wire.PhaseShard{Phase: schedule.Phase{Open: true, Entries: entries, DurationNs: int64(20 * time.Millisecond), GraceNs: int64(10 * time.Second)}}
	w := &worker{opt: Options{ID: 0}}
	start := time.Now().Add(-time.Second) // every due time, and the end, already passed
	c := &client.Client{HTTP: srv.Client(), URL: srv.URL, Kind: endpoint.Chat{}, Clock: func() int64 { return int64(time.Since(start)) }}
	w.runPhase(context.Background(), c, ph, &ph.Phase, start)
	if len(w.pending) != 20 {
		t.Fatalf("%d records of 20 planned", len(w.pending))
	}
	for _, r := range w.pending {
		if !r.OK() {
			t.Fatalf("record %+v", r)
		}
	}
}

// A worker builds the plan from the shard's spec and checks it against the
// controller's phases: the same plan passes, and a phase that differs or
// an input file changed since the controller read it is refused before
// anything is sent.
func TestSourcesCheckThePlan(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(f, []byte(`{"text":"a b c"}`+"\n"+`{"input_length":4}`+"\n"), 0o644)
	p := config.DefaultProfile
	p.Model, p.URL, p.RequestCount, p.InputFile = "m", "127.0.0.1:1", 6, f
	pl, err := schedule.Build(&p, 5)
	if err != nil {
		t.Fatal(err)
	}
	spec := func() *wire.ShardSpec {
		ph := *pl.Profiling()
		return &wire.ShardSpec{Plan: &wire.PlanSpec{Schema: wire.PlanSchema, Profile: &p, Seed: 5, InputDigest: pl.InputDigest, Tokenizer: pl.Tokenizer.Digest()},
			Phases: []wire.PhaseShard{{Phase: ph, Total: ph.Len(), Count: ph.Len()}}}
	}
	src, _, err := sources(spec())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := src[0].All()
	want, _ := pl.Profiling().All()
	if len(got) != 6 || len(got) != len(want) || string(got[5].Body) != string(want[5].Body) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	old := spec()
	old.Plan.Schema = "aiperf-action/plan/v0"
	if _, _, err := sources(old); err == nil || !strings.Contains(err.Error(), `the controller's plan is "aiperf-action/plan/v0"`) {
		t.Errorf("another plan schema: %v", err)
	}
	s := spec()
	s.Phases[0].Total++
	if _, _, err := sources(s); err == nil || !strings.Contains(err.Error(), "differs from the controller's") {
		t.Errorf("a phase of another size: %v", err)
	}
	os.WriteFile(f, []byte(`{"text":"other words"}`+"\n"+`{"input_length":4}`+"\n"), 0o644)
	if _, _, err := sources(spec()); err == nil || !strings.Contains(err.Error(), "changed since the controller read it") {
		t.Errorf("a changed input file: %v", err)
	}
}
