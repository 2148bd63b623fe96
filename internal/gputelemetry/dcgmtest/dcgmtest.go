// Package dcgmtest is a stand-in DCGM exporter for tests: it answers
// /metrics in dcgm-exporter's text (its HELP and TYPE lines, its labels:
// gpu, UUID, pci_bus_id, device, modelName, Hostname,
// DCGM_FI_DRIVER_VERSION) for GPUs whose power is set by the test, with
// the energy counter integrating that power exactly, so a summary's
// energy can be checked against the truth.
package dcgmtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// GPU is one simulated GPU.
type GPU struct {
	Model    string
	UUID     string
	SMClock  float64 // MHz
	MemClock float64 // MHz
	FBTotal  float64 // MiB
	FBUsed   float64 // MiB
}

// Exporter serves the GPUs' metrics.
type Exporter struct {
	URL string

	mu      sync.Mutex
	gpus    []GPU
	power   []float64 // W, now
	energy  []float64 // mJ, as of last
	xid     []float64
	viol    []float64 // µs of power violation
	last    time.Time
	scrapes int
}

// Start serves gpus at a loopback URL ending in /metrics; each starts at
// the given power in watts (len(power) == len(gpus)).
func Start(t testing.TB, gpus []GPU, power []float64) *Exporter {
	e := &Exporter{gpus: gpus, power: append([]float64{}, power...), energy: make([]float64, len(gpus)),
		xid: make([]float64, len(gpus)), viol: make([]float64, len(gpus)), last: time.Now()}
	for i := range e.energy {
		e.energy[i] = 31035686671 + float64(i)*1e9 // since boot, as a real one reads
	}
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	e.URL = srv.URL + "/metrics"
	return e
}

// advance integrates the power up to now.
func (e *Exporter) advance(now time.Time) {
	dt := now.Sub(e.last).Seconds()
	for i, p := range e.power {
		e.energy[i] += p * dt * 1000 // W·s = J = 1000 mJ
	}
	e.last = now
}

// SetPower changes GPU i's power from now on.
func (e *Exporter) SetPower(i int, watts float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance(time.Now())
	e.power[i] = watts
}

// SetXID sets GPU i's last XID error code.
func (e *Exporter) SetXID(i int, code int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.xid[i] = float64(code)
}

// Scrapes is how many times /metrics was read.
func (e *Exporter) Scrapes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.scrapes
}

func (e *Exporter) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	e.mu.Lock()
	e.advance(time.Now())
	e.scrapes++
	var b strings.Builder
	family := func(name, typ, help string, val func(i int) string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for i, g := range e.gpus {
			v := val(i)
			if v == "" {
				continue
			}
			fmt.Fprintf(&b, "%s{gpu=\"%d\",UUID=\"%s\",pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\",modelName=\"%s\",Hostname=\"gpu-node-1\",DCGM_FI_DRIVER_VERSION=\"570.124.06\"} %s\n",
				name, i, g.UUID, 0x18+i*0x1a, i, g.Model, v)
		}
	}
	f := func(v float64) string { return fmt.Sprintf("%g", v) }
	family("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", func(i int) string { return f(e.gpus[i].SMClock) })
	family("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", func(i int) string { return f(e.gpus[i].MemClock) })
	// A field the GPU doesn't support reads DCGM's int64 blank.
	family("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", func(int) string { return "9223372036854775794" })
	family("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", func(i int) string { return f(40 + e.power[i]/20) })
	family("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", func(i int) string { return fmt.Sprintf("%.6f", e.power[i]) })
	family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", func(i int) string { return fmt.Sprintf("%.0f", e.energy[i]) })
	family("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", func(int) string { return "0" })
	family("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", func(i int) string { return f(min(100, e.power[i]/4)) })
	family("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", func(i int) string { return f(min(100, e.power[i]/10)) })
	family("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", func(i int) string { return f(e.gpus[i].FBTotal - e.gpus[i].FBUsed) })
	family("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", func(i int) string { return f(e.gpus[i].FBUsed) })
	family("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", func(i int) string { return f(e.xid[i]) })
	family("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in us).", func(i int) string { return f(e.viol[i]) })
	family("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned (in %).", func(i int) string { return fmt.Sprintf("%.6f", min(1, e.power[i]/700)) })
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(b.String()))
}

// H100s are n GPUs as one node of H100s reads.
func H100s(n int) []GPU {
	var gs []GPU
	for i := range n {
		gs = append(gs, GPU{Model: "NVIDIA H100 80GB HBM3", UUID: fmt.Sprintf("GPU-5c1e2a4b-7d3f-4e21-9a0b-%012d", i), SMClock: 1980, MemClock: 2619, FBTotal: 81559, FBUsed: 72411})
	}
	return gs
}

// SetClocks changes GPU i's SM and memory clocks (MHz).
func (e *Exporter) SetClocks(i int, sm, mem float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gpus[i].SMClock, e.gpus[i].MemClock = sm, mem
}
