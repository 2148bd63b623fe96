// Command truthcmp measures the tester's own error against an independent
// truth server (truthmock, which dates each request by the kernel's receive
// time of its bytes and records when it wrote each chunk), for the current
// checkout and, when -old names a commit, that commit too, the two binaries
// run interleaved on the same server so that the machine's state is shared
// by both. It prints one markdown table a concurrency: each run's TTFT p50
// and p99 error, chunk-gap p99 error, achieved rate against the ideal and
// the whole tool's CPU per chunk, then the medians and how many runs were
// within the bounds.
//
//	go run ./bench/truthcmp -old 7f111b9 -runs 5 -c 512,2048
//
// Error is the tester's figure minus the server's. The bounds are the
// project's at 512 streams (truthmock's README): rate ≥ 97% of
// c / (TTFT + (OSL−1)·ITL), TTFT p50 within 1 ms, TTFT p99 within 5 ms,
// chunk-gap p99 within 3 ms. CPU is user + system time of the tool and its
// workers (wait4's rusage, what /usr/bin/time reports) over every content
// chunk the run received, warmup included. Loopback only.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	old := flag.String("old", "", "commits to compare with, comma-separated (each built in a temporary worktree)")
	runs := flag.Int("runs", 5, "interleaved runs a binary and concurrency")
	levels := flag.String("c", "512", "concurrencies, comma-separated")
	truthDir := flag.String("truthmock", "../shared/tools/truthmock", "truthmock's source folder")
	ttft := flag.Duration("ttft", 20*time.Millisecond, "truthmock's TTFT")
	itl := flag.Duration("itl", 10*time.Millisecond, "truthmock's ITL")
	osl := flag.Int("osl", 128, "tokens a request")
	rounds := flag.Int("rounds", 3, "measured requests a stream (after one warmup request a stream)")
	work := flag.String("work", "", "folder for binaries and artifacts (default: a temporary one, removed)")
	flag.Parse()
	if err := run(*old, *runs, *levels, *truthDir, *ttft, *itl, *osl, *rounds, *work); err != nil {
		fmt.Fprintln(os.Stderr, "truthcmp:", err)
		os.Exit(1)
	}
}

type binary struct{ name, path string }

func run(old string, runs int, levels, truthDir string, ttft, itl time.Duration, osl, rounds int, work string) error {
	var cs []int
	for _, s := range strings.Split(levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 {
			return fmt.Errorf("-c %q: want positive integers", levels)
		}
		cs = append(cs, c)
	}
	if runs < 1 || osl < 2 || rounds < 1 {
		return fmt.Errorf("-runs, -osl and -rounds must be positive (-osl at least 2)")
	}
	if work == "" {
		tmp, err := os.MkdirTemp("", "truthcmp-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		work = tmp
	}
	work, _ = filepath.Abs(work)
	truthBin := filepath.Join(work, "truthmock")
	if err := goBuild(truthDir, truthBin, "."); err != nil {
		return fmt.Errorf("build truthmock from %s: %w", truthDir, err)
	}
	head, _ := output("git", "rev-parse", "--short", "HEAD")
	bins := []binary{{"this checkout (" + strings.TrimSpace(head) + ")", filepath.Join(work, "new")}}
	if err := goBuild(".", bins[0].path, "./cmd/aiperf-action"); err != nil {
		return err
	}
	var olds []binary
	for i, rev := range strings.Split(old, ",") {
		if rev = strings.TrimSpace(rev); rev == "" {
			continue
		}
		b, err := buildAt(rev, work, i)
		if err != nil {
			return err
		}
		olds = append(olds, b)
	}
	bins = append(olds, bins...)
	for _, c := range cs {
		if err := level(bins, c, runs, truthBin, ttft, itl, osl, rounds, work); err != nil {
			return err
		}
	}
	return nil
}

func goBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	return cmd.Run()
}

