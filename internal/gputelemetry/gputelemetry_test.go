package gputelemetry

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/gputelemetry/dcgmtest"
)

func serveFile(t *testing.T, path string) string {
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

func TestParseExporterText(t *testing.T) {
	u := serveFile(t, "testdata/dcgm-exporter-a100x2.txt")
	r, err := scrapeOnce(context.Background(), http.DefaultClient, u, Fields)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.gpus) != 2 {
		t.Fatalf("%d GPUs, want 2", len(r.gpus))
	}
	g0, g1 := r.gpus[0], r.gpus[1]
	if g0.id.model != "NVIDIA A100-SXM4-80GB" || g0.id.uuid != "GPU-0b7e8a52-3c41-9f0d-6a2e-1d5c3b9e7f10" || g0.id.hostname != "dgx-a100-03" ||
		g0.id.driver != "535.161.08" || g0.id.pciBusID != "00000000:07:00.0" {
		t.Errorf("GPU 0 identity %+v", g0.id)
	}
	val := func(g *gpuValues, key string) float64 {
		for i, f := range Fields {
			if f.Key == key {
				return g.vals[i]
			}
		}
		t.Fatalf("no field %s", key)
		return 0
	}
	for _, c := range []struct {
		g    *gpuValues
		key  string
		want float64
	}{
		{g0, "sm_clock", 1410}, {g1, "sm_clock", 1395}, {g0, "gpu_power_usage", 287.512}, {g0, "energy_consumption", 4096771233.115},
		{g0, "sm_utilization", 81.2345}, {g0, "gpu_memory_used", 73567}, {g0, "power_violation", 1883012}, {g1, "gpu_utilization", 0},
	} {
		if got := val(c.g, c.key); math.Abs(got-c.want) > 1e-6*math.Max(1, c.want) {
			t.Errorf("%s = %v, want %v", c.key, got, c.want)
		}
	}
	// DCGM's blanks (int64 and int32) are no value, not a temperature.
	if v := val(g0, "memory_temperature"); !math.IsNaN(v) {
		t.Errorf("memory_temperature %v from an int64 blank", v)
	}
	if v := val(g1, "memory_temperature"); !math.IsNaN(v) {
		t.Errorf("memory_temperature %v from an int32 blank", v)
	}
}

// A constant power over the measurement gives an energy of power × window,
// however different the warmup before it and the tail after it were.
func TestEnergyOverTheWindowOnly(t *testing.T) {
	exp := dcgmtest.Start(t, dcgmtest.H100s(2), []float64{90, 70})
	d := Start(context.Background(), Options{URLs: []string{exp.URL}, Interval: 40 * time.Millisecond})
	if d.Live() != 1 {
		t.Fatalf("%d endpoints live: %v", d.Live(), d.warnings)
	}
	time.Sleep(300 * time.Millisecond) // "warmup" at 90 and 70 W
	exp.SetPower(0, 400)
	exp.SetPower(1, 250)
	time.Sleep(120 * time.Millisecond) // the power settles a few scrapes before the window
	w := Window{Start: time.Now()}
	time.Sleep(800 * time.Millisecond)
	w.End = time.Now()
	time.Sleep(120 * time.Millisecond)
	exp.SetPower(0, 30)
	exp.SetPower(1, 30)
	time.Sleep(200 * time.Millisecond)
	tel, warns := stop(d, w, 3000)
	if tel == nil {
		t.Fatalf("no telemetry: %v", warns)
	}
	if len(tel.GPUs) != 2 || tel.Endpoints[0].GPUs != 2 {
		t.Fatalf("GPUs %+v", tel.GPUs)
	}
	win := w.End.Sub(w.Start).Seconds()
	for i, p := range []float64{400, 250} {
		g := tel.GPUs[i]
		e := g.Metrics["energy_consumption"]
		want := p * win
		if e.Delta == nil || math.Abs(*e.Delta-want)/want > 0.01 {
			t.Errorf("GPU %d energy %v J, want %.2f (±1%%)", i, e.Delta, want)
		}
		pw := g.Metrics["gpu_power_usage"]
		if pw.N < 10 || *pw.Avg != p || *pw.Min != p || *pw.Max != p {
			t.Errorf("GPU %d power %+v, want %v throughout", i, pw, p)
		}
		if g.Metrics["sm_clock"].P50 == nil || *g.Metrics["sm_clock"].P50 != 1980 {
			t.Errorf("GPU %d sm clock %+v", i, g.Metrics["sm_clock"])
		}
		if _, ok := g.Metrics["memory_temperature"]; ok {
			t.Errorf("GPU %d has a memory temperature from DCGM's blank", i)
		}
	}
	total := 650 * win
	if tel.EnergyJ == nil || math.Abs(*tel.EnergyJ-total)/total > 0.01 {
		t.Errorf("energy %v J, want %.2f", tel.EnergyJ, total)
	}
	if tel.OutputTokensPerJoule == nil || math.Abs(*tel.OutputTokensPerJoule*total/3000-1) > 0.01 {
		t.Errorf("tokens per joule %v, want %.4f", tel.OutputTokensPerJoule, 3000/total)
	}
	if len(tel.Notes) != 0 {
		t.Errorf("notes %v", tel.Notes)
	}
}

