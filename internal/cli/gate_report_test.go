package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// The PR comment for each kind of outcome, from deterministic fixture runs.
func TestGateCommentGolden(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	load := func(name string, seed uint64, scale float64) result.Loaded {
		dir := filepath.Join(root, name)
		writeRun(t, dir, seed, scale, 600, 0, fixtureHash)
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
		s := gate.Scenario{Name: "chat-c8", Candidate: runs(c), Baseline: runs(b), BaselineSource: "the newest baseline runs in folder baselines"}
		if len(b) > 0 {
			cr, err := judge.Compare(st, b, c)
			if err != nil {
				t.Fatal(err)
			}
			s.Compare = cr
		}
		return s
	}
	meta := gate.Meta{Model: "m", Server: "built-in simulator", Runner: "test-runner", Commit: "abc123", Event: "pull_request", Store: "folder baselines", Seed: 42, Repeats: 3}
	cases := []struct {
		file    string
		verdict gate.Verdict
		sc      gate.Scenario
	}{
		{"comment-pass.md", "pass", scenario(base, same)},
		{"comment-fail.md", "fail", scenario(base, slow)},
		{"comment-inconclusive.md", "inconclusive", scenario(base[:1], same[:1])},
		{"comment-no-baseline.md", gate.NoBaseline, scenario(nil, same)},
	}
	for _, c := range cases {
		rep := &gate.Report{Scenarios: []gate.Scenario{c.sc}, Meta: meta}
		rep.Verdict = gate.Fold(rep.Scenarios)
		if rep.Verdict != c.verdict {
			t.Errorf("%s: verdict %s, want %s", c.file, rep.Verdict, c.verdict)
		}
		md := report.CommentMarkdown(rep, action.Marker, action.MaxComment)
		if !strings.HasPrefix(md, action.Marker) {
			t.Errorf("%s: no marker", c.file)
		}
		golden(t, c.file, md)
	}
}

// Server text is escaped, and an oversized report is cut to fit a comment.
func TestGateCommentEscapesAndFits(t *testing.T) {
	t.Parallel()
	rep := &gate.Report{Verdict: gate.Pass, Meta: gate.Meta{Model: "<img src=x onerror=alert(1)> | *bold*"}}
	for i := 0; i < 400; i++ {
		rep.Scenarios = append(rep.Scenarios, gate.Scenario{Name: strings.Repeat("x", 200)})
	}
	md := report.CommentMarkdown(rep, action.Marker, action.MaxComment)
	if len(md) > action.MaxComment {
		t.Fatalf("comment is %d characters", len(md))
	}
	full := report.GateMarkdown(rep, action.Marker, true)
	if strings.Contains(full, "<img") || !strings.Contains(full, "&lt;img") || strings.Contains(full, "| *bold*") {
		t.Errorf("model name not escaped")
	}
}