func output(name string, args ...string) (string, error) {
	b, err := exec.Command(name, args...).Output()
	return string(b), err
}

// buildAt builds the tool at commit rev in a temporary worktree.
func buildAt(rev, work string, i int) (binary, error) {
	wt := filepath.Join(work, "wt-"+strings.NewReplacer("/", "_", ".", "_").Replace(rev))
	if out, err := exec.Command("git", "worktree", "add", "--detach", wt, rev).CombinedOutput(); err != nil {
		return binary{}, fmt.Errorf("git worktree add %s: %v\n%s", rev, err, out)
	}
	defer exec.Command("git", "worktree", "remove", "--force", wt).Run()
	b := binary{rev, filepath.Join(work, fmt.Sprintf("old%d", i))}
	return b, goBuild(wt, b.path, "./cmd/aiperf-action")
}

// measurement is one run of one binary.
type measurement struct {
	ttftP50, ttftP99, gapP99   float64 // errors, ms
	ratePct, paced, cpuUsChunk float64 // paced: the rate against the one the server's own timings allow
	errors                     int
}

func (m measurement) within() bool {
	return m.ratePct >= 97 && abs(m.ttftP50) <= 1 && abs(m.ttftP99) <= 5 && abs(m.gapP99) <= 3 && m.errors == 0
}

