package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// A server behind a gateway prefix: --url is a base URL, so the endpoint
// type's path goes after the prefix, streaming and not, chat and
// completions, and nothing reaches the server outside it.
func TestProfileBehindAGatewayPrefix(t *testing.T) {
	_, upstream := startSim(t, 2*time.Millisecond, time.Millisecond)
	up, _ := url.Parse(upstream)
	proxy := httputil.NewSingleHostReverseProxy(up)
	proxy.FlushInterval = -1                                   // stream as the server writes
	proxy.Transport = &http.Transport{DisableKeepAlives: true} // a fresh upstream connection a request
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
		// The proxy gets the request body read in full. Handed the server's
		// own body, its transport reads it once more after the declared
		// length, and when that read comes after the proxy has written the
		// response head (which drains and closes an HTTP/1 server's request
		// body), it fails and the transport closes the upstream connection
		// mid-stream (Go issue 40747): 14 of 150 runs under three CPU hogs
		// had a stream cut that way, none with the body read first.
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
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

// Several --url are several servers taking the requests in turn (AIPerf's
// --url-strategy round_robin): request i goes to URL i mod n, on the event
// loop (one kept-alive pool per server) and on net/http, and run.json names
// every server.
func TestProfileRoundRobinURLs(t *testing.T) {
	var sims [2]*sim.Server
	var urls [2]string
	for i := range urls {
		sims[i], urls[i] = startSim(t, 2*time.Millisecond, time.Millisecond)
	}
	for _, c := range []struct {
		name string
		args []string
		env  string
	}{{"stream, loop", []string{"--streaming"}, ""}, {"stream, net/http", []string{"--streaming"}, "nethttp"}, {"whole", nil, ""}} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("AIPERF_ACTION_CLIENT", c.env)
			}
			for _, sm := range sims {
				sm.Reset()
			}
			dir := filepath.Join(t.TempDir(), "run")
			args := append([]string{"profile", "-m", "sim", "-u", urls[0], "-u", urls[1], "--url-strategy", "round_robin",
				"--concurrency", "3", "--request-count", "10", "--isl", "16", "--osl", "4", "--random-seed", "3", "--no-server-metrics", "--artifact-dir", dir}, c.args...)
			res := runCLI(t, time.Minute, args...)
			if res.code != 0 {
				t.Fatalf("exit %d\n%s", res.code, res.stderr)
			}
			run, err := result.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if run.Counts.OK != 10 || len(run.Target.URLs) != 2 || !strings.HasPrefix(run.Target.URLs[1], urls[1]) {
				t.Errorf("counts %+v, urls %v", run.Counts, run.Target.URLs)
			}
			if a, b := len(sims[0].Truths()), len(sims[1].Truths()); a != 5 || b != 5 {
				t.Errorf("the servers took %d and %d of 10 requests, want 5 and 5", a, b)
			}
		})
	}
}

// With several servers, a multi-turn session's turns all go to one of
// them (its history is cached there), and the sessions are spread over
// both.
func TestSessionsStickToOneURL(t *testing.T) {
	var sims [2]*sim.Server
	var urls [2]string
	for i := range urls {
		sims[i], urls[i] = startSim(t, 2*time.Millisecond, time.Millisecond)
	}
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", urls[0], "-u", urls[1], "--streaming", "--concurrency", "3",
		"--conversation-num", "12", "--conversation-turn-mean", "3", "--isl", "16", "--osl", "4", "--random-seed", "3", "--no-server-metrics", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	where := map[string]int{} // session id → the server that had its first turn
	for k, sm := range sims {
		for _, tr := range sm.Truths() {
			id, _, _ := strings.Cut(tr.ID, "-turn")
			if w, ok := where[id]; ok && w != k {
				t.Errorf("session %s went to both servers", id)
			}
			where[id] = k
		}
	}
	if n := len(sims[0].Truths()) + len(sims[1].Truths()); n != 36 || len(where) != 12 {
		t.Fatalf("%d requests in %d sessions, want 36 in 12", n, len(where))
	}
	if a, b := len(sims[0].Truths()), len(sims[1].Truths()); a == 0 || b == 0 {
		t.Errorf("the sessions all went to one server (%d and %d requests)", a, b)
	}
}
