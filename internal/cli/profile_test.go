package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/fixture"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// startSim serves the simulator on a loopback port for the test's lifetime.
func startSim(t *testing.T, ttft, itl time.Duration) (*sim.Server, string) {
	t.Helper()
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = ttft, itl
	s := sim.New(cfg)
	return s, serveHandler(t, s)
}

func serveHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	return fixture.Serve(t, h)
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs the command line with a hard bound on its duration.
func runCLI(t *testing.T, limit time.Duration, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Run(ctx, args, &out, &errb) }()
	select {
	case code := <-done:
		return cliResult{code, out.String(), errb.String()}
	case <-time.After(limit + 30*time.Second):
		t.Fatalf("aiperf-action %s hung for %s", strings.Join(args, " "), limit+30*time.Second)
	}
	return cliResult{}
}

func readRecords(t *testing.T, dir string) []record.Record {
	t.Helper()
	recs, err := result.ReadRecords(filepath.Join(dir, result.RecordsFile))
	if err != nil {
		t.Fatalf("records.jsonl: %v", err)
	}
	return recs
}

// The end-to-end check: 2 worker processes, concurrency 8, 64
// requests of 32 tokens against serve --ttft 20ms --itl 5ms.
func TestProfileEndToEnd(t *testing.T) {
	// `serve` runs as its own process, as a user would run it; under -race
	// it is a plain build, so the detector doesn't slow the server down.
	url := startPlainSim(t, "--ttft", "20ms", "--itl", "5ms")
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, 2*time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--streaming",
		"--workers", "2", "--concurrency", "8", "--request-count", "64", "--isl", "100",
		"--osl", "32", "--extra-inputs", "ignore_eos:true", "--random-seed", "1", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Counts.Requests != 64 || run.Counts.OK != 64 || run.Counts.Errors != 0 {
		t.Fatalf("counts %+v", run.Counts)
	}
	if run.ToolHealth.Workers != 2 || len(run.ToolHealth.Integrity) != 0 {
		t.Fatalf("tool health %+v", run.ToolHealth)
	}
	// Both workers' event loops stamped every read with the kernel's receive
	// time, and said so through DONE.
	if st := run.ToolHealth.Stamps; runtime.GOOS == "linux" && (st == nil || st.Source != "kernel" || st.KernelReads == 0 ||
		st.ReadDelayMs == nil || st.ReadDelayMs.Count != int64(st.KernelReads)) {
		t.Errorf("stamps %+v", st)
	}
	ttft := run.Metrics[metrics.TTFT].Dist
	itl := run.Metrics[metrics.ITL].Dist
	t.Logf("TTFT p50 %.3f ms, ITL p50 %.3f ms", ttft.P50, itl.P50)
	if math.Abs(ttft.P50-20) > 2 {
		t.Errorf("TTFT p50 %.3f ms, want 20±2", ttft.P50)
	}
	if math.Abs(itl.P50-5) > 1 {
		t.Errorf("ITL p50 %.3f ms, want 5±1", itl.P50)
	}
	recs := readRecords(t, dir)
	if len(recs) != 64 {
		t.Fatalf("%d records", len(recs))
	}
	byWorker := map[int]int{}
	for _, r := range recs {
		byWorker[r.Worker]++
		if r.OSL != 32 || !r.OK() || len(r.Chunks) != 32 {
			t.Fatalf("record %d: osl %d, err %q, %d chunks", r.Index, r.OSL, r.ErrKind, len(r.Chunks))
		}
		if !(r.Due <= r.Sent && r.Sent <= r.FirstByte && r.FirstByte <= r.FirstToken && r.FirstToken <= r.End) {
			t.Fatalf("record %d timestamps out of order: %+v", r.Index, r)
		}
	}
	if byWorker[0] != 32 || byWorker[1] != 32 {
		t.Errorf("records by worker %v, want 32 each", byWorker)
	}
	// The histogram in run.json gives back the summary's percentiles.
	for _, name := range []string{metrics.TTFT, metrics.ITL, metrics.RequestLatency, metrics.OSL} {
		d := run.Metrics[name].Dist
		h, err := d.Histogram()
		if err != nil {
			t.Fatalf("%s: decode hdr: %v", name, err)
		}
		if got := float64(h.ValueAtQuantile(99)) / d.Scale; got != d.P99 || h.TotalCount() != d.Count {
			t.Errorf("%s: decoded p99 %v (n=%d), summary p99 %v (n=%d)", name, got, h.TotalCount(), d.P99, d.Count)
		}
		if len(d.Windows) == 0 {
			t.Errorf("%s: no windows", name)
		}
	}
	if o := run.Metrics[metrics.OSL].Dist; o.Min != 32 || o.Max != 32 {
		t.Errorf("OSL min/max %v/%v", o.Min, o.Max)
	}
	// Every request reached the server: its truth has all 64, by request id.
	resp, err := http.Get(url + "/sim/truth?settle=1")
	if err != nil {
		t.Fatal(err)
	}
	var truth struct {
		Truths []sim.Truth `json:"truths"`
	}
	json.NewDecoder(resp.Body).Decode(&truth)
	resp.Body.Close()
	ids := map[string]bool{}
	for _, tr := range truth.Truths {
		ids[tr.ID] = true
	}
	for _, r := range recs {
		if !ids[r.SessionID] {
			t.Fatalf("request %s missing from the server's truth", r.SessionID)
		}
	}
	for _, f := range []string{result.ExportJSON, result.ExportCSV, result.InputsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(res.stdout, "Time to First Token (ms)") {
		t.Errorf("no metrics table in stdout:\n%s", res.stdout)
	}
}

func quickProfile(url, dir string, extra ...string) []string {
	return append([]string{"profile", "-m", "sim", "-u", url, "--streaming", "--concurrency", "3", "--request-count", "12",
		"--isl", "20", "--synthetic-input-tokens-stddev", "5", "--osl", "4", "--output-tokens-stddev", "1",
		"--extra-inputs", "ignore_eos:true", "--artifact-dir", dir}, extra...)
}

func TestSameSeedSamePlanWhateverWorkers(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	base := t.TempDir()
	runOne := func(name string, extra ...string) ([]byte, string) {
		dir := filepath.Join(base, name)
		res := runCLI(t, time.Minute, quickProfile(url, dir, extra...)...)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", name, res.code, res.stdout, res.stderr)
		}
		b, err := os.ReadFile(filepath.Join(dir, result.InputsFile))
		if err != nil {
			t.Fatal(err)
		}
		run, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		return b, run.ProfileHash
	}
	a, ha := runOne("a", "--random-seed", "9", "--workers", "1")
	b, hb := runOne("b", "--random-seed", "9", "--workers", "3")
	c, hc := runOne("c", "--random-seed", "9", "--workers", "1")
	if !bytes.Equal(a, b) || !bytes.Equal(a, c) {
		t.Error("inputs.json differs for the same seed")
	}
	if ha != hb || ha != hc {
		t.Errorf("profile_hash differs for the same seed: %s %s %s", ha, hb, hc)
	}
	d, hd := runOne("d", "--random-seed", "10", "--workers", "1")
	if bytes.Equal(a, d) || ha == hd {
		t.Error("a different seed gave the same plan")
	}
}

