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
