// Package gputelemetry scrapes NVIDIA DCGM exporter endpoints during a run
// (AIPerf's --gpu-telemetry) and summarises each GPU over the measurement:
// gauges (power, utilisation, framebuffer memory, SM activity, clocks,
// temperatures) as statistics of the scrapes inside it, counters (energy,
// power- and thermal-violation time) as their increase between its start
// and its end, interpolated between the scrapes either side, so warmup
// is left out. Parsing is the Prometheus text-format library's, through
// servermetrics.Fetch.
package gputelemetry

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Kind is how a field is summarised.
type Kind int

const (
	Gauge   Kind = iota // statistics of the scraped values
	Counter             // increase over the measurement
	LastXID             // DCGM_FI_DEV_XID_ERRORS: the last XID error's code, 0 for none
)

// Field is one DCGM field this tool reads.
type Field struct {
	DCGM  string  // the exporter's metric name
	Key   string  // its name in run.json and the export (AIPerf's, where AIPerf has one)
	Kind  Kind    //
	Unit  string  // after Scale
	Scale float64 // from the exporter's unit
}

// Fields are AIPerf's DCGM set (power, energy, utilisations, framebuffer
// memory, temperature, SM activity, XID errors, power violation) and the
// clocks, limits and throttling its tutorial's exporter CSV adds. Units
// are the exporter's as its HELP text gives them (W, mJ, %, MiB, MHz, °C,
// µs), energy turned into joules and SM activity (a ratio) into percent.
var Fields = []Field{
	{"DCGM_FI_DEV_POWER_USAGE", "gpu_power_usage", Gauge, "W", 1},
	{"DCGM_FI_DEV_POWER_MGMT_LIMIT", "power_management_limit", Gauge, "W", 1},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "energy_consumption", Counter, "J", 1e-3},
	{"DCGM_FI_DEV_GPU_UTIL", "gpu_utilization", Gauge, "%", 1},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", "mem_utilization", Gauge, "%", 1},
	{"DCGM_FI_DEV_ENC_UTIL", "encoder_utilization", Gauge, "%", 1},
	{"DCGM_FI_DEV_DEC_UTIL", "decoder_utilization", Gauge, "%", 1},
	{"DCGM_FI_PROF_SM_ACTIVE", "sm_utilization", Gauge, "%", 100},
	{"DCGM_FI_DEV_FB_USED", "gpu_memory_used", Gauge, "MiB", 1},
	{"DCGM_FI_DEV_FB_FREE", "gpu_memory_free", Gauge, "MiB", 1},
	{"DCGM_FI_DEV_FB_TOTAL", "gpu_memory_total", Gauge, "MiB", 1},
	{"DCGM_FI_DEV_SM_CLOCK", "sm_clock", Gauge, "MHz", 1},
	{"DCGM_FI_DEV_MEM_CLOCK", "mem_clock", Gauge, "MHz", 1},
	{"DCGM_FI_DEV_GPU_TEMP", "gpu_temperature", Gauge, "°C", 1},
	{"DCGM_FI_DEV_MEMORY_TEMP", "memory_temperature", Gauge, "°C", 1},
	{"DCGM_FI_DEV_XID_ERRORS", "xid_errors", LastXID, "code", 1},
	{"DCGM_FI_DEV_POWER_VIOLATION", "power_violation", Counter, "us", 1},
	{"DCGM_FI_DEV_THERMAL_VIOLATION", "thermal_violation", Counter, "us", 1},
}

// fieldOf finds a DCGM name among fs (with or without the "_total" a
// counter may carry).
func fieldOf(fs []Field, name string) (Field, bool) {
	name = strings.TrimSuffix(name, "_total")
	for _, f := range fs {
		if f.DCGM == name {
			return f, true
		}
	}
	return Field{}, false
}

// ReadMetricsCSV reads a dcgm-exporter counters file (the CSV AIPerf takes
// as --gpu-telemetry FILE.csv: "DCGM field, Prometheus type, help" a line,
// '#' comments): the fields it names that Fields lacks are added, a gauge
// or a counter as the file says, in the exporter's unit. An error names
// the file and the line.
func ReadMetricsCSV(path string) ([]Field, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--gpu-telemetry %s: %w", path, err)
	}
	defer f.Close()
	var out []Field
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.SplitN(line, ",", 3)
		if len(cols) < 2 {
			return nil, fmt.Errorf("--gpu-telemetry %s:%d: want \"DCGM_FI_FIELD, gauge|counter, help\", got %q", path, n, line)
		}
		name, typ := strings.TrimSpace(cols[0]), strings.ToLower(strings.TrimSpace(cols[1]))
		if !strings.HasPrefix(name, "DCGM_") {
			return nil, fmt.Errorf("--gpu-telemetry %s:%d: %q is not a DCGM field (DCGM_FI_…)", path, n, name)
		}
		kind := Gauge
		switch typ {
		case "gauge":
		case "counter":
			kind = Counter
		case "label":
			continue // dcgm-exporter's label-only fields carry no value
		default:
			return nil, fmt.Errorf("--gpu-telemetry %s:%d: type %q: want gauge or counter", path, n, cols[1])
		}
		if _, ok := fieldOf(Fields, name); ok {
			continue
		}
		if _, ok := fieldOf(out, name); ok {
			continue
		}
		unit := ""
		if len(cols) == 3 {
			unit = unitOfHelp(cols[2])
		}
		out = append(out, Field{DCGM: name, Key: strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(name, "DCGM_FI_DEV_"), "DCGM_FI_")), Kind: kind, Unit: unit, Scale: 1})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--gpu-telemetry %s: %w", path, err)
	}
	return out, nil
}

// unitOfHelp takes the unit from a help text's "(in X)", as
// dcgm-exporter's files write it.
func unitOfHelp(help string) string {
	_, rest, ok := strings.Cut(help, "(in ")
	if !ok {
		return ""
	}
	u, _, ok := strings.Cut(rest, ")")
	if !ok {
		return ""
	}
	return strings.TrimSpace(u)
}
