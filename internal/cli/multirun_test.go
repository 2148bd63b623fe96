package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// AIPerf's multi-run confidence reporting: --num-profile-runs 3 runs the
// same workload three times (one profile_hash), warms up before the first
// only unless told otherwise, and writes each metric's mean, spread and t
// interval across the runs in AIPerf's aggregate files.
func TestNumProfileRuns(t *testing.T) {
	_, url := startSim(t, 3*time.Millisecond, time.Millisecond)
	for _, everyWarmup := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "multi")
		args := []string{"profile", "-m", "sim", "-u", url, "--streaming", "--concurrency", "2", "--request-count", "12", "--warmup-request-count", "2",
			"--isl", "8", "--osl", "4", "--extra-inputs", "ignore_eos:true", "--num-profile-runs", "3", "--confidence-level", "0.95", "--artifact-dir", dir}
		if everyWarmup {
			args = append(args, "--profile-run-disable-warmup-after-first", "false")
		}
		res := runCLI(t, time.Minute, args...)
		if res.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		var hashes []string
		for i, label := range []string{"run_0001", "run_0002", "run_0003"} {
			run, err := result.Read(filepath.Join(dir, "profile_runs", label))
			if err != nil {
				t.Fatal(err)
			}
			hashes = append(hashes, run.ProfileHash)
			want := 2
			if i > 0 && !everyWarmup {
				want = 0
			}
			if run.Counts.Requests != 12 || run.Counts.Warmup != want || run.Seed != 42 {
				t.Errorf("%s (warmup every run %v): %+v, seed %d", label, everyWarmup, run.Counts, run.Seed)
			}
		}
		if !everyWarmup && (hashes[1] != hashes[2]) {
			t.Errorf("the runs after the first sent different workloads: %v", hashes)
		}
		b, err := os.ReadFile(filepath.Join(dir, "aggregate", "profile_export_aiperf_aggregate.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Metadata struct {
				N      int     `json:"num_profile_runs"`
				Done   int     `json:"num_successful_runs"`
				Conf   float64 `json:"confidence_level"`
				Labels []string
			} `json:"metadata"`
			Metrics map[string]run.AggStat `json:"metrics"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		s, ok := doc.Metrics["time_to_first_token_p99"]
		if doc.Metadata.N != 3 || doc.Metadata.Done != 3 || !ok || math.Abs(s.TCritical-4.3027) > 1e-3 || !(s.CILow <= s.Mean && s.Mean <= s.CIHigh) ||
			s.Unit != "ms" || s.Min > s.Mean || s.Max < s.Mean || math.Abs(s.SE-s.Std/math.Sqrt(3)) > 1e-9 {
			t.Errorf("aggregate: %+v %+v", doc.Metadata, s)
		}
		if _, err := os.Stat(filepath.Join(dir, "aggregate", "profile_export_aiperf_aggregate.csv")); err != nil || !strings.Contains(res.stdout, "Across 3 runs") {
			t.Errorf("csv %v; console:\n%s", err, res.stdout)
		}
	}
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--num-profile-runs", "2", "--confidence-level", "1.5", "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, "--confidence-level 1.5") {
		t.Errorf("a bad confidence: exit %d %s", res.code, res.stderr)
	}
}
