package gate_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The noise is estimated from the whole stored history of the profile on
// its testbed, not only the runs compared with: here three refreshes (three
// jobs) are kept (baseline.history 6), the comparison takes the newest two
// runs (keep 2, one job), and the comparison says it used the history's 3
// jobs. With history 0 only the baseline's own job is there, and the job
// noise is the floor's.
func TestGateNoiseFromHistory(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "2ms")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, bytes.Replace(b, []byte("  store: folder\n"), []byte("  store: folder\n  keep: 2\n  history: 6\n"), 1), 0o644)
	for _, c := range []string{"base0001", "base0002", "base0003"} {
		seedAt(t, dir, cfg, c)
	}
	var n int
	filepath.WalkDir(filepath.Join(dir, "baselines"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
			n++
		}
		return nil
	})
	if n != 6 {
		t.Fatalf("%d runs stored, want the 6 of history (keep is 2)", n)
	}
	warnings := func(results string) string {
		code, out := gateLocal(t, "--config", cfg, "--mode", "run", "--results-dir", results)
		if code == ExitError {
			t.Fatalf("exit %d\n%s", code, out)
		}
		raw, err := os.ReadFile(filepath.Join(results, "comparison.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Scenarios []struct {
				Comparison struct {
					Results []struct {
						K        int      `json:"k"`
						Warnings []string `json:"warnings"`
					} `json:"results"`
				} `json:"comparison"`
			} `json:"scenarios"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Scenarios) != 1 || len(doc.Scenarios[0].Comparison.Results) == 0 {
			t.Fatalf("comparison.json: %v\n%s", err, raw)
		}
		r := doc.Scenarios[0].Comparison.Results[0]
		if r.K != 2 {
			t.Errorf("compared with %d runs, want keep's 2", r.K)
		}
		return strings.Join(r.Warnings, "\n")
	}
	if w := warnings(filepath.Join(dir, "pr")); !strings.Contains(w, "from the stored history's 3 jobs") {
		t.Errorf("with a 3-job history, the warnings say:\n%s", w)
	}
	os.WriteFile(cfg, bytes.Replace(b, []byte("  store: folder\n"), []byte("  store: folder\n  keep: 2\n  history: 0\n"), 1), 0o644)
	if w := warnings(filepath.Join(dir, "pr0")); !strings.Contains(w, "provisional: the baseline's runs come from 1 job(s)") {
		t.Errorf("without the history, the warnings say:\n%s", w)
	}
}
