package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/kube/kuberun"
)

// TestMain lets this test binary serve as the worker process: the
// controller re-executes its own binary with `worker ...` arguments.
func TestMain(m *testing.M) {
	KubeRunner = kuberun.Runner              // (as the command's main sets it)
	if os.Getenv(controller.RoleEnv) != "" { // a worker, or a `serve` that calibrate started
		os.Exit(Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	// No test reaches a real hub: one that needs a hub starts hubtest and
	// sets HF_ENDPOINT itself.
	os.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
	os.Setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
	code := m.Run()
	if plainBinDir != "" {
		os.RemoveAll(plainBinDir)
	}
	os.Exit(code)
}

var (
	plainBinOnce sync.Once
	plainBinDir  string
	plainBin     string
	plainBinErr  error
)

// usePlainWorkers makes the test's runs start their workers from a normal
// build of the binary, without the race detector's instrumentation, for
// tests that hold the workers' timing to sub-millisecond bounds.
func usePlainWorkers(t *testing.T) {
	t.Helper()
	plainBinOnce.Do(func() {
		plainBinDir, plainBinErr = os.MkdirTemp("", "aiperf-action-bin-")
		if plainBinErr != nil {
			return
		}
		plainBin = filepath.Join(plainBinDir, "aiperf-action")
		out, err := exec.Command("go", "build", "-o", plainBin, "github.com/aiperf-action/aiperf-action/cmd/aiperf-action").CombinedOutput()
		if err != nil {
			plainBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if plainBinErr != nil {
		t.Fatal(plainBinErr)
	}
	t.Setenv(WorkerBinEnv, plainBin)
}

// startPlainSim runs `serve` from the plain build in its own process, so
// that a race-instrumented test process does not slow the server down.
func startPlainSim(t *testing.T, args ...string) string {
	t.Helper()
	usePlainWorkers(t)
	cmd := exec.Command(plainBin, append([]string{"serve", "--port", "0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("serve printed %q", line)
	}
	go io.Copy(io.Discard, stdout)
	return strings.TrimSpace(line[i:])
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// --help goes to stdout and says what the command does, with examples, its
// flags (profile's in AIPerf's groups, every one in a group) and the exit
// codes; a bare boolean input of the gate is true, as compare's is.
func TestHelpManners(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"profile", "compare", "gate", "calibrate", "serve"} {
		res := runCLI(t, time.Minute, cmd, "--help")
		if res.code != 0 || res.stderr != "" || !strings.Contains(res.stdout, "Examples:") || !strings.Contains(res.stdout, "Exit codes:") {
			t.Errorf("%s --help: exit %d, stderr %q\n%s", cmd, res.code, res.stderr, res.stdout)
		}
	}
	res := runCLI(t, time.Minute, "profile", "--help")
	for _, g := range []string{"Endpoint:", "Input:", "Load generator:", "Output:", "Server metrics:", "Tool:"} {
		if !strings.Contains(res.stdout, "\n"+g+"\n") {
			t.Errorf("profile --help has no group %s", g)
		}
	}
	if strings.Contains(res.stdout, "\nFlags:\n") {
		t.Errorf("a profile flag has no group:\n%s", res.stdout[strings.Index(res.stdout, "\nFlags:\n"):])
	}
	if res := runCLI(t, time.Minute, "--help"); res.code != 0 || !strings.Contains(res.stdout, "Commands:") {
		t.Errorf("--help: exit %d\n%s", res.code, res.stdout)
	}
	dir := t.TempDir()
	res = runCLI(t, time.Minute, "gate", "--config", filepath.Join(dir, "missing.yml"), "--fail-on-inconclusive")
	if strings.Contains(res.stderr, "flag needs an argument") || !strings.Contains(res.stderr, "missing.yml") {
		t.Errorf("gate --fail-on-inconclusive: exit %d\n%s", res.code, res.stderr)
	}
}
