package run_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// requireNetns is set by .ci/run where it runs as root: the namespaced
// test then fails rather than skips when it cannot make its hosts.
const requireNetns = "AIPERF_REQUIRE_NETNS"

// hosts makes a private network of n+1 namespaces the test owns: "hosts"
// h0…h(n-1) and a server namespace, each with a veth into a bridge in this
// namespace (10.213.0.1, the controller's address; host i is 10.213.0.1i,
// the server 10.213.0.99), nothing routed beyond it. It returns the
// namespaces' names (the server's last) and removes everything when the
// test ends.
func hosts(t *testing.T, n int) []string {
	t.Helper()
	skip := func(why string) {
		if os.Getenv(requireNetns) != "" {
			t.Fatalf("%s (and %s is set)", why, requireNetns)
		}
		t.Skip(why)
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		skip("network namespaces need Linux and root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skip("no ip command (iproute2)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		skip("no unshare command (util-linux)")
	}
	tag := fmt.Sprintf("ap%d", os.Getpid()%100000)
	br := tag + "br"
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	var names []string
	for i := 0; i <= n; i++ {
		names = append(names, fmt.Sprintf("%sh%d", tag, i))
	}
	names[n] = tag + "srv"
	t.Cleanup(func() {
		for _, ns := range names {
			ip("netns", "del", ns)
		}
		ip("link", "del", br)
	})
	must := func(args ...string) {
		if err := ip(args...); err != nil {
			skip(err.Error())
		}
	}
	must("link", "add", br, "type", "bridge")
	must("addr", "add", "10.213.0.1/24", "dev", br)
	must("link", "set", br, "up")
	for i, ns := range names {
		addr := fmt.Sprintf("10.213.0.%d/24", 10+i)
		if i == n {
			addr = "10.213.0.99/24"
		}
		outer, inner := fmt.Sprintf("%sv%d", tag, i), fmt.Sprintf("%sw%d", tag, i)
		must("netns", "add", ns)
		must("link", "add", outer, "type", "veth", "peer", "name", inner)
		must("link", "set", inner, "netns", ns)
		must("link", "set", outer, "master", br)
		must("link", "set", outer, "up")
		must("-n", ns, "addr", "add", addr, "dev", inner)
		must("-n", ns, "link", "set", inner, "up")
		must("-n", ns, "link", "set", "lo", "up")
	}
	return names
}

// truthTTFT is the server's own TTFT p50 and p99 (ms) over its requests
// after the first from, read from /sim/truth once every stream has ended.
func truthTTFT(t *testing.T, base string, from int) (p50, p99 float64, n int) {
	t.Helper()
	resp, err := http.Get(base + "/sim/truth?settle=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Truths []struct {
			FirstToken int64 `json:"first_token_ns"`
		} `json:"truths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var ms []float64
	for _, tr := range body.Truths[from:] {
		ms = append(ms, float64(tr.FirstToken)/1e6)
	}
	if len(ms) == 0 {
		return 0, 0, len(body.Truths)
	}
	sort.Float64s(ms)
	q := func(p float64) float64 { return ms[min(len(ms)-1, int(p*float64(len(ms))))] }
	return q(0.5), q(0.99), len(body.Truths)
}

// Four "hosts" in their own network namespaces, each with its own
// CLOCK_MONOTONIC (a time namespace, offsets of hours) and a wall clock
// that disagrees with the controller's by up to ±1 s (--clock-skew), join
// a controller over a bridge and send 256 streams each to the simulator in
// a fifth namespace. The plan's hash is a single-host run's, every record
// arrives, the clocks are measured within their stated uncertainty, and
// the TTFT the hosts measure is within the truthmock bounds of the
// server's own (p50 within 1 ms, p99 within 5 ms), as is a single-host
// run's of the same load, measured here beside it.
func TestHostsInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("1024 streams from four namespaced hosts")
	}
	names := hosts(t, 4)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := exec.Command("ip", "netns", "exec", names[4], self, "serve", "--host", "10.213.0.99", "--port", "8000", "--ttft", "50ms", "--itl", "5ms")
	srv.Env = append(os.Environ(), controller.RoleEnv+"=serve")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	base := "http://10.213.0.99:8000"
	t.Setenv(controller.TokenEnv, "netns-token")
	skews := []string{"1s", "-1s", "250ms", "0s"}
	for i := 0; ; i++ {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			break
		}
		if i == 100 {
			t.Fatal("the simulator in its namespace did not answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	profile := func(name string) config.Profile {
		p := config.DefaultProfile
		p.Model, p.URL, p.Streaming = "netns", base, true
		p.Concurrency, p.ConcurrencySet, p.RequestCount, p.RequestCountSet = 1024, true, 4096, true
		p.WarmupRequestCount = 1024
		p.ISLMean, p.OSLMean, p.ExtraInputs = 16, 8, []string{"ignore_eos:true"}
		p.Seed, p.SeedSet, p.Workers = 5, true, 4
		p.ArtifactDir = filepath.Join(t.TempDir(), name)
		return p
	}
	errs := func(r *run.Result, from int) (float64, float64, int) {
		s50, s99, n := truthTTFT(t, base, from)
		d := r.Run.Metrics[metrics.TTFT].Dist
		return d.P50 - s50, d.P99 - s99, n
	}
	// measure runs the load from one host, then from the four, and returns
	// each one's TTFT error against the server's truth.
	type try struct {
		single, hosts *run.Result
		s50, s99      float64
		m50, m99      float64
	}
	measure := func(k int) try {
		var tr try
		_, _, seen := truthTTFT(t, base, 0)
		single := profile(fmt.Sprintf("single-%d", k))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		sres, err := run.Profile(ctx, &single, run.Options{Stderr: os.Stderr})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		tr.single = sres
		tr.s50, tr.s99, seen = errs(sres, seen+1024) // (past the warmup's)
		p := profile(fmt.Sprintf("hosts-%d", k))
		p.WorkerListen = "10.213.0.1:0"
		pr, pw := io.Pipe()
		addr := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				if m := joinLine.FindStringSubmatch(sc.Text()); m != nil {
					addr <- m[1]
				}
			}
		}()
		var workers []*exec.Cmd
		started := make(chan struct{})
		go func() {
			defer close(started)
			a := <-addr
			for i := 0; i < 4; i++ {
				// Each host's monotonic clock hours apart (a time namespace),
				// its wall clock off by skews[i].
				c := exec.Command("ip", "netns", "exec", names[i], "unshare", "--fork", "--time", fmt.Sprintf("--monotonic=%d", 3600*(i+1)), fmt.Sprintf("--boottime=%d", 3600*(i+1)),
					self, "worker", "--join", a, "--index", fmt.Sprint(i), "--of", "4", "--clock-skew="+skews[i])
				c.Env = append(os.Environ(), controller.RoleEnv+"=worker")
				c.Stderr = os.Stderr
				if err := c.Start(); err != nil {
					t.Error(err)
					return
				}
				workers = append(workers, c)
			}
		}()
		ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
		res, err := run.Profile(ctx, &p, run.Options{Stderr: pw})
		cancel()
		pw.Close()
		<-started
		for _, c := range workers {
			c.Process.Kill()
			c.Wait()
		}
		if err != nil {
			t.Fatal(err)
		}
		tr.hosts = res
		tr.m50, tr.m99, _ = errs(res, seen+1024)
		return tr
	}
	within := func(p50, p99 float64) bool { return p50 >= -1 && p50 <= 1 && p99 >= -5 && p99 <= 5 }
	var tr try
	for k := 1; k <= 3; k++ {
		tr = measure(k)
		t.Logf("try %d: TTFT error against the server's truth: one host p50 %+.2f ms, p99 %+.2f ms; four namespaced hosts p50 %+.2f ms, p99 %+.2f ms",
			k, tr.s50, tr.s99, tr.m50, tr.m99)
		if within(tr.m50, tr.m99) {
			break // (outside the bounds: measured again, each try's figures logged)
		}
	}
	res, sres := tr.hosts, tr.single
	r := res.Run
	if r.ProfileHash != sres.Run.ProfileHash || r.Counts.Requests != 4096 || r.Counts.OK != 4096 || len(r.ToolHealth.Integrity) > 0 {
		t.Fatalf("hosts: hash %s (single host %s), %d requests, %d ok, problems %v", r.ProfileHash, sres.Run.ProfileHash, r.Counts.Requests, r.Counts.OK, r.ToolHealth.Integrity)
	}
	for _, c := range r.ToolHealth.Clocks {
		want, _ := time.ParseDuration(skews[c.Worker])
		if d := c.OffsetNs - int64(want); d > c.UncertaintyNs || -d > c.UncertaintyNs {
			t.Errorf("host %d: offset %d ns ± %d, truth %s", c.Worker, c.OffsetNs, c.UncertaintyNs, skews[c.Worker])
		}
	}
	t.Logf("clocks %+v", r.ToolHealth.Clocks)
	if !within(tr.m50, tr.m99) {
		if !within(tr.s50, tr.s99) {
			t.Skipf("one host missed the bounds too in every try (a disturbed machine): its p50 %+.2f ms, p99 %+.2f ms; the hosts' %+.2f, %+.2f", tr.s50, tr.s99, tr.m50, tr.m99)
		}
		t.Errorf("four hosts: TTFT error p50 %+.2f ms, p99 %+.2f ms, outside 1 and 5 ms, where one host's was %+.2f and %+.2f", tr.m50, tr.m99, tr.s50, tr.s99)
	}
}
