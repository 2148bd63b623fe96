package action

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/ghfake"
)

// env is an Actions step environment for event (a file in testdata),
// with extra variables; its workflow commands go to out.
func env(t *testing.T, name, event string, extra map[string]string) (*Env, *bytes.Buffer) {
	t.Helper()
	vars := map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": name, "GITHUB_REPOSITORY": "acme/llm",
		"GITHUB_SHA": "5555555555555555555555555555555555555555", "GITHUB_WORKFLOW": "perf", "GITHUB_JOB": "gate",
	}
	if event != "" {
		vars["GITHUB_EVENT_PATH"] = filepath.Join("testdata", event)
	}
	for k, v := range extra {
		vars[k] = v
	}
	out := &bytes.Buffer{}
	e, err := New(func(k string) string { return vars[k] }, out)
	if err != nil {
		t.Fatal(err)
	}
	return e, out
}

func TestPullRequestEvent(t *testing.T) {
	e, _ := env(t, "pull_request", "pull_request.json", map[string]string{"GITHUB_REF": "refs/pull/42/merge"})
	if !e.InActions() || !e.IsPR() || e.IsPushToDefault() {
		t.Fatalf("actions %v, pr %v, push to default %v", e.InActions(), e.IsPR(), e.IsPushToDefault())
	}
	if n := e.PRNumber(); n != 42 {
		t.Fatalf("PR number %d", n)
	}
	if b, h := e.BaseSHA(), e.HeadSHA(); b != strings.Repeat("1", 40) || h != strings.Repeat("2", 40) {
		t.Fatalf("base %s head %s", b, h)
	}
	if l := strings.Join(e.PRLabels(), ","); l != "perf,aiperf:skip" {
		t.Fatalf("labels %q", l)
	}
	if o, r := e.Repo(); o != "acme" || r != "llm" {
		t.Fatalf("repo %s/%s", o, r)
	}
	if _, ok := e.WorkflowRun(); ok {
		t.Fatal("a pull_request event read as workflow_run")
	}
	// pull_request_target is a PR too.
	e, _ = env(t, "pull_request_target", "pull_request.json", nil)
	if !e.IsPR() || e.PRNumber() != 42 {
		t.Fatal("pull_request_target not read as a PR")
	}
}

func TestPushEvent(t *testing.T) {
	e, _ := env(t, "push", "push.json", map[string]string{"GITHUB_REF": "refs/heads/main"})
	if e.IsPR() || e.PRNumber() != 0 || !e.IsPushToDefault() || e.DefaultBranch() != "main" {
		t.Fatalf("pr %v #%d, push to default %v, default %q", e.IsPR(), e.PRNumber(), e.IsPushToDefault(), e.DefaultBranch())
	}
	// The head of a push is GITHUB_SHA.
	if h := e.HeadSHA(); h != strings.Repeat("5", 40) {
		t.Fatalf("head %s", h)
	}
	// A push to another branch, or a tag named like the default branch,
	// does not refresh baselines.
	for _, ref := range []string{"refs/heads/feature", "refs/tags/main", "refs/heads/main2"} {
		e, _ := env(t, "push", "push.json", map[string]string{"GITHUB_REF": ref})
		if e.IsPushToDefault() {
			t.Errorf("%s read as a push to the default branch", ref)
		}
	}
	// No event file: nothing is the default branch.
	e, _ = env(t, "push", "", map[string]string{"GITHUB_REF": "refs/heads/main"})
	if e.IsPushToDefault() {
		t.Error("a push with no event read as a push to the default branch")
	}
}

// A workflow_run event names the run's head and its pull requests; a
// number 0 (not a pull request) is dropped.
func TestWorkflowRunEvent(t *testing.T) {
	e, _ := env(t, "workflow_run", "workflow_run.json", nil)
	wr, ok := e.WorkflowRun()
	if !ok || wr.HeadSHA != strings.Repeat("4", 40) || wr.HeadBranch != "feature" || wr.HeadRepo != "acme/llm" {
		t.Fatalf("%+v %v", wr, ok)
	}
	if len(wr.PRs) != 1 || wr.PRs[0] != (RunPR{Number: 9, HeadSHA: strings.Repeat("4", 40)}) {
		t.Fatalf("PRs %+v", wr.PRs)
	}
	if e.IsPR() || e.PRNumber() != 0 {
		t.Fatal("workflow_run read as a PR")
	}
}

// The token, from the input or GITHUB_TOKEN, is masked before anything is
// written, and never appears in the commands written after.
func TestTokenMasked(t *testing.T) {
	for _, tc := range []struct{ name, key string }{{"input", "INPUT_GITHUB-TOKEN"}, {"env", "GITHUB_TOKEN"}} {
		t.Run(tc.name, func(t *testing.T) {
			const tok = "ghs_secretsecretsecret"
			e, out := env(t, "push", "push.json", map[string]string{tc.key: tok})
			if e.Token != tok {
				t.Fatalf("token %q", e.Token)
			}
			if !strings.HasPrefix(out.String(), "::add-mask::"+tok+"\n") {
				t.Fatalf("no mask first: %q", out.String())
			}
			e.Warning("something failed")
			e.Error("again")
			if c := strings.Count(out.String(), tok); c != 1 {
				t.Fatalf("token written %d times: %q", c, out.String())
			}
		})
	}
	// No token: nothing to mask.
	_, out := env(t, "push", "push.json", nil)
	if strings.Contains(out.String(), "add-mask") {
		t.Fatalf("masked nothing: %q", out.String())
	}
}

