package gputelemetry

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Window is the measurement: from its first request sent to its last
// answer, warmup left out.
type Window struct {
	Start, End time.Time
}

// Telemetry is run.json's gpu_telemetry.
type Telemetry struct {
	IntervalS float64 `json:"interval_s"`
	Start     string  `json:"start"`
	End       string  `json:"end"`
	WindowS   float64 `json:"window_s"`
	// Configured are the endpoints tried (AIPerf's defaults with the ones
	// given); Endpoints those that answered with GPUs and were scraped.
	Configured []string   `json:"configured"`
	Endpoints  []Endpoint `json:"endpoints"`
	GPUs       []GPU      `json:"gpus"`
	// Over every GPU (one GPU seen through two endpoints counted once):
	// the measurement's energy and the output tokens per joule of it.
	EnergyJ              *float64 `json:"energy_j,omitempty"`
	OutputTokensPerJoule *float64 `json:"output_tokens_per_joule,omitempty"`
	JoulesPerOutputToken *float64 `json:"joules_per_output_token,omitempty"`
	// Notes say what could not be measured honestly (a window shorter
	// than a scrape interval, a counter that reset, a GPU counted twice).
	Notes []string `json:"notes,omitempty"`
}

// Endpoint is one scraped DCGM exporter.
type Endpoint struct {
	URL      string `json:"url"`
	Scrapes  int    `json:"scrapes"`
	Failures int    `json:"failures"`
	GPUs     int    `json:"gpus"`
}

// GPU is one GPU over the measurement.
type GPU struct {
	Endpoint string          `json:"endpoint"`
	Index    int             `json:"index"`
	UUID     string          `json:"uuid,omitempty"`
	Model    string          `json:"model,omitempty"`
	Hostname string          `json:"hostname,omitempty"`
	PCIBusID string          `json:"pci_bus_id,omitempty"`
	Driver   string          `json:"driver,omitempty"`
	Metrics  map[string]Stat `json:"metrics"`
	// XIDErrors are the XID codes the GPU reported during the measurement
	// (DCGM keeps the last one; each change is a new error). None: [].
	XIDErrors []int `json:"xid_errors"`
	// Duplicate names the endpoint this GPU (same UUID) was first seen
	// through: its energy is not counted again.
	Duplicate string `json:"duplicate_of,omitempty"`
}

// Stat is one field of one GPU: a gauge's statistics over the scrapes
// inside the window (N of them), or a counter's increase over the window
// (CoveredS: the span the scrapes let it cover, interpolated at both ends).
type Stat struct {
	Unit     string   `json:"unit"`
	N        int      `json:"n,omitempty"`
	Avg      *float64 `json:"avg,omitempty"`
	Min      *float64 `json:"min,omitempty"`
	Max      *float64 `json:"max,omitempty"`
	P50      *float64 `json:"p50,omitempty"`
	P90      *float64 `json:"p90,omitempty"`
	P99      *float64 `json:"p99,omitempty"`
	Std      *float64 `json:"std,omitempty"`
	Delta    *float64 `json:"delta,omitempty"`
	CoveredS *float64 `json:"covered_s,omitempty"`
}

func ptr(v float64) *float64 { return &v }

func summarize(cs []collected, tried []string, fields []Field, interval time.Duration, w Window, outputTokens int64) *Telemetry {
	t := &Telemetry{Configured: tried, IntervalS: interval.Seconds(), Start: w.Start.UTC().Format(time.RFC3339Nano), End: w.End.UTC().Format(time.RFC3339Nano),
		WindowS: w.End.Sub(w.Start).Seconds(), Endpoints: []Endpoint{}, GPUs: []GPU{}}
	energy, haveEnergy := 0.0, false
	firstSeen := map[string]string{}
	for _, c := range cs {
		idxs := map[int]bool{}
		for _, r := range c.readings {
			for i := range r.gpus {
				idxs[i] = true
			}
		}
		t.Endpoints = append(t.Endpoints, Endpoint{URL: c.url, Scrapes: len(c.readings), Failures: c.failures, GPUs: len(idxs)})
		order := make([]int, 0, len(idxs))
		for i := range idxs {
			order = append(order, i)
		}
		sort.Ints(order)
		for _, idx := range order {
			g := gpuOver(c, idx, fields, w, t)
			if g.UUID != "" {
				if at, ok := firstSeen[g.UUID]; ok {
					g.Duplicate = at
				} else {
					firstSeen[g.UUID] = c.url
				}
			}
			if e, ok := g.Metrics["energy_consumption"]; ok && e.Delta != nil && g.Duplicate == "" {
				energy += *e.Delta
				haveEnergy = true
			}
			t.GPUs = append(t.GPUs, g)
		}
	}
	if haveEnergy {
		t.EnergyJ = ptr(energy)
		switch {
		case energy <= 0:
			t.Notes = append(t.Notes, fmt.Sprintf("GPU telemetry: the energy counters did not move over the %.3f s measurement: no tokens per joule", t.WindowS))
		case outputTokens > 0:
			t.OutputTokensPerJoule = ptr(float64(outputTokens) / energy)
			t.JoulesPerOutputToken = ptr(energy / float64(outputTokens))
		}
	}
	return t
}

