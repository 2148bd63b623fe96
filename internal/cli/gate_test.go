package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/fixture"
)

// tinyConfig is a fast simulator gate config (fixture.GateConfig); ttft
// sets the simulator's TTFT.
func tinyConfig(t *testing.T, dir, ttft string) string {
	t.Helper()
	p, err := fixture.GateConfig(dir, ttft)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// seedBaselines records runs into the folder store, as a push to main would.
func seedBaselines(t *testing.T, dir, cfg string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Gate(context.Background(), []string{"--config", cfg, "--mode", "refresh", "--results-dir", filepath.Join(dir, "seed"), "--commit", "base0000"},
		GateOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	if code != 0 {
		t.Fatalf("seeding baselines: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, _ := os.ReadFile(p)
	return string(b)
}

// The README shows the quick-start workflow and docs/action.md the other
// example workflows verbatim, and .ci/run lints the files, so the examples
// people copy pass actionlint.
func TestReadmeHoldsExampleWorkflows(t *testing.T) {
	t.Parallel()
	readme, action := read(t, "../../README.md"), read(t, "../../docs/action.md")
	files, _ := filepath.Glob("../../examples/workflows/*.yml")
	if len(files) < 4 {
		t.Fatalf("%d example workflows", len(files))
	}
	for _, f := range files {
		doc, where := action, "docs/action.md"
		if filepath.Base(f) == "quickstart.yml" {
			doc, where = readme, "README.md"
		}
		if !strings.Contains(doc, read(t, f)) {
			t.Errorf("%s does not hold %s verbatim", where, f)
		}
	}
	// The quick start is on the README's first screen: before the CLI's.
	if a, c := strings.Index(readme, "## Quick start: the GitHub Action"), strings.Index(readme, "## Quick start: the CLI"); a < 0 || c < a {
		t.Error("the README's Action quick start does not come first")
	}
}

// The gate brings up a server from a command, waits for it, profiles it,
// and tears the whole process group down.
func TestGateServerCommand(t *testing.T) {
	usePlainWorkers(t) // builds the plain binary used as the "model server"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "1ms")
	b, _ := os.ReadFile(cfg)
	b = bytes.Replace(b, []byte("server:\n  simulator: true\n  ttft: 1ms\n  itl: 1ms\n"), []byte(fmt.Sprintf(
		"server:\n  command: %s serve --port %d --ttft 1ms --itl 1ms\n  ready-url: http://127.0.0.1:%d/health\n  ready-timeout: 30s\n", plainBin, port, port)), 1)
	os.WriteFile(cfg, b, 0o644)
	var out, errb bytes.Buffer
	code := Gate(context.Background(), []string{"--config", cfg, "--results-dir", filepath.Join(dir, "r")},
		GateOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	if code != 0 || !strings.Contains(out.String(), "simulator in exact mode") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		c.Close()
		t.Fatal("the server is still listening after the gate")
	}
}

// compare reads the baseline folder the gate writes, from its root or
// from a scenario's folder, and names the folders when it holds more than
// one profile.
func TestCompareReadsTheGatesBaselineFolder(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "1ms")
	seedBaselines(t, dir, cfg)
	root := filepath.Join(dir, "baselines")
	run := filepath.Join(dir, "seed", "tiny", "run-1")
	for _, base := range []string{root, filepath.Join(root, "tiny")} {
		res := runCLI(t, time.Minute, "compare", "--baseline", base, "--candidate", run)
		if res.code == ExitError || !strings.Contains(res.stdout, "2 baseline run(s) vs 1 candidate run(s)") {
			t.Fatalf("compare --baseline %s: exit %d\n%s%s", base, res.code, res.stdout, res.stderr)
		}
	}
	os.WriteFile(cfg, []byte(strings.Replace(read(t, cfg), "request-count: 48", "request-count: 40", 1)), 0o644)
	seedBaselines(t, dir, cfg)
	if res := runCLI(t, time.Minute, "compare", "--baseline", root, "--candidate", run); res.code != ExitError || !strings.Contains(res.stderr, "name one of") {
		t.Fatalf("two profiles: exit %d\n%s", res.code, res.stderr)
	}
}
