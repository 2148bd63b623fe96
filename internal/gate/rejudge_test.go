package gate_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/ghfake"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// resultsZip is a results folder's artifact as upload-artifact zips it:
// a failing comparison.json for head, and the report beside it.
func resultsZip(t *testing.T, head string) []byte {
	t.Helper()
	r := compare.Result{Spec: compare.Spec{Metric: "time_to_first_token", Stat: "p50", Tolerance: 0.1}, Baseline: 20, Candidate: 26,
		Change: 0.3, Lo: 0.25, Hi: 0.35, Verdict: compare.Fail, K: 3, R: 3}
	e := compare.Result{Spec: compare.Spec{Metric: "error_rate", Tolerance: 0.01}, Verdict: compare.Pass}
	rep := &gate.Report{Scenarios: []gate.Scenario{{Name: "tiny", BaselineSource: "the newest baseline runs",
		Compare: &judge.Report{Comparison: &compare.Comparison{Results: []compare.Result{r, e}}, Units: []string{"ms", "%"}}}}}
	rep.Verdict = gate.Fold(rep.Scenarios)
	b, _ := json.Marshal(gate.NewArtifact(rep, 7, head, ""))
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	for name, body := range map[string][]byte{"comparison.json": b, "report.md": []byte("# old report\n"), "pr-number": []byte("7\n")} {
		w, _ := zw.Create(name)
		w.Write(body)
	}
	zw.Close()
	return z.Bytes()
}

// A label added to a failing pull request is answered from the results an
// earlier run of its head commit uploaded: no request reaches the server,
// the labels are read as they are now (not from the event), and the
// verdict follows them both ways. Without such results the gate runs.
func TestGateRejudgesALabelChangeWithoutLoad(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "1ms")
	s := sim.New(sim.DefaultConfig)
	t.Cleanup(func() { s.Close() })
	var hits atomic.Int32
	url := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); s.ServeHTTP(w, r) }))

	gh := ghfake.New(t, "o", "r")
	gh.Runs = []ghfake.Run{{ID: 100, HeadSHA: "head0000", Event: "pull_request",
		Artifacts: []ghfake.Artifact{{ID: 9, Name: "other", Zip: resultsZip(t, "someother")}, {ID: 10, Name: "aiperf-results", Zip: resultsZip(t, "head0000")}}}}
	ev := prEvent(7)
	ev["action"], ev["label"] = "labeled", map[string]any{"name": "docs"}
	env := newActionsEnv(t, dir, gh, "pull_request", ev, map[string]string{"config": cfg, "url": url, "results-dir": filepath.Join(dir, "r")})
	env.vars["GITHUB_SERVER_URL"], env.vars["GITHUB_RUN_ID"] = "https://ghe.example.test", "101"

	// An unrelated label: the same FAIL again, so that this job's check
	// is no green one over the failed run's.
	gh.SetLabels(7, "docs")
	code, out, errs := env.gate(t)
	if code != ExitRegression || len(gh.Comments[7]) != 1 {
		t.Fatalf("unrelated label: exit %d, %d comments\n%s\n%s", code, len(gh.Comments[7]), out, errs)
	}
	body := gh.Comments[7][0].Body
	for _, want := range []string{"Performance regression", "add the label `perf-regression-accepted`", "no new load was sent", "(https://ghe.example.test/o/r/actions/runs/100#artifacts)"} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment lacks %q:\n%s", want, body)
		}
	}
	// The accept label, added after the event fired (a re-run sees it).
	gh.SetLabels(7, "docs", "perf-regression-accepted")
	if code, out, errs = env.gate(t); code != ExitOK || !strings.Contains(gh.Comments[7][0].Body, "Accepted regression") {
		t.Fatalf("accept label: exit %d\n%s\n%s\n%s", code, gh.Comments[7][0].Body, out, errs)
	}
	// And taken off again.
	gh.SetLabels(7)
	if code, _, _ = env.gate(t); code != ExitRegression {
		t.Fatalf("label removed: exit %d", code)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the server while re-judging", n)
	}
	if len(gh.Comments[7]) != 1 {
		t.Errorf("%d comments, want the sticky one edited", len(gh.Comments[7]))
	}

	// No earlier results of this commit: the gate runs in full.
	gh.Runs = nil
	code, out, errs = env.gate(t)
	if code == ExitError || hits.Load() == 0 || !strings.Contains(out, "running the gate in full") {
		t.Fatalf("without results: exit %d, %d requests\n%s\n%s", code, hits.Load(), out, errs)
	}
}
