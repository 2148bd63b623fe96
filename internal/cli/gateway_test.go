package cli

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// A server behind a gateway prefix: --url is a base URL, so the endpoint
// type's path goes after the prefix, streaming and not, chat and
// completions, and nothing reaches the server outside it.
func TestProfileBehindAGatewayPrefix(t *testing.T) {
	_, upstream := startSim(t, 2*time.Millisecond, time.Millisecond)
	up, _ := url.Parse(upstream)
	proxy := httputil.NewSingleHostReverseProxy(up)
	proxy.FlushInterval = -1 // stream as the server writes
	var outside, inside atomic.Int64
	gw := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/team/qwen")
		if !ok || !strings.HasPrefix(rest, "/v1/") {
			outside.Add(1)
			http.NotFound(w, r)
			return
		}
		inside.Add(1)
		r.URL.Path = rest
		proxy.ServeHTTP(w, r)
	}))
	for _, c := range []struct {
		typ, base string
		stream    bool
	}{
		{"chat", gw + "/team/qwen", true},
		{"completions", gw + "/team/qwen/", false},
		{"chat", strings.TrimPrefix(gw, "http://") + "/team/qwen/v1", false},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		args := []string{"profile", "-m", "sim", "-u", c.base, "--endpoint-type", c.typ, "--concurrency", "2", "--request-count", "6",
			"--isl", "16", "--osl", "4", "--random-seed", "3", "--no-server-metrics", "--artifact-dir", dir}
		if c.stream {
			args = append(args, "--streaming")
		}
		res := runCLI(t, time.Minute, args...)
		if res.code != 0 {
			t.Fatalf("%s %s: exit %d\n%s", c.typ, c.base, res.code, res.stderr)
		}
		run, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"chat": "/team/qwen/v1/chat/completions", "completions": "/team/qwen/v1/completions"}[c.typ]
		if run.Counts.OK != 6 || run.Counts.Errors != 0 || !strings.HasSuffix(run.Target.URL, want) {
			t.Errorf("%s %s: counts %+v, url %s (want …%s)", c.typ, c.base, run.Counts, run.Target.URL, want)
		}
	}
	if outside.Load() != 0 || inside.Load() < 18 {
		t.Errorf("%d requests outside the prefix, %d inside", outside.Load(), inside.Load())
	}
}
