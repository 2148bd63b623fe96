package config

import (
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// An --extra-inputs value that looks like JSON but is not, or one that
// would contradict --streaming, is an error naming the flag, not a
// request changed without a word.
func TestExtraInputsRefused(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`stop:["a",`, "looks like JSON but is not"},
		{`logit_bias:{"1": 2`, "looks like JSON but is not"},
		{`stream:false`, "streaming is set by --streaming"},
	} {
		if _, err := ParseExtraInputs([]string{c.in}); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--extra-inputs") {
			t.Errorf("%q: %v", c.in, err)
		}
	}
	got, err := ParseExtraInputs([]string{`stop:["a","b"]`, "ignore_eos:true", "user:alice"})
	if err != nil || string(got["stop"]) != `["a","b"]` || string(got["ignore_eos"]) != "true" || string(got["user"]) != `"alice"` {
		t.Fatalf("%v %v", got, err)
	}
}

// --gpu-telemetry as AIPerf takes it: bare, with URLs (host:port or full),
// with a fields .csv and "dashboard"; pynvml refused by name; bad values
// named before any load.
func TestGPUTelemetryFlag(t *testing.T) {
	parse := func(args ...string) (*Profile, []string, error) {
		p := DefaultProfile
		fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		p.Bind(fs)
		flags, pos := SplitArgs(fs, args)
		return &p, pos, fs.Parse(flags)
	}
	p, pos, err := parse("-m", "x", "--gpu-telemetry", "--streaming")
	if err != nil || !p.ShowGPUTelemetry || len(p.GPUTelemetry) != 0 || !p.Streaming || len(pos) != 0 {
		t.Fatalf("bare: %+v %v %v", p.GPUTelemetry, pos, err)
	}
	csv := filepath.Join("..", "gputelemetry", "testdata", "custom_gpu_metrics.csv")
	p, pos, err = parse("-m", "x", "-u", "http://127.0.0.1:1", "--gpu-telemetry", "dashboard", "node1:9400", "http://node2:9400/metrics", csv, "--concurrency", "4")
	if err != nil || len(pos) != 0 || p.Concurrency != 4 {
		t.Fatalf("values: %v %v", pos, err)
	}
	r, err := p.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://node1:9400/metrics", "http://node2:9400/metrics"}; !slices.Equal(r.GPU.URLs, want) || len(r.GPU.Extra) != 2 || len(r.GPU.Defaults) != 2 || r.GPU.Interval != 333*time.Millisecond {
		t.Errorf("resolved %+v", r.GPU)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpu-telemetry", "pynvml"}, "--gpu-telemetry pynvml: reading GPUs through NVML is not built here"},
		{[]string{"--gpu-telemetry", "ftp://x:1"}, "--gpu-telemetry \"ftp://x:1\" is not a DCGM exporter URL"},
		{[]string{"--gpu-telemetry", "missing.csv"}, "--gpu-telemetry missing.csv:"},
		{[]string{"--gpu-telemetry", "a:1", "--no-gpu-telemetry"}, "--no-gpu-telemetry with --gpu-telemetry"},
	} {
		p, _, err := parse(append([]string{"-m", "x", "-u", "http://127.0.0.1:1"}, c.args...)...)
		if err == nil {
			err = p.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	t.Setenv("AIPERF_GPU_COLLECTION_INTERVAL", "nope")
	p, _, _ = parse("-m", "x", "-u", "http://127.0.0.1:1")
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "AIPERF_GPU_COLLECTION_INTERVAL=nope") {
		t.Errorf("bad interval: %v", err)
	}
}
