package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/gputelemetry/dcgmtest"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// AIPerf's GPU telemetry command line against a stand-in DCGM exporter
// whose GPUs draw a known power: run.json's energy is that power over the
// measurement alone (a warmup a third as long is left out), the tokens per
// joule follow, the export carries AIPerf's telemetry_data, and the
// console prints the table.
func TestGPUTelemetryEndToEnd(t *testing.T) {
	exp := dcgmtest.Start(t, dcgmtest.H100s(2), []float64{350, 150})
	t.Setenv("AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS", "http://127.0.0.1:1/metrics") // (nothing there: quietly left out)
	t.Setenv("AIPERF_GPU_COLLECTION_INTERVAL", "0.05")
	_, url := startSim(t, 20*time.Millisecond, 5*time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	hostPort := strings.TrimSuffix(strings.TrimPrefix(exp.URL, "http://"), "/metrics")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--concurrency", "1",
		"--request-count", "12", "--warmup-request-count", "4", "--isl", "16", "--osl", "16", "--extra-inputs", "ignore_eos:true",
		"--gpu-telemetry", hostPort, "--random-seed", "3", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	tel := run.GPUTelemetry
	if tel == nil || len(tel.GPUs) != 2 || len(tel.Endpoints) != 1 || len(tel.Configured) != 2 {
		t.Fatalf("gpu_telemetry %+v", tel)
	}
	// The window is the measurement's: run.json's duration.
	if math.Abs(tel.WindowS-run.DurationS) > 1e-6 {
		t.Errorf("window %.6f s, duration %.6f s", tel.WindowS, run.DurationS)
	}
	want := 500 * run.DurationS
	if tel.EnergyJ == nil || math.Abs(*tel.EnergyJ-want)/want > 0.02 {
		t.Errorf("energy %v J, want %.2f J (500 W over %.3f s, ±2%%)", tel.EnergyJ, want, run.DurationS)
	}
	t.Logf("energy %.2f J over the %.3f s measurement (truth %.2f J); %d scrapes", *tel.EnergyJ, run.DurationS, want, tel.Endpoints[0].Scrapes)
	if tpj := tel.OutputTokensPerJoule; tpj == nil || math.Abs(*tpj**tel.EnergyJ-12*16) > 1e-6 {
		t.Errorf("tokens per joule %v, want 192 tokens over %v J", tpj, tel.EnergyJ)
	}
	if p := tel.GPUs[0].Metrics["gpu_power_usage"]; p.Avg == nil || *p.Avg != 350 || p.N < 5 {
		t.Errorf("GPU 0 power %+v", p)
	}
	if tel.GPUs[1].Model != "NVIDIA H100 80GB HBM3" || tel.GPUs[1].Driver != "570.124.06" {
		t.Errorf("GPU 1 %+v", tel.GPUs[1])
	}
	b, err := os.ReadFile(filepath.Join(dir, result.ExportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var export struct {
		Telemetry struct {
			Summary struct {
				Successful []string `json:"endpoints_successful"`
			} `json:"summary"`
			Endpoints map[string]struct {
				GPUs map[string]struct {
					Name    string                    `json:"gpu_name"`
					Metrics map[string]map[string]any `json:"metrics"`
				} `json:"gpus"`
			} `json:"endpoints"`
		} `json:"telemetry_data"`
	}
	if err := json.Unmarshal(b, &export); err != nil {
		t.Fatal(err)
	}
	g0 := export.Telemetry.Endpoints[hostPort].GPUs["gpu_0"]
	if len(export.Telemetry.Summary.Successful) != 1 || g0.Name != "NVIDIA H100 80GB HBM3" || g0.Metrics["energy_consumption"]["unit"] != "MJ" {
		t.Errorf("telemetry_data %s", b)
	}
	if !strings.Contains(res.stdout, "GPU Telemetry") || !strings.Contains(res.stdout, "| GPU 1 | NVIDIA H100 80GB HBM3") || !strings.Contains(res.stdout, "output tokens/J") {
		t.Errorf("console:\n%s", res.stdout)
	}
	// --no-gpu-telemetry scrapes nothing.
	before := exp.Scrapes()
	dir2 := filepath.Join(t.TempDir(), "off")
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--request-count", "2", "--isl", "8", "--osl", "2",
		"--no-gpu-telemetry", "--artifact-dir", dir2)
	if res.code != 0 || exp.Scrapes() != before {
		t.Errorf("--no-gpu-telemetry: exit %d, %d scrapes", res.code, exp.Scrapes()-before)
	}
	if run, _ := result.Read(dir2); run == nil || run.GPUTelemetry != nil {
		t.Errorf("--no-gpu-telemetry wrote gpu_telemetry")
	}
}
