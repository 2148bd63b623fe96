package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/calibrate"
)

// calibrate end to end on small steps: it starts its own simulator, steps
// concurrency, joins every request with the server's truth, and names the
// highest step within the bounds.
func TestCalibrate(t *testing.T) {
	usePlainWorkers(t) // workers and the simulator from a plain build
	out := filepath.Join(t.TempDir(), "cal.json")
	res := runCLI(t, 2*time.Minute, "calibrate", "--steps", "1,4", "--max-concurrency", "4", "--duration", "1.5",
		"--ttft", "10ms", "--itl", "5ms", "--osl", "16", "--output", out)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	var cal calibrate.Calibration
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &cal) != nil {
		t.Fatalf("--output: %v", err)
	}
	if len(cal.Steps) != 2 || cal.Steps[0].Concurrency != 1 || cal.Steps[1].Concurrency != 4 {
		t.Fatalf("steps %+v", cal.Steps)
	}
	for _, s := range cal.Steps {
		if s.Requests == 0 || s.ChunksPerSec <= 0 || math.IsNaN(s.TTFTP50ErrMs) || len(s.ClientCPU) != s.Workers {
			t.Errorf("step %+v", s)
		}
		// Ideal: 4 streams of 10 + 15·5 = 85 ms requests.
		if want := float64(s.Concurrency) / 0.085; math.Abs(s.IdealRate-want) > 1e-6 {
			t.Errorf("ideal rate %v, want %v", s.IdealRate, want)
		}
		if runtime.GOOS == "linux" && s.Stamps != "kernel" {
			t.Errorf("c=%d: timestamps %q, want the kernel's receive time", s.Concurrency, s.Stamps)
		}
		if s.RatePct < 50 || s.RatePct > 105 {
			t.Errorf("achieved %.1f%% of the ideal rate at c=%d", s.RatePct, s.Concurrency)
		}
	}
	// The ramp defaults to one ideal request duration, and requests sent
	// during it are left out: 1.5 s at ~11.8/s per stream.
	if cal.RampS != 0.085 {
		t.Errorf("ramp %v s, want 0.085", cal.RampS)
	}
	if n := cal.Steps[1].Requests; n < 40 || n > 75 {
		t.Errorf("%d requests measured at c=4 over 1.5 s of 85 ms requests", n)
	}
	if !strings.Contains(res.stdout, "TTFT p50 err") || !strings.Contains(res.stdout, "read p99") || !strings.Contains(res.stdout, "bounds:") {
		t.Errorf("table:\n%s", res.stdout)
	}
	if res := runCLI(t, time.Minute, "calibrate", "--steps", "8,4", "--ramp", "-1"); res.code != ExitError ||
		!strings.Contains(res.stderr, "must increase") || !strings.Contains(res.stderr, "--ramp -1") {
		t.Errorf("bad --steps and --ramp: exit %d %s", res.code, res.stderr)
	}
}

// calibrate measures any streaming endpoint type against the same truth:
// each framing's reader is joined with serve's record of what it wrote,
// request by request (a tokens-in type with --tokenizer, a template with
// its flags, solido_rag with its length as --extra-inputs); a
// non-streaming type, an unknown one, raw, and a template or tokens-in type
// without its flags are refused naming --endpoint-type.
func TestCalibrateEndpointTypes(t *testing.T) {
	usePlainWorkers(t)
	extra := map[string][]string{
		"vllm_generate": {"--tokenizer", filepath.Join("..", "tokenizer", "testdata", "qwen3-trimmed.json")},
		"template": {"--endpoint", "/v1/completions", "--response-field", "choices.0.text",
			"--request-template", `{"model":{{json .Model}},"prompt":{{json .Prompt}},"max_tokens":{{.MaxTokens}},"stream":{{.Stream}}}`},
	}
	for _, typ := range []string{"messages", "ollama_chat", "sglang_generate", "vllm_generate", "solido_rag", "template"} {
		out := filepath.Join(t.TempDir(), "cal.json")
		res := runCLI(t, 2*time.Minute, append([]string{"calibrate", "--endpoint-type", typ, "--steps", "2", "--max-concurrency", "2", "--duration", "1",
			"--ttft", "10ms", "--itl", "5ms", "--osl", "16", "--output", out}, extra[typ]...)...)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", typ, res.code, res.stdout, res.stderr)
		}
		var cal calibrate.Calibration
		b, err := os.ReadFile(out)
		if err != nil || json.Unmarshal(b, &cal) != nil || len(cal.Steps) != 1 {
			t.Fatalf("%s: --output: %v", typ, err)
		}
		s := cal.Steps[0]
		t.Logf("%s: TTFT p50 error %+.2f ms, ITL p99 error %+.2f ms, %d requests", typ, s.TTFTP50ErrMs, s.ITLP99ErrMs, s.Requests)
		// Joined request by request with the truth, no request lost; a
		// reader never runs ahead of what the server wrote (how far behind
		// depends on the machine: calibrate's bounds are its figures).
		if cal.EndpointType != typ || s.Requests == 0 || s.Errors != 0 || !(s.TTFTP50ErrMs > -1) || !(s.ITLP99ErrMs > -1) || !strings.Contains(res.stdout, typ+" streams") {
			t.Errorf("%s: %+v\n%s", typ, s, res.stdout)
		}
	}
	for _, bad := range []string{"embeddings", "nope", "raw", "template", "vllm_generate"} {
		if res := runCLI(t, time.Minute, "calibrate", "--endpoint-type", bad); res.code != ExitError || !strings.Contains(res.stderr, "--endpoint-type") {
			t.Errorf("%s: exit %d %s", bad, res.code, res.stderr)
		}
	}
}
