package sysstat

import (
	"runtime"
	"testing"
	"time"
)

func TestReadCPU(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/stat")
	}
	a, err := ReadCPU()
	if err != nil || a.Total == 0 || a.Steal > a.Total {
		t.Fatalf("%+v %v", a, err)
	}
	if p := StealPct(CPU{100, 10}, CPU{300, 30}); p != 10 {
		t.Errorf("StealPct = %v", p)
	}
	if p := StealPct(a, a); p != 0 {
		t.Errorf("no time passed: %v", p)
	}
}

// A witness on an idle machine wakes within a millisecond of its due
// times at the median; one whose goroutine cannot run in time says so.
func TestWitness(t *testing.T) {
	w := StartWitness(10 * time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	if p50 := w.Stop(0.5); p50 > time.Millisecond {
		t.Errorf("idle witness p50 %v", p50)
	}
	w = StartWitness(10 * time.Millisecond)
	// Hold the witness's only way to run: a goroutine that never yields
	// on a single P for 50 ms at a time.
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for i := 0; i < 4; i++ {
		for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		}
		time.Sleep(time.Millisecond)
	}
	if p99 := w.Stop(0.99); p99 < 5*time.Millisecond {
		t.Errorf("a starved witness saw p99 %v", p99)
	}
}
