package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/gputelemetry/dcgmtest"
)

// withTestbed is a copy of config cfg that names its testbed.
func withTestbed(t *testing.T, cfg, name string) string {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "aiperf.yml")
	os.WriteFile(p, append(b, []byte("testbed: "+name+"\n")...), 0o644)
	return p
}

func gateLocal(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Gate(context.Background(), args, GateOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	return code, out.String() + errb.String()
}

// Two testbeds' runs are kept apart: a refresh on one is never the
// baseline of the other, which says why it is not compared; the first's
// own next run is compared with it.
func TestGateKeepsTestbedsApart(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "2ms")
	a100, h100 := withTestbed(t, cfg, "a100x1"), withTestbed(t, cfg, "h100x1")
	if code, out := gateLocal(t, "--config", a100, "--mode", "refresh", "--results-dir", filepath.Join(dir, "seed"), "--commit", "base0000"); code != ExitOK {
		t.Fatalf("refresh on a100: exit %d\n%s", code, out)
	}
	dirs, _ := filepath.Glob(filepath.Join(dir, "baselines", "*", "*"))
	if len(dirs) != 1 || !strings.HasSuffix(dirs[0], ".a100x1") {
		t.Fatalf("baseline folders %v, want one <hash16>.a100x1", dirs)
	}
	code, out := gateLocal(t, "--config", h100, "--results-dir", filepath.Join(dir, "h"))
	rep := read(t, filepath.Join(dir, "h", "report.md"))
	if code != ExitOK || !strings.Contains(rep, "only on other testbeds \\(a100x1\\)") || !strings.Contains(rep, "no baseline on this testbed `h100x1` yet") || !strings.Contains(rep, "testbed h100x1") || strings.Contains(rep, "runs of this PR against") {
		t.Fatalf("h100 against a100's runs: exit %d\n%s\n%s", code, rep, out)
	}
	code, out = gateLocal(t, "--config", a100, "--results-dir", filepath.Join(dir, "a"))
	if rep := read(t, filepath.Join(dir, "a", "report.md")); code == ExitError || !strings.Contains(rep, "runs of this PR against") || !strings.Contains(rep, "testbed a100x1") {
		t.Fatalf("a100 against its own: exit %d\n%s\n%s", code, rep, out)
	}
}