func TestInputsOutputsSummary(t *testing.T) {
	dir := t.TempDir()
	outFile, sumFile := filepath.Join(dir, "out"), filepath.Join(dir, "sum")
	for _, f := range []string{outFile, sumFile} {
		os.WriteFile(f, nil, 0o644)
	}
	e, _ := env(t, "push", "push.json", map[string]string{"INPUT_TOLERANCE": "  5%\n", "GITHUB_OUTPUT": outFile, "GITHUB_STEP_SUMMARY": sumFile})
	if v := e.Input("tolerance"); v != "5%" {
		t.Fatalf("input %q", v)
	}
	e.Output("verdict", "PASS")
	e.Output("lines", "a\nb")
	e.Summary("## table\n")
	o, _ := os.ReadFile(outFile)
	s, _ := os.ReadFile(sumFile)
	if !strings.Contains(string(o), "verdict<<") || !strings.Contains(string(o), "\nPASS\n") || !strings.Contains(string(o), "\na\nb\n") {
		t.Fatalf("outputs file %q", o)
	}
	if !strings.HasPrefix(string(s), "## table\n") {
		t.Fatalf("summary %q", s)
	}
}

// The comment key: workflow, job and the matrix values by name, made safe
// for an HTML comment, and nothing for an empty, null or unexpanded input.
func TestCommentKey(t *testing.T) {
	e, _ := env(t, "pull_request", "pull_request.json", nil)
	for in, want := range map[string]string{
		"":                                  "perf/gate",
		"null":                              "perf/gate",
		"${{ toJSON(matrix) }}":             "perf/gate",
		`{"model": "llama", "gpu": "a100"}`: "perf/gate/gpu:a100,model:llama",
		`{"n": 8, "fast": true}`:            "perf/gate/fast:true,n:8",
		"h100 --> <script>":                 "perf/gate/h100_--_script",
		strings.Repeat("x", 300):            ("perf/gate/" + strings.Repeat("x", 300))[:200],
	} {
		got := e.CommentKey(in)
		if got != want {
			t.Errorf("CommentKey(%q) = %q, want %q", in, got, want)
		}
		// The key cannot end the HTML comment early or open a tag.
		if m := MarkerFor(got); strings.Count(m, "-->") != 1 || !strings.HasSuffix(m, " -->") || strings.ContainsAny(got, "<> ") {
			t.Errorf("marker %q", m)
		}
	}
	if MarkerFor("") != Marker {
		t.Fatal("the unkeyed marker changed")
	}
}

// The sticky comment is created once and then edited in place, found past
// the first page; a keyed marker takes over an earlier version's unkeyed
// comment, and a forbidden write is ErrForbidden.
func TestStickyComment(t *testing.T) {
	ctx := context.Background()
	gh := ghfake.New(t, "acme", "llm")
	c := gh.Client()
	gh.AddComments(42, 150)
	url, err := StickyComment(ctx, c, "acme", "llm", 42, "first", Marker)
	if err != nil || url == "" {
		t.Fatal(url, err)
	}
	gh.AddComments(42, 120) // the gate's comment is now on page 2 of 3
	if _, err := StickyComment(ctx, c, "acme", "llm", 42, "second", Marker); err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, cm := range gh.Comments[42] {
		if strings.Contains(cm.Body, Marker) {
			ours = append(ours, cm.Body)
		}
	}
	if len(ours) != 1 || ours[0] != Marker+"\nsecond" {
		t.Fatalf("gate comments %q", ours)
	}
	// A keyed marker edits the legacy comment rather than adding one.
	keyed := MarkerFor("perf/gate")
	if _, err := StickyComment(ctx, c, "acme", "llm", 42, "third", keyed); err != nil {
		t.Fatal(err)
	}
	found, err := FindSticky(ctx, c, "acme", "llm", 42, keyed, false)
	if err != nil || found == nil || found.GetBody() != keyed+"\nthird" || len(gh.Comments[42]) != 271 {
		t.Fatalf("found %v (%v), %d comments", found, err, len(gh.Comments[42]))
	}
	// Another key gets its own comment.
	if _, err := StickyComment(ctx, c, "acme", "llm", 42, "fourth", MarkerFor("perf/gate/gpu:h100")); err != nil || len(gh.Comments[42]) != 272 {
		t.Fatal(err, len(gh.Comments[42]))
	}
	gh.ForbidWrites = true
	if _, err := StickyComment(ctx, c, "acme", "llm", 7, "x", Marker); !errors.Is(err, ErrForbidden) {
		t.Fatalf("forbidden write: %v", err)
	}
}

func TestClientAndMergeBase(t *testing.T) {
	gh := ghfake.New(t, "acme", "llm")
	gh.MergeBase = strings.Repeat("6", 40)
	e, _ := env(t, "pull_request", "pull_request.json", map[string]string{"GITHUB_API_URL": gh.URL, "GITHUB_TOKEN": "tok"})
	c, err := e.Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := MergeBase(context.Background(), c, "acme", "llm", e.BaseSHA(), e.HeadSHA())
	if err != nil || mb != gh.MergeBase {
		t.Fatalf("merge-base %q, %v", mb, err)
	}
	if len(gh.Reqs) != 1 || !strings.Contains(gh.Reqs[0].Path, "compare/"+e.BaseSHA()+"..."+e.HeadSHA()) {
		t.Fatalf("requests %+v", gh.Reqs)
	}
	if mb, err := MergeBase(context.Background(), c, "acme", "llm", "", "x"); mb != "" || err != nil {
		t.Fatal("no base: asked anyway")
	}
	e, _ = env(t, "push", "push.json", map[string]string{"GITHUB_API_URL": "http://[::1"})
	if _, err := e.Client(nil); err == nil || !strings.Contains(err.Error(), "GITHUB_API_URL") {
		t.Fatalf("bad API URL: %v", err)
	}
}
