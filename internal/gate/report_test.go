package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

func scenario(v compare.Verdict) Scenario {
	if v == "" {
		return Scenario{Name: "first"}
	}
	return Scenario{Name: string(v), Compare: &judge.Report{Comparison: &compare.Comparison{Verdict: v}}}
}

// Any fail fails; then inconclusive; then pass; no-baseline only when no
// scenario had a baseline.
func TestFold(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   []Scenario
		want Verdict
	}{
		{nil, NoBaseline},
		{[]Scenario{scenario("")}, NoBaseline},
		{[]Scenario{scenario(""), scenario(compare.Pass)}, Pass},
		{[]Scenario{scenario(compare.Pass), scenario(compare.Inconclusive)}, Inconclusive},
		{[]Scenario{scenario(compare.Inconclusive), scenario(compare.Fail), scenario("")}, Fail},
	}
	for _, c := range cases {
		if got := Fold(c.in); got != c.want {
			t.Errorf("%d scenarios: %s, want %s", len(c.in), got, c.want)
		}
	}
}

// Configure lists every problem of the file and the inputs together,
// under the file's name, before anything runs.
func TestConfigureListsEveryProblem(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "aiperf.yml")
	os.WriteFile(p, []byte("server: simulator\nscenarios:\n  - name: a\nrepeats: 2\n"), 0o644)
	inputs := map[string]string{"config": p, "repeats": "three", "scenarios": "a,b", "fail-on-inconclusive": "maybe", "baseline-store": "s3"}
	_, err := Configure(p, func(k string) string { return inputs[k] })
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"config " + p, `repeats "three"`, `scenarios: "b" is not in`, `fail-on-inconclusive "maybe"`, `baseline.store "s3"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	cfg, err := Configure(p, func(k string) string { return map[string]string{"repeats": "5", "model": "m"}[k] })
	if err != nil || cfg.Repeats != 5 || cfg.Model != "m" {
		t.Fatalf("overrides: %+v %v", cfg, err)
	}
}

// A refresh never runs on a pull request, and unknown modes are refused.
func TestOptionsCheck(t *testing.T) {
	t.Parallel()
	ev := filepath.Join(t.TempDir(), "event.json")
	os.WriteFile(ev, []byte(`{"pull_request":{"number":3}}`), 0o644)
	vars := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": ev}
	env, err := action.New(func(k string) string { return vars[k] }, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{Mode: "refresh", Comment: "always"}, "never on a pull_request"},
		{Options{Mode: "publish", Comment: "always"}, `mode "publish"`},
		{Options{Mode: "gate", Comment: "sometimes"}, `comment "sometimes"`},
		{Options{Mode: "gate", Comment: "on-change"}, ""},
	} {
		err := c.opt.Check(env)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.opt, err, c.want)
		}
	}
}

// A run is no measurement when nothing succeeded, or more failed than
// max-error-rate allows; cancellations are not failures.
func TestBrokenRun(t *testing.T) {
	run := func(req, ok, errs, cancelled int) *result.Run {
		r := &result.Run{}
		r.Counts.Requests, r.Counts.OK, r.Counts.Errors, r.Counts.Cancelled = req, ok, errs, cancelled
		if errs > cancelled {
			r.Counts.ErrorsByKind = map[string]int{"http_429": errs - cancelled}
			r.Counts.ErrorExamples = map[string]string{"http_429": "rate limited"}
		}
		return r
	}
	for _, c := range []struct {
		name string
		r    *result.Run
		want string // "" for a usable run
	}{
		{"clean", run(100, 100, 0, 0), ""},
		{"at the limit", run(100, 99, 1, 0), ""},
		{"over the limit", run(100, 98, 2, 0), "2 of its 100 requests failed (2.0%, above the max-error-rate of 1%: http_429 ×2: rate limited)"},
		{"cancellations are not failures", run(100, 80, 20, 20), ""},
		{"none succeeded", run(10, 0, 10, 0), "none of its 10 requests succeeded (http_429 ×10: rate limited)"},
		{"all cancelled", run(10, 0, 10, 10), "none of its 10 requests succeeded (no error kinds recorded)"},
		{"nothing completed", run(0, 0, 0, 0), "it completed no request"},
	} {
		if got := brokenRun(c.r, 0.01); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// A broken scenario fails, and no label accepts it.
	s := Scenario{Name: "x", Broken: "none succeeded"}
	rep := &Report{Scenarios: []Scenario{s}}
	if s.Verdict() != Fail || Fold(rep.Scenarios) != Fail || !rep.Broken() {
		t.Errorf("a broken scenario: %s", s.Verdict())
	}
}

// A scenario the prefix cache served otherwise than its baseline is not
// judged on its latencies (a FAIL or a PASS reads INCONCLUSIVE, and no
// regression is annotated), but an error rate past its limit still FAILs.
func TestCacheMismatchIsNotJudged(t *testing.T) {
	row := func(metric string, v compare.Verdict) compare.Result {
		return compare.Result{Spec: compare.Spec{Metric: metric, Stat: "p50"}, Verdict: v}
	}
	for _, c := range []struct {
		name        string
		rows        []compare.Result
		want        Verdict
		regressions int
	}{
		{"latency FAIL", []compare.Result{row("time_to_first_token", compare.Fail), row("error_rate", compare.Pass)}, Inconclusive, 0},
		{"all PASS", []compare.Result{row("time_to_first_token", compare.Pass), row("error_rate", compare.Pass)}, Inconclusive, 0},
		{"undecided", []compare.Result{row("time_to_first_token", compare.Inconclusive), row("error_rate", compare.Pass)}, Inconclusive, 0},
		{"errors", []compare.Result{row("time_to_first_token", compare.Pass), row("error_rate", compare.Fail)}, Fail, 1},
	} {
		s := Scenario{Name: "first", CacheMismatch: "run 1 was served from the cache",
			Compare: &judge.Report{Comparison: &compare.Comparison{Results: c.rows, Verdict: compare.Overall(c.rows)}}}
		if got := s.Verdict(); got != c.want {
			t.Errorf("%s: verdict %s, want %s", c.name, got, c.want)
		}
		if got := regressions(&Report{Scenarios: []Scenario{s}}); len(got) != c.regressions {
			t.Errorf("%s: regressions %q", c.name, got)
		}
		s.CacheMismatch = ""
		if want := Verdict(compare.Overall(c.rows)); s.Verdict() != want {
			t.Errorf("%s without the mismatch: %s, want %s", c.name, s.Verdict(), want)
		}
	}
}