func TestSeedDrawnAndPrinted(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "r")
	res := runCLI(t, time.Minute, quickProfile(url, dir)...)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	run, _ := result.Read(dir)
	if !strings.Contains(res.stdout, fmt.Sprintf("--random-seed %d", run.Seed)) {
		t.Fatalf("seed %d not printed:\n%s", run.Seed, res.stdout)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"profile", "-m", "x", "-u", "127.0.0.1:9", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"negative concurrency", []string{"profile", "-m", "x", "-u", "127.0.0.1:9", "--concurrency", "-1"}, "--concurrency -1"},
		{"no model, no server to name one", []string{"profile", "-u", "127.0.0.1:9"}, "-m/--model not given, and the server does not name one: GET http://127.0.0.1:9/v1/models"},
		{"unreachable", []string{"profile", "-m", "x", "-u", "http://127.0.0.1:1"}, "not reachable"},
		{"unknown command", []string{"profiel"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			res := runCLI(t, 30*time.Second, append(c.args, "--artifact-dir", dir)...)
			if c.name == "unknown command" {
				res = runCLI(t, 30*time.Second, c.args...)
			}
			if res.code != ExitError || !strings.Contains(res.stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", res.code, res.stderr, c.want)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("bad input created %s", dir)
			}
		})
	}
}

