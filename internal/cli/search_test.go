package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// search against engine mode (the Qwen3-0.6B preset, in real time): a
// staircase up until the attainment of TTFT ≤ 150 ms falls below 90%,
// then refinement; every probe a run folder, search.json its record with
// a bounded interval around the estimate; the same command again resumes
// (no probe repeated), another command in the folder is refused.
func TestSearchCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("a dozen probes of real-time load")
	}
	cfg, err := sim.EngineConfig("qwen3-0.6b-h100")
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(cfg)
	t.Cleanup(func() { s.Close() })
	url := serveHandler(t, s)
	dir := filepath.Join(t.TempDir(), "search")
	args := []string{"search", "-m", "sim", "-u", url, "--streaming", "--ttft-sla-ms", "150", "--search-attainment", "90",
		"--isl", "256", "--osl", "16", "--extra-inputs", "ignore_eos:true", "--request-count", "120", "--warmup-request-count", "10",
		"--search-start", "10", "--search-step", "2", "--search-max-iterations", "10", "--search-precision", "0.3", "--random-seed", "3", "--api-key", "sk-search-secret", "--artifact-dir", dir}
	res := runCLI(t, 5*time.Minute, args...)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	t.Logf("%s", res.stdout)
	var doc run.SearchDoc
	b, err := os.ReadFile(filepath.Join(dir, SearchFile))
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("search.json: %v", err)
	}
	if strings.Contains(string(b), "sk-search-secret") {
		t.Error("search.json holds the --api-key")
	}
	e := doc.Estimate
	if len(doc.Probes) < 3 || !e.LoBounded || !e.HiBounded || !(e.Lo <= e.Capacity && e.Capacity <= e.Hi) || doc.Stopped == "" {
		t.Fatalf("search.json: %d probes, %+v, stopped %q", len(doc.Probes), e, doc.Stopped)
	}
	// The staircase: 10, 20, 40, … until one fails the target.
	for i := 1; i < len(doc.Probes) && doc.Probes[i-1].Attainment() >= 0.9; i++ {
		if doc.Probes[i].Load != 2*doc.Probes[i-1].Load {
			t.Errorf("probe %d at %g after %g", i+1, doc.Probes[i].Load, doc.Probes[i-1].Load)
		}
	}
	for _, pb := range doc.Probes {
		run, err := result.Read(filepath.Join(dir, pb.Dir))
		if err != nil || run.Counts.Requests != pb.N || run.Load.RequestCount != 120 {
			t.Errorf("probe %s: %v (%d requests, %d judged)", pb.Dir, err, run.Counts.Requests, pb.N)
		}
	}
	before, _ := filepath.Glob(filepath.Join(dir, "probe-*"))
	res = runCLI(t, 5*time.Minute, args...)
	after, _ := filepath.Glob(filepath.Join(dir, "probe-*"))
	if res.code != 0 || !strings.Contains(res.stdout, "resuming: ") || len(after) < len(before) {
		t.Errorf("resume: exit %d, %d probe folders then %d\n%s%s", res.code, len(before), len(after), res.stdout, res.stderr)
	}
	res = runCLI(t, time.Minute, append(args[:len(args)-2:len(args)-2], "--ttft-sla-ms", "99", "--artifact-dir", dir)...)
	if res.code != ExitError || !strings.Contains(res.stderr, "is another search's") {
		t.Errorf("another search in the folder: exit %d %s", res.code, res.stderr)
	}
	res = runCLI(t, time.Minute, "search", "-m", "sim", "-u", url, "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, "give at least one objective") {
		t.Errorf("no objective: exit %d %s", res.code, res.stderr)
	}
}
