package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kube render from the command line: the profile's flags after `--` are
// checked as profile checks them, and the manifests written atomically.
func TestKubeRender(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.yaml")
	res := runCLI(t, time.Minute, "kube", "render", "--name", "bench", "--image", "ghcr.io/acme/aiperf-action:1", "--workers", "4", "--out", out,
		"--", "-m", "m", "-u", "http://vllm:8000", "--streaming", "--concurrency", "2048", "--request-count", "10000")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || strings.Count(string(b), "kind: Job") != 2 || !strings.Contains(string(b), "completionMode: Indexed") || !strings.Contains(string(b), "- --concurrency\n        - \"2048\"") {
		t.Fatalf("%v\n%s", err, b)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "b", "--image", "i", "--workers", "2", "--", "-m", "m", "--api-key", "sk-1"}, "a credential would be written"},
		{[]string{"--name", "b", "--image", "i", "--workers", "2", "--", "-m", "m", "-u", "http://x:1", "--concurency", "3"}, "--concurency"},
		{[]string{"--name", "b", "--workers", "2", "--", "-m", "m"}, "--image"},
	} {
		res := runCLI(t, time.Minute, append([]string{"kube", "render"}, c.args...)...)
		if res.code != ExitError || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%v: exit %d, want %q in %s", c.args, res.code, c.want, res.stderr)
		}
	}
}

// kube run from the command line: the cluster's credentials are read as
// kubectl reads them, and a cluster that cannot be reached is said so
// before anything else; the run itself is TestKubeRun (internal/kube).
func TestKubeRunCommandLine(t *testing.T) {
	profile := []string{"--", "-m", "m", "-u", "http://127.0.0.1:9", "--request-count", "4"}
	res := runCLI(t, time.Minute, append([]string{"kube", "run", "--image", "i", "--workers", "1", "--kubeconfig", filepath.Join(t.TempDir(), "nope")}, profile...)...)
	if res.code != ExitError || !strings.Contains(res.stderr, "--kubeconfig") {
		t.Errorf("a missing kubeconfig: exit %d\n%s", res.code, res.stderr)
	}
	kc := filepath.Join(t.TempDir(), "config")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: down
  cluster: {server: "http://127.0.0.1:9"}
contexts:
- name: down
  context: {cluster: down, user: me, namespace: perf}
users:
- name: me
  user: {token: abc}
current-context: down
`), 0o600)
	res = runCLI(t, time.Minute, append([]string{"kube", "run", "--image", "i", "--workers", "1", "--kubeconfig", kc, "--timeout", "20s"}, profile...)...)
	if res.code != ExitError || !strings.Contains(res.stderr, "creating secret/aiperf-token in namespace perf") || strings.Contains(res.stderr, "deleted") {
		t.Errorf("a cluster that is down: exit %d\n%s", res.code, res.stderr)
	}
	// The controller's --profile-json is the whole profile.
	pj := filepath.Join(t.TempDir(), "profile.json")
	os.WriteFile(pj, []byte(`{"target": {"model": "m", "url": "http://127.0.0.1:9"}, "nonsense_key": 1}`), 0o644)
	if res := runCLI(t, time.Minute, "profile", "--profile-json", pj, "-m", "other"); res.code != ExitError || !strings.Contains(res.stderr, "--model cannot be given with it") {
		t.Errorf("--profile-json with a profile flag: exit %d\n%s", res.code, res.stderr)
	}
	if res := runCLI(t, time.Minute, "profile", "--profile-json", pj); res.code != ExitError || !strings.Contains(res.stderr, `unknown field "nonsense_key"`) {
		t.Errorf("--profile-json of another version: exit %d\n%s", res.code, res.stderr)
	}
	res = runCLI(t, time.Minute, "kube", "apply")
	if res.code != ExitError || !strings.Contains(res.stderr, "kube run --name") {
		t.Errorf("kube apply: exit %d\n%s", res.code, res.stderr)
	}
}
