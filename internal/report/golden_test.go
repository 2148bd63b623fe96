package report

import (
	"bytes"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/fixture"

	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// The PR comment for each kind of outcome, from deterministic fixture runs.
func TestGateCommentGolden(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	load := func(name string, seed uint64, scale float64) result.Loaded {
		dir := filepath.Join(root, name)
		if err := fixture.WriteRun(dir, seed, scale, 600, 0, fixture.Hash); err != nil {
			t.Fatal(err)
		}
		r, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		return result.Loaded{Path: name, Run: r}
	}
	var base, same, slow []result.Loaded
	for i := uint64(0); i < 3; i++ {
		base = append(base, load("b"+string(rune('1'+i)), 1+i, 1))
		same = append(same, load("s"+string(rune('1'+i)), 31+i, 1))
		slow = append(slow, load("f"+string(rune('1'+i)), 41+i, 1.3))
	}
	f := judge.Config{MaxRegression: "10%", NoiseFloor: "5%", MaxErrorRate: "1%", Alpha: 0.05, Seed: 1, Resamples: 200, Estimator: "hd",
		Metrics: []string{"time_to_first_token:p50", "time_to_first_token:p99:15%", "inter_token_latency:p50", "request_latency:p99"}}
	st, err := f.Parse()
	if err != nil {
		t.Fatal(err)
	}
	runs := func(ls []result.Loaded) []*result.Run {
		var out []*result.Run
		for _, l := range ls {
			out = append(out, l.Run)
		}
		return out
	}
	scenario := func(b, c []result.Loaded) gate.Scenario {
		s := gate.Scenario{Name: "chat-c8", Candidate: runs(c), Baseline: runs(b), BaselineSource: "the newest baseline runs in folder baselines",
			BaselineCommits: []string{"a1b2c3d4e5f6", "b2c3d4e5f6a1", "c3d4e5f6a1b2"}[:len(b)]}
		if len(b) > 0 {
			cr, err := judge.Compare(st, b, c)
			if err != nil {
				t.Fatal(err)
			}
			s.Compare = cr
		}
		return s
	}
	meta := gate.Meta{Model: "m", Server: "built-in simulator", Runner: "test-runner", Commit: "abc123", Event: "pull_request", Store: "folder baselines", Seed: 42, Repeats: 3,
		Head: "0123456789abcdef", Base: "fedcba9876543210", RunURL: "https://example.test/o/r/actions/runs/42"}
	cases := []struct {
		file    string
		verdict gate.Verdict
		sc      gate.Scenario
	}{
		{"comment-pass.md", "pass", scenario(base, same)},
		{"comment-fail.md", "fail", scenario(base, slow)},
		{"comment-inconclusive.md", "inconclusive", scenario(base[:1], same[:1])},
		{"comment-no-baseline.md", gate.NoBaseline, scenario(nil, same)},
		// A slower candidate the prefix cache served otherwise than its
		// baseline (after a run again with fresh prompts): not judged.
		{"comment-cache-differs.md", "inconclusive", func() gate.Scenario {
			s := scenario(base, slow)
			s.CacheMismatch = "run 1 was served from the server's prefix cache (97.0% of its prompt tokens, and 96.8% run again with fresh prompts) against the stored baseline runs' 4.3% (median of 3)"
			return s
		}()},
	}
	for _, c := range cases {
		rep := &gate.Report{Scenarios: []gate.Scenario{c.sc}, Meta: meta, AcceptLabel: "perf-regression-accepted"}
		rep.Verdict = gate.Fold(rep.Scenarios)
		if rep.Verdict != c.verdict {
			t.Errorf("%s: verdict %s, want %s", c.file, rep.Verdict, c.verdict)
		}
		md := CommentMarkdown(rep, action.Marker, action.MaxComment)
		if !strings.HasPrefix(md, action.Marker) {
			t.Errorf("%s: no marker", c.file)
		}
		golden(t, c.file, md)
		// The first lines: the answer, the next step, then the commits
		// and the run's links; a NOT GATED row never reads as worse.
		lines := strings.Split(md, "\n")
		if len(lines) < 6 || !strings.HasPrefix(lines[1], "## ") || !strings.HasPrefix(lines[3], "**") ||
			!strings.Contains(lines[5], "`0123456` against base `fedcba9`") || !strings.Contains(lines[5], "(https://example.test/o/r/actions/runs/42#artifacts)") {
			t.Errorf("%s: the first lines are not the answer, the next step and the commits:\n%s", c.file, strings.Join(lines[:min(6, len(lines))], "\n"))
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "|") && strings.Contains(l, "NOT GATED") && strings.Contains(l, "worse") {
				t.Errorf("%s: a NOT GATED row reads as worse: %s", c.file, l)
			}
		}
	}
}

