package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/judge"
)

// sampleArtifact is a well-formed comparison.json of one failing scenario.
func sampleArtifact() []byte {
	r := compare.Result{Spec: compare.Spec{Metric: "time_to_first_token", Stat: "p50", Tolerance: 0.1}, Baseline: 20, Candidate: 26,
		Change: 0.3, Lo: 0.25, Hi: 0.35, Verdict: compare.Fail, K: 3, R: 3}
	e := compare.Result{Spec: compare.Spec{Metric: "error_rate", Tolerance: 0.01}, Verdict: compare.Pass}
	c := &judge.Report{Comparison: &compare.Comparison{Results: []compare.Result{r, e}, Verdict: compare.Fail}, Units: []string{"ms", "%"}}
	a := Artifact{Schema: ArtifactSchema, Verdict: Fail, PR: 3, HeadSHA: "abc123", Scenarios: []ArtifactScenario{{Name: "chat", Verdict: Fail, BaselineRuns: 3, CandidateRuns: 3, Comparison: c}}}
	b, _ := json.Marshal(a)
	return b
}

// A comparison.json written by NewArtifact reads back, with its verdicts
// worked out again from the results.
func TestArtifactRoundTrip(t *testing.T) {
	t.Parallel()
	var a map[string]any
	json.Unmarshal(sampleArtifact(), &a)
	a["verdict"] = "pass" // forged: the results say fail
	b, _ := json.Marshal(a)
	p := filepath.Join(t.TempDir(), ArtifactFile)
	os.WriteFile(p, b, 0o644)
	art, rep, err := ReadArtifact(p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != Fail || art.PR != 3 || rep.Scenarios[0].CandidateCount() != 3 {
		t.Fatalf("verdict %s, pr %d", rep.Verdict, art.PR)
	}
}

// Whatever bytes a fork puts in comparison.json, reading it never panics,
// and what it accepts has only known metrics and bounded text.
func FuzzReadArtifact(f *testing.F) {
	f.Add(sampleArtifact())
	f.Add([]byte(`{"schema":"aiperf-action/comparison/v1","scenarios":[]}`))
	f.Add([]byte(`{"schema":"aiperf-action/comparison/v1","scenarios":[{"name":"a","comparison":{"results":[{"metric":"x"}],"units":["ms"]}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), ArtifactFile)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, rep, err := ReadArtifact(p)
		if err != nil {
			return
		}
		for _, s := range rep.Scenarios {
			if len(s.BaselineSource) > maxText || s.Compare == nil {
				continue
			}
			for _, r := range s.Compare.Results {
				if len(r.Warnings) > maxWarnings {
					t.Fatalf("%d warnings accepted", len(r.Warnings))
				}
			}
		}
	})
}

// The commits and the run's page a fork's comparison.json names must look
// like a commit and a workflow run's address; anything else is refused.
func TestArtifactChecksCommitsAndRunURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		meta map[string]any
		ok   bool
	}{
		{map[string]any{"head": "0123abcd", "base": "fedc9876", "run_url": "https://example.test/o/r/actions/runs/42/attempts/2"}, true},
		{map[string]any{"run_url": "javascript:alert(1)//actions/runs/1"}, false},
		{map[string]any{"run_url": "https://example.test/o/r/actions/runs/42)[x](https://evil.test"}, false},
		{map[string]any{"head": "abc def"}, false},
	} {
		var a map[string]any
		json.Unmarshal(sampleArtifact(), &a)
		a["meta"] = c.meta
		b, _ := json.Marshal(a)
		p := filepath.Join(t.TempDir(), ArtifactFile)
		os.WriteFile(p, b, 0o644)
		_, rep, err := ReadArtifact(p)
		if (err == nil) != c.ok {
			t.Errorf("meta %v: error %v, want ok %v", c.meta, err, c.ok)
		}
		if err == nil && rep.Meta.RunURL != c.meta["run_url"] {
			t.Errorf("run_url %q did not round-trip", rep.Meta.RunURL)
		}
	}
}
