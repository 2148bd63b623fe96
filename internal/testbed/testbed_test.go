package testbed

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSMI is an nvidia-smi that answers as the real one does on a
// two-GPU H100 machine: the CSV query, and the banner with the CUDA version.
func fakeSMI(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nvidia-smi")
	script := `#!/bin/sh
case "$1" in
--query-gpu=*) printf 'NVIDIA H100 80GB HBM3, 550.54.15, 81559\nNVIDIA H100 80GB HBM3, 550.54.15, 81559\n' ;;
*) printf '+-----------------------------------------------------------------------------------------+\n| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n' ;;
esac
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDetectGPUsAndServerVersion(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" { // vLLM's
			io.WriteString(w, `{"version":"0.6.3.post1"}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	e := Detect(context.Background(), Options{ServerURL: srv.URL + "/v1", NvidiaSMI: fakeSMI(t), Tool: "1.2.3", Getenv: func(k string) string {
		return map[string]string{"AIPERF_SERVER_IMAGE": "ghcr.example/o/vllm@sha256:abc\n"}[k]
	}})
	if len(e.GPUs) != 2 || e.GPUs[0].Name != "NVIDIA H100 80GB HBM3" || e.GPUs[0].Driver != "550.54.15" || e.GPUs[0].MemoryMB != 81559 || e.CUDA != "12.4" {
		t.Errorf("gpus %+v cuda %q", e.GPUs, e.CUDA)
	}
	if e.ServerVersion != "0.6.3.post1" || e.ServerImage != "ghcr.example/o/vllm@sha256:abc" {
		t.Errorf("server %q image %q", e.ServerVersion, e.ServerImage)
	}
	if want := e.OS + "-" + e.Arch + "-2xNVIDIA_H100_80GB_HBM3-550.54.15"; e.Testbed != want {
		t.Errorf("testbed %q, want %q", e.Testbed, want)
	}
	// TGI answers /info instead.
	tgi := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/info" {
			io.WriteString(w, `{"model_id":"m","version":"2.4.0","sha":"0123456789abcdef0123"}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer tgi.Close()
	if v := Detect(context.Background(), Options{ServerURL: tgi.URL, NvidiaSMI: "/nonexistent"}).ServerVersion; v != "2.4.0 (0123456789ab)" {
		t.Errorf("tgi version %q", v)
	}
}

func TestKeyAndConfiguredTestbed(t *testing.T) {
	t.Parallel()
	e := Detect(context.Background(), Options{NvidiaSMI: "/nonexistent"})
	if e.GPUs != nil || !strings.HasSuffix(e.Testbed, "-cpu") {
		t.Errorf("no nvidia-smi: %+v", e)
	}
	if e := Detect(context.Background(), Options{NvidiaSMI: "/nonexistent", Testbed: "a100-pool"}); e.Testbed != "a100-pool" {
		t.Errorf("configured testbed: %q", e.Testbed)
	}
	if got := Safe(" ../h100 x8 / vllm "); strings.ContainsAny(got, "/ ") || strings.HasPrefix(got, ".") {
		t.Errorf("Safe: %q", got)
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	a := &Environment{OS: "linux", Arch: "amd64", CPUs: 4, CPUModel: "AMD EPYC 7763", GPUs: []GPU{{"NVIDIA A10G", "535.1", 0}}, Tool: "1.0.0"}
	b := *a
	b.CPUModel, b.Tool, b.ServerVersion = "Intel Xeon 8370C", "1.1.0", "0.6.3"
	d := Diff(a, &b)
	if len(d) != 2 || d[0].Field != "cpu" || !d[0].Hardware() || d[1].Field != "tool" || d[1].Hardware() {
		t.Fatalf("diff %v", d)
	}
	if d[0].String() != "cpu AMD EPYC 7763 → Intel Xeon 8370C" {
		t.Errorf("%s", d[0])
	}
	if Diff(nil, a) != nil {
		t.Error("a run.json without an environment differs")
	}
}