// The comment of a gate that could not run: the error and the log quoted
// in fences no backtick run in them can close, no marker of another
// comment left in them, and the commits and links.
func TestFailureCommentGolden(t *testing.T) {
	t.Parallel()
	f := &gate.Failure{Err: "server http://127.0.0.1:8000 refused a first request with model \"gpt-4o\" on --endpoint-type chat, before any load (HTTP 404): http_404: {\"error\":{\"message\":\"The model ```gpt-4o``` does not exist.\",\"code\":404}}",
		Log:  "aiperf-action gate: server: waiting for http://127.0.0.1:8000/health to answer (up to 10m0s)\n" + action.Marker + " <details>",
		Meta: gate.Meta{Head: "0123456789abcdef", Base: "fedcba9876543210", RunURL: "https://example.test/o/r/actions/runs/42"}}
	md := FailureMarkdown(f, action.Marker, action.MaxComment)
	golden(t, "comment-error.md", md)
	if strings.Count(md, action.Marker) != 1 || !strings.Contains(md, "````text") {
		t.Errorf("a quoted marker, or a fence the error's backticks could close:\n%s", md)
	}
	if short := FailureMarkdown(f, action.Marker, 700); len(short) > 700+len(f.Err) || strings.Contains(short, "last lines") {
		t.Errorf("a comment over its limit keeps the log: %d bytes", len(short))
	}
}

// Server text is escaped, and an oversized report is cut to fit a comment.
func TestGateCommentEscapesAndFits(t *testing.T) {
	t.Parallel()
	rep := &gate.Report{Verdict: gate.Pass, Meta: gate.Meta{Model: "<img src=x onerror=alert(1)> | *bold*"}}
	for i := 0; i < 400; i++ {
		rep.Scenarios = append(rep.Scenarios, gate.Scenario{Name: strings.Repeat("x", 200)})
	}
	md := CommentMarkdown(rep, action.Marker, action.MaxComment)
	if len(md) > action.MaxComment {
		t.Fatalf("comment is %d characters", len(md))
	}
	full := GateMarkdown(rep, action.Marker, true)
	if strings.Contains(full, "<img") || !strings.Contains(full, "&lt;img") || strings.Contains(full, "| *bold*") {
		t.Errorf("model name not escaped")
	}
}

var update = flag.Bool("update", false, "rewrite golden files")

// golden checks got against testdata/name (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	fixture.Golden(t, filepath.Join("testdata", name), got, *update)
}

// compare's three formats for a 30% TTFT regression over 3 runs a side,
// as the compare command prints them.
func TestCompareGolden(t *testing.T) {
	t.Parallel()
	base, cand, err := fixture.Regression(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(base)
	st, err := judge.Default.Parse()
	if err != nil {
		t.Fatal(err)
	}
	b, err := judge.Load("--baseline", []string{base})
	if err != nil {
		t.Fatal(err)
	}
	c, err := judge.Load("--candidate", []string{cand})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := judge.Compare(st, b, c)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Regressed(false) {
		t.Error("a 30% TTFT regression did not regress")
	}
	for _, f := range []struct{ format, file string }{{"text", "regression.txt"}, {"markdown", "regression.md"}, {"json", "regression.json"}} {
		var out bytes.Buffer
		if err := Compare(&out, f.format, rep); err != nil {
			t.Fatal(err)
		}
		golden(t, f.file, strings.ReplaceAll(out.String(), root, "$TMP"))
	}
}