func TestServerErrorsEverywhere(t *testing.T) {
	url := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"engine down"}}`, http.StatusInternalServerError)
	}))
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	res := runCLI(t, time.Minute, quickProfile(url, dir, "--random-seed", "1")...)
	if res.code != ExitError || !strings.Contains(res.stderr, "every request failed") || !strings.Contains(res.stderr, "http_500") {
		t.Fatalf("exit %d\nstderr %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stdout, "http_500") || !strings.Contains(res.stdout, "engine down") {
		t.Errorf("error kinds not shown:\n%s", res.stdout)
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Counts.ErrorsByKind["http_500"] != 12 || run.Counts.OK != 0 {
		t.Errorf("counts %+v", run.Counts)
	}
	assertOnlyEntry(t, parent, "out")
}

func TestErrorRateAboveLimit(t *testing.T) {
	_, good := startSim(t, time.Millisecond, time.Millisecond)
	url := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every third request is rejected: 33% errors.
		if r.Header.Get("X-Request-ID") != "" && hash(r.Header.Get("X-Request-ID"))%3 == 0 {
			http.Error(w, "busy", http.StatusTooManyRequests)
			return
		}
		proxyTo(w, r, good)
	}))
	dir := filepath.Join(t.TempDir(), "out")
	res := runCLI(t, time.Minute, quickProfile(url, dir, "--random-seed", "3", "--request-count", "30")...)
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	rate := float64(run.Counts.Errors) / float64(run.Counts.Requests)
	if rate <= 0.10 {
		t.Skipf("error rate only %.2f with this seed", rate)
	}
	if res.code != ExitError || !strings.Contains(res.stderr, "--max-error-rate") || !strings.Contains(res.stderr, "http_429") {
		t.Fatalf("exit %d, stderr %s", res.code, res.stderr)
	}
	res = runCLI(t, time.Minute, quickProfile(url, dir, "--random-seed", "3", "--request-count", "30", "--max-error-rate", "90")...)
	if res.code != 0 {
		t.Fatalf("with --max-error-rate 90: exit %d, %s", res.code, res.stderr)
	}
}

func hash(s string) int {
	h := 0
	for _, c := range s {
		h = h*31 + int(c)
	}
	if h < 0 {
		h = -h
	}
	return h
}

// proxyTo forwards one request to base and copies the response, streaming.
func proxyTo(w http.ResponseWriter, r *http.Request, base string) {
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.Path, r.Body)
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			w.(http.Flusher).Flush()
		}
		if err != nil {
			return
		}
	}
}

func assertOnlyEntry(t *testing.T, parent, name string) {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != name {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v, want only %s", parent, names, name)
	}
}

// childWorkers lists this process's child processes started as workers.
func childWorkers(t *testing.T) []int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte("worker\x00--id")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestWorkerKilledMidRun(t *testing.T) {
	srv, url := startSim(t, 100*time.Millisecond, 50*time.Millisecond)
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	killed := make(chan int, 1)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			// Wait until the run is under way, then kill one worker.
			if len(srv.Truths()) >= 2 {
				if pids := childWorkers(t); len(pids) > 0 {
					syscall.Kill(pids[0], syscall.SIGKILL)
					killed <- pids[0]
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		killed <- 0
	}()
	start := time.Now()
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--workers", "2", "--concurrency", "4",
		"--request-count", "40", "--isl", "10", "--osl", "10", "--extra-inputs", "ignore_eos:true", "--random-seed", "5", "--artifact-dir", dir)
	pid := <-killed
	if pid == 0 {
		t.Fatal("found no worker to kill")
	}
	if res.code != ExitError || !strings.Contains(res.stderr, "exited before finishing") || !strings.Contains(res.stderr, strconv.Itoa(pid)) {
		t.Fatalf("exit %d after %s\nstderr: %s", res.code, time.Since(start), res.stderr)
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatalf("partial run.json: %v", err)
	}
	if len(run.ToolHealth.Integrity) == 0 {
		t.Error("no integrity problem recorded")
	}
	// The killed worker's requests in flight are counted as lost. Records
	// plus lost can fall short of what the server saw by what the worker did
	// in its last 20 ms (its last report): records it had not shipped yet,
	// and requests it sent since; at most its slots' worth here.
	srv.Settle(5 * time.Second)
	seen := len(srv.Truths())
	lost := run.ToolHealth.LostInFlight
	records := run.Counts.Requests - lost // the counts hold the lost requests as failed (kind lost_in_flight)
	t.Logf("server saw %d requests; %d records (%+v), %d lost in flight; integrity %v", seen, records, run.Counts, lost, run.ToolHealth.Integrity)
	if lost < 1 || records+lost > seen || seen-(records+lost) > 4 {
		t.Errorf("server saw %d requests; %d records and %d lost in flight", seen, records, lost)
	}
	// By number in run.json's counts, and in the console's error table.
	if run.Counts.ErrorsByKind["lost_in_flight"] != lost || !strings.Contains(res.stdout, "lost_in_flight") {
		t.Errorf("lost in flight %d; counts %+v; console:\n%s", lost, run.Counts, res.stdout)
	}
	assertOnlyEntry(t, parent, "out")
}

// Ctrl-C: the run stops, in-flight requests are cancelled and counted, and
// the partial results are written.
func TestInterruptWritesPartialResults(t *testing.T) {
	srv, url := startSim(t, 50*time.Millisecond, 20*time.Millisecond)
	dir := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for i := 0; i < 500 && len(srv.Truths()) < 8; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		// Requests end four at a time (four slots, one length), and the
		// next four start as those end: 150 ms into their 450 they are in
		// flight on a busy machine too. (Cancelled at once, a machine kept
		// busy by two CPU hogs once stopped the run before it had sent
		// them, and nothing was in flight to count.)
		time.Sleep(150 * time.Millisecond)
		cancel()
	}()
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"profile", "-m", "sim", "-u", url, "--streaming", "--workers", "2", "--concurrency", "4",
		"--request-count", "400", "--isl", "10", "--osl", "20", "--extra-inputs", "ignore_eos:true", "--random-seed", "5", "--artifact-dir", dir}, &out, &errb)
	if code != ExitInterrupted || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Cancelled || run.Counts.OK < 8 || run.Counts.Requests >= 400 {
		t.Fatalf("cancelled %v, counts %+v", run.Cancelled, run.Counts)
	}
	if run.Counts.ErrorsByKind["cancelled"] == 0 {
		t.Errorf("in-flight requests not counted as cancelled: %+v", run.Counts)
	}
	if len(readRecords(t, dir)) != run.Counts.Requests {
		t.Error("records.jsonl and run.json disagree")
	}
}
