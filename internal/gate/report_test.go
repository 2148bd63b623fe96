package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/judge"
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