// fakeSMI puts on PATH an nvidia-smi that answers as the real one does for
// one A10G with the CUDA version cuda.
func fakeSMI(t *testing.T, cuda string) {
	t.Helper()
	bin := t.TempDir()
	script := "#!/bin/sh\ncase \"$1\" in\n--query-gpu=*) printf 'NVIDIA A10G, 535.183.01, 23028\\n' ;;\n" +
		"*) printf '| NVIDIA-SMI 535.183.01             Driver Version: 535.183.01   CUDA Version: " + cuda + "     |\\n' ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// A slower PR on a machine whose CUDA changed since the baseline (the
// same GPU and driver, so the same testbed) is reported as an environment
// change, not as the PR's regression: INCONCLUSIVE, the change named.
func TestGateReportsAnEnvironmentChange(t *testing.T) {
	skipVerdictUnderShort(t)
	dir := t.TempDir()
	fakeSMI(t, "12.4")
	if code, out := gateLocal(t, "--config", tinyConfig(t, dir, "2ms"), "--mode", "refresh", "--results-dir", filepath.Join(dir, "seed"), "--commit", "base0000"); code != ExitOK {
		t.Fatalf("refresh: exit %d\n%s", code, out)
	}
	slow := tinyConfig(t, dir, "25ms")
	fakeSMI(t, "12.4") // control: the same machine, a real regression
	code, out := gateLocal(t, "--config", slow, "--results-dir", filepath.Join(dir, "same"))
	if code != ExitRegression {
		t.Fatalf("same environment, 25 ms against 2 ms: exit %d\n%s", code, out)
	}
	fakeSMI(t, "12.6")
	code, out = gateLocal(t, "--config", slow, "--results-dir", filepath.Join(dir, "changed"))
	rep := read(t, filepath.Join(dir, "changed", "report.md"))
	if code != ExitOK || !strings.Contains(rep, "Environment changed") || !strings.Contains(rep, "cuda 12.4 → 12.6") || !strings.Contains(rep, "not judged as a regression") {
		t.Fatalf("CUDA changed: exit %d\n%s\n%s", code, rep, out)
	}
	if !strings.Contains(rep, "1× NVIDIA A10G, driver 535.183.01, CUDA 12.6") {
		t.Errorf("the run metadata lacks the environment:\n%s", rep)
	}
}

// An upgrade that hashes profiles otherwise: the runs stored under the old
// hash are not compared, and the comment says the upgrade did it and that
// their plan is this one's; with baseline: {across-upgrades: true} they are
// the baseline again.
func TestGateAcrossAToolUpgrade(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "2ms")
	if code, out := gateLocal(t, "--config", cfg, "--mode", "refresh", "--results-dir", filepath.Join(dir, "seed"), "--commit", "base0000"); code != ExitOK {
		t.Fatalf("refresh: exit %d\n%s", code, out)
	}
	// As an older version would have stored them: another hash, its version.
	folders, _ := filepath.Glob(filepath.Join(dir, "baselines", "tiny", "*"))
	if len(folders) != 1 {
		t.Fatalf("folders %v", folders)
	}
	_, bed, _ := strings.Cut(filepath.Base(folders[0]), ".")
	old := filepath.Join(dir, "baselines", "tiny", "00000000000000aa."+bed)
	if err := os.Rename(folders[0], old); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(old, "*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var m map[string]any
		json.Unmarshal(b, &m)
		m["profile_hash"], m["tool"] = "sha256:00000000000000aa", map[string]any{"name": "aiperf-action", "version": "0.0.1-old"}
		b, _ = json.Marshal(m)
		os.WriteFile(f, b, 0o644)
	}
	code, out := gateLocal(t, "--config", cfg, "--results-dir", filepath.Join(dir, "pr"))
	rep := read(t, filepath.Join(dir, "pr", "report.md"))
	if code != ExitOK || !strings.Contains(rep, "recorded by aiperf-action 0.0.1-old") || !strings.Contains(rep, "across-upgrades: true") || strings.Contains(rep, "runs of this PR against") {
		t.Fatalf("after the upgrade: exit %d\n%s\n%s", code, rep, out)
	}
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, bytes.Replace(b, []byte("baseline:\n"), []byte("baseline:\n  across-upgrades: true\n"), 1), 0o644)
	code, out = gateLocal(t, "--config", cfg, "--results-dir", filepath.Join(dir, "pr2"))
	rep = read(t, filepath.Join(dir, "pr2", "report.md"))
	if code == ExitError || !strings.Contains(rep, "runs of this PR against") || !strings.Contains(rep, "another hash of the same plan") {
		t.Fatalf("across-upgrades: exit %d\n%s\n%s", code, rep, out)
	}
}

// A slower PR whose GPUs ran at a lower SM clock than the baseline's (as
// their DCGM exporter reports it: a locked clock, a power cap) is an
// environment change, not the PR's regression: INCONCLUSIVE, the clocks
// named. (TestGateReportsAnEnvironmentChange's control shows the same
// slowdown FAILs when nothing changed.)
func TestGateReportsAGPUClockChange(t *testing.T) {
	skipVerdictUnderShort(t)
	dir := t.TempDir()
	exp := dcgmtest.Start(t, dcgmtest.H100s(1), []float64{300})
	t.Setenv("AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS", exp.URL)
	t.Setenv("AIPERF_GPU_COLLECTION_INTERVAL", "0.05") // (the runs are a third of a second)
	if code, out := gateLocal(t, "--config", tinyConfig(t, dir, "2ms"), "--mode", "refresh", "--results-dir", filepath.Join(dir, "seed"), "--commit", "base0000"); code != ExitOK {
		t.Fatalf("refresh: exit %d\n%s", code, out)
	}
	exp.SetClocks(0, 1410, 2619)
	code, out := gateLocal(t, "--config", tinyConfig(t, dir, "25ms"), "--results-dir", filepath.Join(dir, "clocked"))
	rep := read(t, filepath.Join(dir, "clocked", "report.md"))
	if code != ExitOK || !strings.Contains(rep, "Environment changed") || !strings.Contains(rep, "gpu SM clock p50 1980 MHz → 1410 MHz") {
		t.Fatalf("SM clock 1980 → 1410: exit %d\n%s\n%s", code, rep, out)
	}
}