// gpuOver summarises GPU idx of one endpoint over w.
func gpuOver(c collected, idx int, fields []Field, w Window, t *Telemetry) GPU {
	g := GPU{Endpoint: c.url, Index: idx, Metrics: map[string]Stat{}, XIDErrors: []int{}}
	type pt struct {
		at time.Time
		v  float64
	}
	series := make([][]pt, len(fields))
	for _, r := range c.readings {
		gv := r.gpus[idx]
		if gv == nil {
			continue
		}
		if g.UUID == "" {
			g.UUID, g.Model, g.Hostname, g.PCIBusID, g.Driver = gv.id.uuid, gv.id.model, gv.id.hostname, gv.id.pciBusID, gv.id.driver
		}
		for k, v := range gv.vals {
			if !math.IsNaN(v) {
				series[k] = append(series[k], pt{r.at, v})
			}
		}
	}
	name := fmt.Sprintf("%s GPU %d", c.url, idx)
	for k, f := range fields {
		s := series[k]
		if len(s) == 0 {
			continue
		}
		switch f.Kind {
		case Gauge:
			var vals []float64
			for _, p := range s {
				if !p.at.Before(w.Start) && !p.at.After(w.End) {
					vals = append(vals, p.v)
				}
			}
			if len(vals) == 0 {
				if f.Key == "gpu_power_usage" {
					t.Notes = append(t.Notes, fmt.Sprintf("GPU telemetry %s: no scrape fell inside the %.3f s measurement (one every %.3f s): its gauges are left out", name, t.WindowS, t.IntervalS))
				}
				continue
			}
			g.Metrics[f.Key] = gaugeStat(f.Unit, vals)
		case Counter:
			at := func(when time.Time) (float64, time.Time) {
				// Linear between the scrapes either side; outside them,
				// the nearest scrape (and less of the window covered).
				if !when.After(s[0].at) {
					return s[0].v, s[0].at
				}
				for i := 1; i < len(s); i++ {
					if !when.After(s[i].at) {
						a, b := s[i-1], s[i]
						frac := float64(when.Sub(a.at)) / float64(b.at.Sub(a.at))
						return a.v + frac*(b.v-a.v), when
					}
				}
				return s[len(s)-1].v, s[len(s)-1].at
			}
			v0, t0 := at(w.Start)
			v1, t1 := at(w.End)
			reset := false
			for i := 1; i < len(s); i++ {
				if s[i].v < s[i-1].v && !s[i].at.Before(w.Start) && !s[i-1].at.After(w.End) {
					reset = true
				}
			}
			if reset {
				t.Notes = append(t.Notes, fmt.Sprintf("GPU telemetry %s: %s went down during the measurement (the exporter or driver restarted): left out", name, f.DCGM))
				continue
			}
			covered := t1.Sub(t0).Seconds()
			if want := w.End.Sub(w.Start).Seconds(); covered < want-1e-9 {
				t.Notes = append(t.Notes, fmt.Sprintf("GPU telemetry %s: %s covers %.3f s of the %.3f s measurement (scrapes began after it or ended before)", name, f.DCGM, covered, want))
			}
			g.Metrics[f.Key] = Stat{Unit: f.Unit, Delta: ptr(v1 - v0), CoveredS: ptr(covered)}
		case LastXID:
			// The first scrape's code is from before the run (DCGM keeps
			// the last XID since the driver loaded).
			prev := s[0].v
			for _, p := range s[1:] {
				if p.at.After(w.End) {
					break
				}
				if p.at.Before(w.Start) {
					prev = p.v
					continue
				}
				if p.v != 0 && p.v != prev {
					g.XIDErrors = append(g.XIDErrors, int(p.v))
				}
				prev = p.v
			}
		}
	}
	return g
}

// gaugeStat is AIPerf's columns over the scraped values: average, min,
// max, p50/p90/p99 (nearest rank) and the population standard deviation.
func gaugeStat(unit string, vals []float64) Stat {
	sort.Float64s(vals)
	n := float64(len(vals))
	sum := 0.0
	for _, v := range vals {
		sum += v
	}
	avg := sum / n
	ss := 0.0
	for _, v := range vals {
		ss += (v - avg) * (v - avg)
	}
	rank := func(q float64) *float64 { return ptr(vals[max(0, int(math.Ceil(q*n))-1)]) }
	return Stat{Unit: unit, N: len(vals), Avg: ptr(avg), Min: ptr(vals[0]), Max: ptr(vals[len(vals)-1]),
		P50: rank(0.5), P90: rank(0.9), P99: rank(0.99), Std: ptr(math.Sqrt(ss / n))}
}