// withinPaced is within with the rate held to the one the server's own
// timings allow (its TTFT p50 + (OSL−1)·gap p50 a request), which is what
// the tester's turnaround can cost: truthmock paces its tokens with sleeps
// that run late on a busy machine whoever the client is.
func (m measurement) withinPaced() bool {
	return m.paced >= 97 && abs(m.ttftP50) <= 1 && abs(m.ttftP99) <= 5 && abs(m.gapP99) <= 3 && m.errors == 0
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func level(bins []binary, c, runs int, truthBin string, ttft, itl time.Duration, osl, rounds int, work string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	srv := exec.Command(truthBin, "-addr", addr, "-ttft", ttft.String(), "-itl", itl.String(), "-tokens", strconv.Itoa(osl))
	srv.Stderr = io.Discard
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	base := "http://" + addr
	if err := waitUp(base+"/health", 10*time.Second); err != nil {
		return err
	}
	ideal := float64(c) / (ttft + time.Duration(osl-1)*itl).Seconds()
	got := make([][]measurement, len(bins))
	fmt.Printf("\n### %d streams (truthmock TTFT %s, ITL %s, %d tokens; %d measured requests a stream after a warmup of %d; ideal %.1f req/s)\n\n", c, ttft, itl, osl, rounds, c, ideal)
	fmt.Printf("| run | binary | TTFT p50 err | TTFT p99 err | chunk-gap p99 err | rate | rate of server-paced | CPU µs/chunk | errors | within bounds |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for i := range runs {
		for j := range bins {
			k := j
			if i%2 == 1 {
				k = len(bins) - 1 - j // ABBA: neither binary always goes first
			}
			dir := filepath.Join(work, fmt.Sprintf("c%d-r%d-%d", c, i, k))
			m, err := once(bins[k].path, base, c, osl, rounds, ideal, dir)
			if err != nil {
				return fmt.Errorf("%s at %d, run %d: %w", bins[k].name, c, i+1, err)
			}
			got[k] = append(got[k], m)
			fmt.Printf("| %d | %s | %+.2f ms | %+.2f ms | %+.2f ms | %.1f%% | %.1f%% | %.2f | %d | %v |\n", i+1, bins[k].name, m.ttftP50, m.ttftP99, m.gapP99, m.ratePct, m.paced, m.cpuUsChunk, m.errors, m.within())
		}
	}
	fmt.Printf("\n| medians of %d | TTFT p50 err | TTFT p99 err | chunk-gap p99 err | rate | rate of server-paced | CPU µs/chunk | runs within bounds | within, rate server-paced |\n|---|---|---|---|---|---|---|---|---|\n", runs)
	for k, b := range bins {
		ms := got[k]
		med := func(f func(measurement) float64) float64 {
			xs := make([]float64, len(ms))
			for i, m := range ms {
				xs[i] = f(m)
			}
			sort.Float64s(xs)
			n := len(xs)
			if n%2 == 1 {
				return xs[n/2]
			}
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		in, inPaced := 0, 0
		for _, m := range ms {
			if m.within() {
				in++
			}
			if m.withinPaced() {
				inPaced++
			}
		}
		fmt.Printf("| %s | %+.2f ms | %+.2f ms | %+.2f ms | %.1f%% | %.1f%% | %.2f | %d of %d | %d of %d |\n", b.name,
			med(func(m measurement) float64 { return m.ttftP50 }), med(func(m measurement) float64 { return m.ttftP99 }),
			med(func(m measurement) float64 { return m.gapP99 }), med(func(m measurement) float64 { return m.ratePct }),
			med(func(m measurement) float64 { return m.paced }), med(func(m measurement) float64 { return m.cpuUsChunk }), in, len(ms), inPaced, len(ms))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitUp(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer within %s", url, within)
}

// stats is truthmock's /stats.
type stats struct {
	Requests  int     `json:"requests"`
	TTFTP50   float64 `json:"server_ttft_ms_p50"`
	TTFTP99   float64 `json:"server_ttft_ms_p99"`
	GapP50    float64 `json:"server_gap_ms_p50"`
	GapP99    float64 `json:"server_gap_ms_p99"`
	RxStamped int64   `json:"rx_stamped"`
}

func getStats(url string) (stats, error) {
	var s stats
	resp, err := http.Get(url)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// runJSON is what truthcmp reads of run.json, in every schema since v1.
type runJSON struct {
	Counts struct {
		Requests int `json:"requests"`
		Errors   int `json:"errors"`
	} `json:"counts"`
	Metrics map[string]struct {
		P50   float64 `json:"p50"`
		P99   float64 `json:"p99"`
		Value float64 `json:"value"` // a rate's
	} `json:"metrics"`
}

func once(bin, base string, c, osl, rounds int, ideal float64, dir string) (measurement, error) {
	var m measurement
	if _, err := getStats(fmt.Sprintf("%s/stats?reset=1&skip=%d", base, c)); err != nil {
		return m, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "profile", "-m", "mock", "-u", base, "--endpoint-type", "chat", "--streaming",
		"--concurrency", strconv.Itoa(c), "--request-count", strconv.Itoa(rounds*c), "--isl", "32", "--osl", strconv.Itoa(osl),
		"--extra-inputs", "ignore_eos:true", "--random-seed", "3", "--warmup-request-count", strconv.Itoa(c), "--artifact-dir", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return m, fmt.Errorf("%v\n%s", err, out.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	s, err := getStats(base + "/stats")
	if err != nil {
		return m, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return m, err
	}
	var r runJSON
	if err := json.Unmarshal(b, &r); err != nil {
		return m, fmt.Errorf("run.json: %w", err)
	}
	if s.Requests != r.Counts.Requests {
		return m, fmt.Errorf("truthmock counted %d measured requests, run.json %d", s.Requests, r.Counts.Requests)
	}
	ttft, gap, rate := r.Metrics["time_to_first_token"], r.Metrics["inter_chunk_latency"], r.Metrics["request_throughput"]
	m.ttftP50, m.ttftP99, m.gapP99 = ttft.P50-s.TTFTP50, ttft.P99-s.TTFTP99, gap.P99-s.GapP99
	m.ratePct = 100 * rate.Value / ideal
	m.paced = 100 * rate.Value / (float64(c) / ((s.TTFTP50 + float64(osl-1)*s.GapP50) / 1e3))
	m.cpuUsChunk = float64(cpu.Microseconds()) / float64((rounds+1)*c*osl)
	m.errors = r.Counts.Errors
	return m, nil
}
