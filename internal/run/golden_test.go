package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/cli"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

var update = flag.Bool("update", false, "rewrite testdata/run.golden.json")

// TestMain lets this test binary serve as the worker processes.
func TestMain(m *testing.M) {
	if os.Getenv(controller.RoleEnv) != "" {
		os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// kept are the run.json paths whose values are fixed by the flags and the
// seed; every other value is masked to its JSON type, so the golden file
// holds the contract (every field's name, nesting and type) and the
// deterministic part of its content, and not the timings.
var kept = []string{"schema", "tool.name", "scenario", "seed", "payload_seed", "target.model", "target.endpoint_type", "target.streaming",
	"load.", "counts.", "was_cancelled", "tool_health.workers", "tool_health.slot_waits", "tool_health.conn_retries",
	"tool_health.stamps.source", "tool_health.integrity_problems"}

func keep(path string) bool {
	switch path[strings.LastIndex(path, ".")+1:] {
	case "unit", "hdr_unit", "scale", "window_s":
		return true
	}
	for _, k := range kept {
		if path == k || (strings.HasSuffix(k, ".") && strings.HasPrefix(path, k)) {
			return true
		}
	}
	return false
}

// mask replaces what is not kept by its type: "<number>", "<string>",
// "<bool>"; a list of scalars by "<list>", a list of objects by its first
// element masked.
func mask(path string, v any) any {
	if keep(path) {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		switch path {
		case "server_metrics": // keyed by URL (a port), one entry per endpoint
			for _, e := range x {
				return map[string]any{"<url>": mask(path+".<url>", e)}
			}
		case "server_metrics.<url>.metrics": // the server's own families
			return "<families>"
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = mask(strings.TrimPrefix(path+"."+k, "."), e)
		}
		return out
	case []any:
		if len(x) > 0 {
			if _, ok := x[0].(map[string]any); ok {
				return []any{mask(path+"[]", x[0])}
			}
		}
		return "<list>"
	case float64:
		return "<number>"
	case string:
		return "<string>"
	case bool:
		return "<bool>"
	}
	return v
}

// The run.json contract: a short streaming run against the simulator,
// with times and hashes masked, matches testdata/run.golden.json. A field
// added, renamed, retyped or dropped shows in the diff; run with -update to
// accept a deliberate change (fields may be added, never renamed).
func TestRunJSONGolden(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(sctx, ln, sim.New(cfg)) }()
	defer func() { stop(); <-served }()

	p := config.DefaultProfile
	p.Model, p.URL, p.Streaming = "golden", "http://"+ln.Addr().String(), true
	p.Concurrency, p.ConcurrencySet, p.RequestCount, p.RequestCountSet = 2, true, 8, true
	p.ISLMean, p.OSLMean, p.ExtraInputs = 16, 4, []string{"ignore_eos:true"}
	p.Seed, p.SeedSet, p.Workers = 7, true, 1
	p.ArtifactDir = filepath.Join(t.TempDir(), "golden-run")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := run.Profile(ctx, &p, run.Options{Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile(filepath.Join(p.ArtifactDir, "run.json"))
	if err != nil || !bytes.Equal(onDisk, res.JSON) {
		t.Fatalf("Result.JSON is not run.json as written (%v)", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(res.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(mask("", doc)); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	path := filepath.Join("testdata", "run.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		gotPath := path + ".got"
		os.WriteFile(gotPath, got, 0o644)
		diff, _ := exec.Command("diff", "-u", path, gotPath).CombinedOutput()
		t.Errorf("run.json's shape changed:\n%s", diff)
	}
}
