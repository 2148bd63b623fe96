package gputelemetry

import (
	"fmt"
	"net/url"
)

// aiperfUnits are AIPerf's export units where they differ from run.json's
// (energy in MJ, framebuffer memory in GB), with the factor from ours.
var aiperfUnits = map[string]struct {
	unit  string
	scale float64
}{
	"energy_consumption": {"MJ", 1e-6},
	"gpu_memory_used":    {"GB", 1.048576e-3},
}

// AIPerfExport is profile_export_aiperf.json's telemetry_data, in AIPerf's
// shape: a summary of the endpoints and the window, then each endpoint's
// GPUs ("gpu_0", …) with every metric's unit and statistics (a counter's
// increase as its avg). GPUs seen twice are listed under the endpoint
// that saw them first only.
func (t *Telemetry) AIPerfExport() map[string]any {
	var ok []string
	endpoints := map[string]any{}
	for _, e := range t.Endpoints {
		ok = append(ok, hostPort(e.URL))
		endpoints[hostPort(e.URL)] = map[string]any{"gpus": map[string]any{}}
	}
	for _, g := range t.GPUs {
		if g.Duplicate != "" {
			continue
		}
		ms := map[string]any{}
		for key, s := range g.Metrics {
			unit, scale := s.Unit, 1.0
			if u, ok := aiperfUnits[key]; ok {
				unit, scale = u.unit, u.scale
			}
			m := map[string]any{"unit": unit}
			put := func(name string, v *float64) {
				if v != nil {
					m[name] = *v * scale
				}
			}
			if s.Delta != nil {
				put("avg", s.Delta)
			} else {
				put("avg", s.Avg)
				put("min", s.Min)
				put("max", s.Max)
				put("p50", s.P50)
				put("p90", s.P90)
				put("p99", s.P99)
				put("std", s.Std)
			}
			ms[key] = m
		}
		ms["xid_errors"] = map[string]any{"unit": "count", "avg": len(g.XIDErrors)}
		gpus := endpoints[hostPort(g.Endpoint)].(map[string]any)["gpus"].(map[string]any)
		gpus[fmt.Sprintf("gpu_%d", g.Index)] = map[string]any{
			"gpu_index": g.Index, "gpu_name": g.Model, "gpu_uuid": g.UUID, "platform": "nvidia", "hostname": g.Hostname, "metrics": ms,
		}
	}
	var configured []string
	for _, u := range t.Configured {
		configured = append(configured, hostPort(u))
	}
	return map[string]any{
		"summary":   map[string]any{"endpoints_configured": configured, "endpoints_successful": ok, "start_time": t.Start, "end_time": t.End},
		"endpoints": endpoints,
	}
}

// hostPort is how AIPerf names an endpoint in its export and table.
func hostPort(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}
