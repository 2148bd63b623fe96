package config

import (
	"os"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/gputelemetry"
	"github.com/aiperf-action/aiperf-action/internal/otelexport"
)

// GPUTelemetry is the DCGM exporters a run scrapes and how.
type GPUTelemetry struct {
	Off      bool                 // --no-gpu-telemetry
	URLs     []string             // --gpu-telemetry's URLs, normalized
	Defaults []string             // always tried (AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS)
	Interval time.Duration        // AIPERF_GPU_COLLECTION_INTERVAL
	Extra    []gputelemetry.Field // a --gpu-telemetry .csv's fields
}

// OTel is the collector a run streams its GenAI metrics to.
type OTel struct {
	URL      string            // the OTLP/HTTP metrics endpoint (otelexport.Endpoint)
	Headers  map[string]string // --otel-headers
	Provider string            // gen_ai.provider.name
}

// resolveOTel reads --otel-url, --otel-headers and --gen-ai-provider.
func (p *Profile) resolveOTel(bad func(string, ...any)) *OTel {
	if p.OTelURL == "" {
		if len(p.OTelHeaders) > 0 || p.GenAIProvider != "" {
			bad("--otel-headers and --gen-ai-provider go with --otel-url (the collector to export to)")
		}
		return nil
	}
	var o OTel
	var err error
	if o.URL, err = otelexport.Endpoint(p.OTelURL); err != nil {
		bad("--otel-url %s: %v (give host, host:port or an http(s) URL of an OTLP/HTTP collector)", p.OTelURL, err)
	}
	if o.Headers, err = otelexport.Headers(p.OTelHeaders); err != nil {
		bad("--otel-headers: %v", err)
	}
	o.Provider = p.GenAIProvider
	return &o
}

// resolveGPUTelemetry reads --gpu-telemetry's values and AIPerf's
// environment settings for it.
func (p *Profile) resolveGPUTelemetry(bad func(string, ...any)) GPUTelemetry {
	g := GPUTelemetry{Off: p.NoGPUTelemetry}
	if p.NoGPUTelemetry {
		if len(p.GPUTelemetry) > 0 || p.ShowGPUTelemetry {
			bad("--no-gpu-telemetry with --gpu-telemetry: give one")
		}
		return g
	}
	for _, v := range p.GPUTelemetry {
		switch low := strings.ToLower(v); {
		case low == "dashboard":
			// AIPerf's live TUI: here the table is printed at the end.
		case low == "pynvml" || low == "amdsmi":
			bad("--gpu-telemetry %s: reading GPUs through %s is not built here (no NVML or ROCm binding): run NVIDIA's dcgm-exporter beside the server and give its address (--gpu-telemetry host:9400)", v, map[string]string{"pynvml": "NVML", "amdsmi": "amdsmi"}[low])
		case strings.HasSuffix(low, ".csv"):
			fs, err := gputelemetry.ReadMetricsCSV(v)
			if err != nil {
				bad("%v", err)
			}
			g.Extra = append(g.Extra, fs...)
		default:
			u, err := gputelemetry.NormalizeURL(v)
			if err != nil {
				bad("--gpu-telemetry %v", err)
				continue
			}
			g.URLs = append(g.URLs, u)
		}
	}
	var err error
	if g.Defaults, g.Interval, err = gputelemetry.Env(os.Getenv); err != nil {
		bad("%v", err)
	}
	return g
}
