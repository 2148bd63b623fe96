package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// compare --noise reads the gate's stored history (three refreshes, three
// jobs of two runs) and says each gated statistic's job and run noise and
// the tolerance each mode reaches; bad use is an error naming the flag.
func TestCompareNoise(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "1ms")
	for _, c := range []string{"base0001", "base0002", "base0003"} {
		var out, errb bytes.Buffer
		if code := Gate(context.Background(), []string{"--config", cfg, "--mode", "refresh", "--results-dir", filepath.Join(dir, "seed-"+c), "--commit", c},
			GateOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb}); code != 0 {
			t.Fatalf("refresh %s: exit %d\n%s\n%s", c, code, out.String(), errb.String())
		}
	}
	root := filepath.Join(dir, "baselines")
	res := runCLI(t, time.Minute, "compare", "--noise", "--baseline", root, "--metric", "time_to_first_token:p50")
	if res.code != ExitOK || !strings.Contains(res.stdout, "paired, 21 pairs") || !strings.Contains(res.stdout, "time_to_first_token p50  6     3") {
		t.Fatalf("compare --noise: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, time.Minute, "compare", "--noise", "--baseline", root, "--metric", "time_to_first_token:p50", "--format", "json")
	var doc struct {
		Statistics []struct {
			Runs, Jobs int
			JobNoise   float64 `json:"job_noise"`
			Reach      []struct {
				Mode      string
				Runs      int
				Tolerance float64
			}
		}
	}
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || len(doc.Statistics) != 1 {
		t.Fatalf("json: %v\n%s", err, res.stdout)
	}
	s := doc.Statistics[0]
	if s.Runs != 6 || s.Jobs != 3 || !(s.JobNoise > 0) || len(s.Reach) != 4 || s.Reach[0].Mode != "unpaired" || s.Reach[3].Mode != "paired" || s.Reach[3].Runs != 21 {
		t.Errorf("json: %+v", s)
	}
	for _, r := range s.Reach {
		if !(r.Tolerance > 0 && r.Tolerance < 10) {
			t.Errorf("reach %+v", r)
		}
	}
	if s.Reach[0].Tolerance < s.Reach[1].Tolerance || s.Reach[2].Tolerance < s.Reach[3].Tolerance {
		t.Errorf("more runs reach more: %+v", s.Reach)
	}
	if res := runCLI(t, time.Minute, "compare", "--noise"); res.code != ExitError || !strings.Contains(res.stderr, "--noise: need --baseline") {
		t.Errorf("--noise alone: exit %d\n%s", res.code, res.stderr)
	}
}