func TestXIDDuringTheWindow(t *testing.T) {
	exp := dcgmtest.Start(t, dcgmtest.H100s(2), []float64{100, 100})
	exp.SetXID(1, 31) // from before the run: not this run's
	d := Start(context.Background(), Options{URLs: []string{exp.URL}, Interval: 30 * time.Millisecond})
	time.Sleep(100 * time.Millisecond)
	w := Window{Start: time.Now()}
	time.Sleep(100 * time.Millisecond)
	exp.SetXID(0, 79)
	time.Sleep(100 * time.Millisecond)
	w.End = time.Now()
	tel, _ := stop(d, w, 0)
	if got := tel.GPUs[0].XIDErrors; len(got) != 1 || got[0] != 79 {
		t.Errorf("GPU 0 XIDs %v, want [79]", got)
	}
	if got := tel.GPUs[1].XIDErrors; len(got) != 0 {
		t.Errorf("GPU 1 XIDs %v, want none (31 was there before the run)", got)
	}
	if tel.OutputTokensPerJoule != nil {
		t.Error("tokens per joule with no tokens")
	}
}

// One exporter reached by two URLs is one set of GPUs: their energy is
// counted once.
func TestSameGPUsTwice(t *testing.T) {
	exp := dcgmtest.Start(t, dcgmtest.H100s(1), []float64{200})
	other := strings.Replace(exp.URL, "127.0.0.1", "localhost", 1)
	d := Start(context.Background(), Options{URLs: []string{exp.URL, other}, Interval: 30 * time.Millisecond})
	if d.Live() != 2 {
		t.Skipf("localhost does not reach %s here: %v", exp.URL, d.warnings)
	}
	time.Sleep(60 * time.Millisecond)
	w := Window{Start: time.Now()}
	time.Sleep(300 * time.Millisecond)
	w.End = time.Now()
	tel, _ := stop(d, w, 100)
	if len(tel.GPUs) != 2 || tel.GPUs[1].Duplicate != exp.URL {
		t.Fatalf("GPUs %+v", tel.GPUs)
	}
	want := 200 * w.End.Sub(w.Start).Seconds()
	if math.Abs(*tel.EnergyJ-want)/want > 0.02 {
		t.Errorf("energy %v J, want %.2f (once)", *tel.EnergyJ, want)
	}
}

func TestEndpointsThatDontAnswer(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("go_goroutines 3\n")) }))
	defer plain.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	d := Start(context.Background(), Options{URLs: []string{dead.URL + "/metrics", plain.URL + "/metrics"}, Defaults: []string{dead.URL + "/metrics", "http://127.0.0.1:1/metrics"}})
	if d.Live() != 0 {
		t.Fatal("an endpoint is live")
	}
	tel, warns := stop(d, Window{}, 0)
	if tel != nil {
		t.Error("telemetry from nothing")
	}
	// The default that didn't answer is quiet; the URL given is named, once.
	if len(warns) != 2 || !strings.Contains(warns[0], dead.URL) || !strings.Contains(warns[1], "no DCGM GPU series") {
		t.Errorf("warnings %q", warns)
	}
}

