package server

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestSplitWords(t *testing.T) {
	t.Parallel()
	got, err := SplitWords(`vllm serve "my model" --arg 'a b' x\ y $HOME`)
	want := []string{"vllm", "serve", "my model", "--arg", "a b", "x y", "$HOME"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := SplitWords(`a "b`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestNeverReadyTimesOutWithLog(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := Start(context.Background(), Config{
		Command:  `sh -c 'echo loading weights; echo still loading; sleep 30'`,
		ReadyURL: "http://127.0.0.1:1/health", Timeout: 700 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "not ready") || !strings.Contains(err.Error(), "still loading") {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestEarlyExitGivesCodeAndLog(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), Config{
		Command:  `sh -c 'echo CUDA out of memory >&2; exit 3'`,
		ReadyURL: "http://127.0.0.1:1/health", Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "CUDA out of memory") {
		t.Fatalf("err %v", err)
	}
}

// Teardown kills the whole process group: a grandchild that ignores
// SIGTERM is gone too.
func TestStopKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	ready := filepath.Join(dir, "ready")
	// The leader starts a grandchild that ignores SIGTERM, records its pid,
	// then serves readiness through a file:// check emulated below.
	script := `trap '' TERM; (trap '' TERM; sleep 300) & echo $! > ` + pidFile + `; touch ` + ready + `; sleep 300`
	srv := httpReady(t, ready)
	s, err := Start(context.Background(), Config{Command: "sh -c \"" + script + "\"", ReadyURL: srv, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if !alive(child) {
		t.Fatal("grandchild not running")
	}
	s.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for alive(child) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(child) {
		syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("grandchild %d survived teardown", child)
	}
	s.Stop() // twice is fine
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && !strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// The server command never sees the action's inputs (the GitHub token is
// one) or the runner's tokens; the config's env still reaches it.
func TestServerEnvHoldsNoSecrets(t *testing.T) {
	t.Setenv("INPUT_GITHUB-TOKEN", "ghs_input_secret")
	t.Setenv("GITHUB_TOKEN", "ghs_env_secret")
	t.Setenv("ACTIONS_RUNTIME_TOKEN", "runtime_secret")
	t.Setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "oidc_secret")
	t.Setenv("AIPERF_KEEP_ME", "kept")
	_, err := Start(context.Background(), Config{
		Command:  `sh -c 'env | grep -i -e secret -e KEEP_ME -e HF_TOKEN; exit 3'`,
		Env:      []string{"HF_TOKEN=passed-on-purpose"},
		ReadyURL: "http://127.0.0.1:1/health", Timeout: 20 * time.Second})
	if err == nil {
		t.Fatal("the command exited 3 and Start said nothing")
	}
	log := err.Error()
	for _, secret := range []string{"ghs_input_secret", "ghs_env_secret", "runtime_secret", "oidc_secret"} {
		if strings.Contains(log, secret) {
			t.Errorf("the server saw %s", secret)
		}
	}
	if !strings.Contains(log, "AIPERF_KEEP_ME=kept") || !strings.Contains(log, "HF_TOKEN=passed-on-purpose") {
		t.Errorf("the server's env lost what it needs:\n%s", log)
	}
}
