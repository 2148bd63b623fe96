package run_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// The figures the README scales to 100k streams over many hosts: at 256
// and 1024 streams from 4 local workers against the simulator in its own
// process, each worker's peak memory (from the OS) and so its memory per
// stream, the controller's CPU time per record (this process's, the
// simulator and the workers apart) and the bytes a record takes on the
// wire (its JSON, as records.jsonl holds it and a batch carries it).
// Asserted only loosely (a worker under 512 KiB more a stream, the
// controller under 250 µs a record): the figures are logged for the
// README.
func TestScaleFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of up to 1024 streams")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(self, "serve", "--port", "0", "--ttft", "50ms", "--itl", "5ms")
	srv.Env = append(os.Environ(), controller.RoleEnv+"=serve")
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base := ""
	for _, f := range strings.Fields(line) {
		if strings.HasPrefix(f, "http://") {
			base = strings.TrimRight(f, ".,")
		}
	}
	if base == "" {
		t.Fatalf("serve said %q", line)
	}
	for i := 0; ; i++ {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			break
		}
		if i == 100 {
			t.Fatal("the simulator did not answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	rssAt := map[int]float64{}
	for _, streams := range []int{256, 1024} {
		p := config.DefaultProfile
		p.Model, p.URL, p.Streaming = "scale", base, true
		p.Concurrency, p.ConcurrencySet, p.RequestCount, p.RequestCountSet = streams, true, 8*streams, true
		p.ISLMean, p.OSLMean, p.ExtraInputs = 64, 16, []string{"ignore_eos:true"}
		p.Seed, p.SeedSet, p.Workers = 3, true, 4
		p.ArtifactDir = filepath.Join(t.TempDir(), fmt.Sprint(streams))
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		res, err := run.Profile(ctx, &p, run.Options{Stderr: os.Stderr})
		cancel()
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		if err != nil {
			t.Fatal(err)
		}
		cpu := func(r syscall.Rusage) float64 {
			return float64(r.Utime.Sec+r.Stime.Sec) + float64(r.Utime.Usec+r.Stime.Usec)/1e6
		}
		records := res.Run.Counts.Requests
		ctrlUs := (cpu(after) - cpu(before)) / float64(records) * 1e6
		st, err := os.Stat(filepath.Join(p.ArtifactDir, "records.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		bytesPer := float64(st.Size()) / float64(records)
		var rss, wcpu float64
		for _, w := range res.Run.ToolHealth.ClientCPU {
			rss = max(rss, w.MaxRSSMB)
			wcpu += w.CPUSeconds
		}
		rssAt[streams/4] = rss
		t.Logf("%d streams, %d requests in %.1f s: controller %.1f µs CPU a record (this process's peak RSS %.0f MiB); worker peak RSS %.1f MiB at %d streams a worker, %.0f µs worker CPU a record; %.0f bytes a record",
			streams, records, res.Run.DurationS, ctrlUs, float64(after.Maxrss)/1024, rss, streams/4, wcpu/float64(records)*1e6, bytesPer)
		if rss <= 0 || ctrlUs > 250 || bytesPer < 100 || bytesPer > 2000 {
			t.Errorf("%d streams: worker %.1f MiB, controller %.1f µs a record, %.0f bytes a record", streams, rss, ctrlUs, bytesPer)
		}
	}
	perStream := (rssAt[256] - rssAt[64]) * 1024 / (256 - 64)
	t.Logf("a worker's memory: %.0f MiB and %.0f KiB a stream", rssAt[64]-perStream*64/1024, perStream)
	if perStream > 512 {
		t.Errorf("a worker's memory grows %.0f KiB a stream (%.1f MiB at 64, %.1f at 256)", perStream, rssAt[64], rssAt[256])
	}
}