// A measurement shorter than the scrape interval: no scrape inside it, so
// no gauge statistics, said; the counters are still interpolated.
func TestWindowShorterThanAScrape(t *testing.T) {
	exp := dcgmtest.Start(t, dcgmtest.H100s(1), []float64{300})
	d := Start(context.Background(), Options{URLs: []string{exp.URL}, Interval: 400 * time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	w := Window{Start: time.Now()}
	time.Sleep(100 * time.Millisecond)
	w.End = time.Now()
	time.Sleep(400 * time.Millisecond)
	tel, _ := stop(d, w, 10)
	g := tel.GPUs[0]
	if _, ok := g.Metrics["gpu_power_usage"]; ok {
		t.Errorf("power statistics from no scrape inside: %+v", g.Metrics["gpu_power_usage"])
	}
	if len(tel.Notes) != 1 || !strings.Contains(tel.Notes[0], "no scrape fell inside") {
		t.Errorf("notes %q", tel.Notes)
	}
	e := g.Metrics["energy_consumption"]
	want := 300 * w.End.Sub(w.Start).Seconds()
	if e.Delta == nil || math.Abs(*e.Delta-want)/want > 0.05 {
		t.Errorf("energy %v, want %.2f", e.Delta, want)
	}
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:9400":            "http://localhost:9400/metrics",
		"http://node2:9400/metrics": "http://node2:9400/metrics",
		"https://node3:9400/":       "https://node3:9400/metrics",
		"node4:9401/custom/metrics": "http://node4:9401/custom/metrics",
		"http://[::1]:9400":         "http://[::1]:9400/metrics",
	} {
		if got, err := NormalizeURL(in); err != nil || got != want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"ftp://x:1/", "http://", ""} {
		if _, err := NormalizeURL(bad); err == nil {
			t.Errorf("NormalizeURL(%q) took it", bad)
		}
	}
}

func TestEnv(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	d, iv, err := Env(get)
	if err != nil || len(d) != 2 || iv != DefaultInterval {
		t.Fatalf("defaults %v %v %v", d, iv, err)
	}
	env["AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS"] = `["http://a:9400/metrics", "b:9401"]`
	env["AIPERF_GPU_COLLECTION_INTERVAL"] = "0.1"
	d, iv, err = Env(get)
	if err != nil || len(d) != 2 || d[1] != "http://b:9401/metrics" || iv != 100*time.Millisecond {
		t.Fatalf("from env %v %v %v", d, iv, err)
	}
	env["AIPERF_GPU_COLLECTION_INTERVAL"] = "0"
	if _, _, err := Env(get); err == nil || !strings.Contains(err.Error(), "AIPERF_GPU_COLLECTION_INTERVAL") {
		t.Errorf("interval 0: %v", err)
	}
}

func TestReadMetricsCSV(t *testing.T) {
	fs, err := ReadMetricsCSV("testdata/custom_gpu_metrics.csv")
	if err != nil {
		t.Fatal(err)
	}
	// The file's fields that Fields lacks, as the file types them.
	if len(fs) != 2 || fs[0].Key != "clock_throttle_reasons" || fs[0].Kind != Gauge || fs[1].Key != "pcie_replay_counter" || fs[1].Kind != Counter {
		t.Fatalf("fields %+v", fs)
	}
	u := serveFile(t, "testdata/dcgm-exporter-a100x2.txt")
	r, err := scrapeOnce(context.Background(), http.DefaultClient, u, append(append([]Field{}, Fields...), fs...))
	if err != nil || r.gpus[0].vals[len(Fields)] != 4 {
		t.Errorf("throttle reasons from the CSV's field: %v %v", r.gpus[0].vals, err)
	}
	dir := t.TempDir()
	bad := dir + "/bad.csv"
	os.WriteFile(bad, []byte("# c\nDCGM_FI_DEV_SM_CLOCK, gauge, ok\nDCGM_FI_DEV_X, histogram, no\n"), 0o644)
	if _, err := ReadMetricsCSV(bad); err == nil || !strings.Contains(err.Error(), "bad.csv:3") {
		t.Errorf("bad type: %v", err)
	}
	if _, err := ReadMetricsCSV(dir + "/none.csv"); err == nil || !strings.Contains(err.Error(), "--gpu-telemetry") {
		t.Errorf("missing file: %v", err)
	}
}

func stop(d *During, w Window, tokens int64) (*Telemetry, []string) {
	d.Stop()
	return d.Summary(w, tokens)
}
