package gate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/aiperf-action/aiperf-action/internal/ghfake"
)

// quickstartInputs are the inputs examples/workflows/quickstart.yml gives
// the action on event, its one expression (mode) worked out as Actions
// would; any other expression fails the test.
func quickstartInputs(t *testing.T, event string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../examples/workflows/quickstart.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			if !strings.HasPrefix(s.Uses, "aiperf-action/aiperf-action@") {
				continue
			}
			in := map[string]string{}
			for k, v := range s.With {
				switch {
				case k == "mode" && v == "${{ github.event_name == 'workflow_dispatch' && 'refresh' || 'gate' }}":
					in[k] = map[bool]string{true: "refresh", false: "gate"}[event == "workflow_dispatch"]
				case strings.Contains(v, "${{"):
					t.Fatalf("input %s: an expression this test does not work out: %s", k, v)
				default:
					in[k] = v
				}
			}
			return in
		}
	}
	t.Fatal("quickstart.yml has no aiperf-action step")
	return nil
}

// The README's quick start, in a repository with nothing else in it: the
// first pull request gets a comment (no baseline yet, green), the first
// push to main stores its runs on the baseline branch, and the next pull
// request is compared with them. No file but the workflow is read.
func TestQuickstartFromAFreshRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("three gates of three 160-request runs each")
	}
	prIn, pushIn := quickstartInputs(t, "pull_request"), quickstartInputs(t, "push")
	dir := t.TempDir()
	t.Chdir(dir) // the results folder is the action's default, under the workspace
	gh := ghfake.New(t, "o", "r")

	pr := newActionsEnv(t, dir, gh, "pull_request", prEvent(1), prIn)
	code, out, errs := pr.gate(t)
	if code != ExitOK || len(gh.Comments[1]) != 1 || !strings.Contains(gh.Comments[1][0].Body, "no baseline yet") {
		t.Fatalf("first pull request: exit %d, comments %+v\n%s\n%s", code, gh.Comments[1], out, errs)
	}
	if len(gh.Files("aiperf-baselines")) != 0 {
		t.Fatal("a pull request wrote baselines")
	}

	push := newActionsEnv(t, dir, gh, "push", map[string]any{"repository": map[string]any{"default_branch": "main"}}, pushIn)
	push.vars["GITHUB_SHA"] = "main00000001"
	if code, out, errs = push.gate(t); code != ExitOK {
		t.Fatalf("first push to main: exit %d\n%s\n%s", code, out, errs)
	}
	stored := 0
	for p := range gh.Files("aiperf-baselines") {
		if strings.Contains(p, "chat-c8") && strings.HasSuffix(p, ".json") {
			stored++
		}
	}
	if stored < 3 {
		t.Fatalf("%d runs stored on the baseline branch, want the push's 3: %v", stored, gh.Files("aiperf-baselines"))
	}

	pr2 := newActionsEnv(t, dir, gh, "pull_request", prEvent(2), prIn)
	code, out, errs = pr2.gate(t)
	if code == ExitError || len(gh.Comments[2]) != 1 || strings.Contains(gh.Comments[2][0].Body, "no baseline yet") ||
		!strings.Contains(gh.Comments[2][0].Body, " runs of this PR against") { // (3, or 6 when the first look left it open: adaptive repeats)
		t.Fatalf("second pull request: exit %d, comments %+v\n%s\n%s", code, gh.Comments[2], out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "aiperf-results", "comparison.json")); err != nil {
		t.Errorf("the results folder the workflow uploads: %v", err)
	}
}
