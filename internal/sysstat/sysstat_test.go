package sysstat

import (
	"runtime"
	"testing"
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
