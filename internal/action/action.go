// Package action is the GitHub Actions glue: inputs, outputs, the job
// summary, annotations, the event, and the sticky PR comment.
//
// The token is masked the moment it is read and never printed. Nothing
// from a pull request or a server reaches a shell; text from them is
// escaped before it goes into markdown (see report.EscapeMarkdown).
package action

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-github/v66/github"
	"github.com/sethvargo/go-githubactions"
)

// Marker identifies the gate's sticky comment among a PR's comments: the
// one an earlier version wrote, without a key, and still the marker of a
// gate outside Actions.
const Marker = "<!-- aiperf-action:sticky-comment -->"

// MarkerFor is the sticky comment's marker for a comment key: one comment
// per key on a pull request, so the jobs of a matrix keep one each.
func MarkerFor(key string) string {
	if key == "" {
		return Marker
	}
	return "<!-- aiperf-action:sticky-comment key=" + key + " -->"
}

var keyUnsafe = regexp.MustCompile(`[^A-Za-z0-9._/=,:-]+`)

// CommentKey is the key of this job's comment: input (the comment-key
// input, whose default in action.yml is the job's matrix values) after
// the workflow and the job, made safe for an HTML comment. An input that
// is empty, "null" (a job without a matrix) or an expression the runner
// left unexpanded adds nothing.
func (e *Env) CommentKey(input string) string {
	parts := []string{e.Getenv("GITHUB_WORKFLOW"), e.Getenv("GITHUB_JOB")}
	if in := strings.TrimSpace(input); in != "" && in != "null" && !strings.Contains(in, "${{") {
		// The matrix as toJSON writes it ({"gpu": "a100", ...}): its
		// values by name, in name order.
		var m map[string]any
		if json.Unmarshal([]byte(in), &m) == nil && len(m) > 0 {
			names := make([]string, 0, len(m))
			for k := range m {
				names = append(names, k)
			}
			sort.Strings(names)
			var kv []string
			for _, k := range names {
				v, _ := json.Marshal(m[k])
				kv = append(kv, k+":"+strings.Trim(string(v), `"`))
			}
			in = strings.Join(kv, ",")
		}
		parts = append(parts, in)
	}
	key := strings.Trim(keyUnsafe.ReplaceAllString(strings.Join(parts, "/"), "_"), "/_")
	if len(key) > 200 {
		key = key[:200]
	}
	return key
}

// TokenInput is the action input holding the GitHub token.
const TokenInput = "github-token"

// MaxComment is GitHub's limit on a comment body.
const MaxComment = 65536

// Env is the Actions environment of one step. It is the only way the rest
// of the program touches it: inputs, outputs, the job summary, annotations
// and log groups all go through its methods.
type Env struct {
	a     *githubactions.Action
	Ctx   *githubactions.GitHubContext
	Token string
}

// New reads the environment through getenv, writing workflow commands to w.
func New(getenv func(string) string, w io.Writer) (*Env, error) {
	a := githubactions.New(githubactions.WithGetenv(getenv), githubactions.WithWriter(w))
	ctx, err := a.Context()
	if err != nil {
		return nil, fmt.Errorf("read the GitHub Actions context: %w", err)
	}
	// The input; in a plain run step (the released binary), GITHUB_TOKEN.
	e := &Env{a: a, Ctx: ctx, Token: cmp.Or(a.GetInput(TokenInput), strings.TrimSpace(getenv("GITHUB_TOKEN")))}
	if e.Token != "" {
		a.AddMask(e.Token)
	}
	return e, nil
}

// InActions reports whether this is a GitHub Actions run.
func (e *Env) InActions() bool { return e.Ctx.Actions }

// Input is the action input name (kebab-case), trimmed.
func (e *Env) Input(name string) string { return strings.TrimSpace(e.a.GetInput(name)) }

// Getenv reads the step's environment (the getenv New was given).
func (e *Env) Getenv(name string) string { return e.a.Getenv(name) }

// Error writes an error annotation (::error::).
func (e *Env) Error(msg string) { e.a.Errorf("%s", msg) }

// Warning writes a warning annotation (::warning::).
func (e *Env) Warning(msg string) { e.a.Warningf("%s", msg) }

// Group starts a collapsed log group (::group::); EndGroup ends it.
func (e *Env) Group(title string) { e.a.Group(title) }

// EndGroup ends the group Group started.
func (e *Env) EndGroup() { e.a.EndGroup() }

// Summary appends markdown to the job summary ($GITHUB_STEP_SUMMARY).
func (e *Env) Summary(markdown string) { e.a.AddStepSummary(markdown) }

// Output sets a step output ($GITHUB_OUTPUT).
func (e *Env) Output(name, value string) { e.a.SetOutput(name, value) }

// Repo is owner and name.
func (e *Env) Repo() (string, string) { return e.Ctx.Repo() }

func (e *Env) event(path ...string) any {
	var cur any = e.Ctx.Event
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func (e *Env) eventString(path ...string) string { s, _ := e.event(path...).(string); return s }

// IsPR reports a pull_request(-target) event.
func (e *Env) IsPR() bool {
	return e.Ctx.EventName == "pull_request" || e.Ctx.EventName == "pull_request_target"
}

// PRNumber is the pull request's number, or 0.
func (e *Env) PRNumber() int {
	if n, ok := e.event("pull_request", "number").(float64); ok {
		return int(n)
	}
	if n, ok := e.event("number").(float64); ok && e.IsPR() {
		return int(n)
	}
	return 0
}

// WorkflowRun is what a workflow_run event says of the run that set it
// off: its head commit, branch and repository, its page, and the pull
// requests GitHub linked it to (none for a pull request from a fork).
type WorkflowRun struct {
	HeadSHA, HeadBranch string
	HeadRepo            string // "owner/name"
	HTMLURL             string // the run's page, when it is under this server's URL
	PRs                 []RunPR
}

// RunPR is a pull request of a workflow_run event.
type RunPR struct {
	Number  int
	HeadSHA string
}

// WorkflowRun reads the workflow_run event; false on any other event.
func (e *Env) WorkflowRun() (WorkflowRun, bool) {
	if e.Ctx.EventName != "workflow_run" {
		return WorkflowRun{}, false
	}
	wr := WorkflowRun{HeadSHA: e.eventString("workflow_run", "head_sha"), HeadBranch: e.eventString("workflow_run", "head_branch"),
		HeadRepo: e.eventString("workflow_run", "head_repository", "full_name")}
	if u := e.eventString("workflow_run", "html_url"); e.underServer(u) {
		wr.HTMLURL = u
	}
	prs, _ := e.event("workflow_run", "pull_requests").([]any)
	for _, p := range prs {
		m, _ := p.(map[string]any)
		n, _ := m["number"].(float64)
		head, _ := m["head"].(map[string]any)
		sha, _ := head["sha"].(string)
		if n > 0 {
			wr.PRs = append(wr.PRs, RunPR{Number: int(n), HeadSHA: sha})
		}
	}
	return wr, true
}

// PRLabels are the pull request's labels, from the event: as they were
// when it fired, even on a re-run (Labels asks the API for them as of now).
func (e *Env) PRLabels() []string {
	ls, _ := e.event("pull_request", "labels").([]any)
	var out []string
	for _, l := range ls {
		m, _ := l.(map[string]any)
		if n, _ := m["name"].(string); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Labels are the pull request's labels as of now, from the API.
func Labels(ctx context.Context, c *github.Client, owner, repo string, pr int) ([]string, error) {
	var out []string
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < 10; page++ {
		ls, resp, err := c.Issues.ListLabelsByIssue(ctx, owner, repo, pr, opt)
		if err != nil {
			return nil, fmt.Errorf("list the labels of #%d: %w", pr, err)
		}
		for _, l := range ls {
			out = append(out, l.GetName())
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

// DefaultBranch is the repository's default branch, from the event.
func (e *Env) DefaultBranch() string { return e.eventString("repository", "default_branch") }

// IsPushToDefault reports a push to the default branch: the only event on
// which baselines are refreshed.
func (e *Env) IsPushToDefault() bool {
	d := e.DefaultBranch()
	return e.Ctx.EventName == "push" && d != "" && e.Ctx.Ref == "refs/heads/"+d
}

// BaseSHA and HeadSHA are the pull request's base and head commits.
func (e *Env) BaseSHA() string { return e.eventString("pull_request", "base", "sha") }
func (e *Env) HeadSHA() string {
	if s := e.eventString("pull_request", "head", "sha"); s != "" {
		return s
	}
	return e.Ctx.SHA
}

// RunURL is the page of this workflow run (its attempt, after the first),
// or "" outside Actions.
func (e *Env) RunURL() string {
	u := e.RunPage(e.Ctx.RunID)
	if u != "" && e.Ctx.RunAttempt > 1 {
		u += fmt.Sprintf("/attempts/%d", e.Ctx.RunAttempt)
	}
	return u
}

// RunPage is the page of this repository's workflow run id, or "" outside
// Actions.
func (e *Env) RunPage(id int64) string {
	owner, repo := e.Repo()
	if !e.InActions() || id <= 0 || owner == "" || e.Ctx.ServerURL == "" {
		return ""
	}
	return fmt.Sprintf("%s/%s/%s/actions/runs/%d", strings.TrimSuffix(e.Ctx.ServerURL, "/"), url.PathEscape(owner), url.PathEscape(repo), id)
}

// WorkflowFile is the running workflow's file in its repository
// (".github/workflows/perf.yml"), from GITHUB_WORKFLOW_REF; "" when unknown.
func (e *Env) WorkflowFile() string {
	ref, _, _ := strings.Cut(e.Getenv("GITHUB_WORKFLOW_REF"), "@")
	if i := strings.Index(ref, "/.github/workflows/"); i >= 0 {
		return ref[i+1:]
	}
	return ""
}

// EventAction is the event's activity type ("labeled", "synchronize", ...).
func (e *Env) EventAction() string { return e.eventString("action") }

var safeURL = regexp.MustCompile(`^https?://[A-Za-z0-9./:_~%-]+$`)

// underServer reports whether u is a plain link under this server's URL
// (what an event may name as a run's page).
func (e *Env) underServer(u string) bool {
	base := strings.TrimSuffix(e.Ctx.ServerURL, "/")
	return base != "" && safeURL.MatchString(u) && strings.HasPrefix(u, base+"/")
}

// Client is a go-github client for this run's API URL and token.
func (e *Env) Client(hc *http.Client) (*github.Client, error) {
	c := github.NewClient(hc)
	if e.Token != "" {
		c = c.WithAuthToken(e.Token)
	}
	if e.Ctx.APIURL != "" {
		u, err := url.Parse(strings.TrimSuffix(e.Ctx.APIURL, "/") + "/")
		if err != nil {
			return nil, fmt.Errorf("GITHUB_API_URL: %w", err)
		}
		c.BaseURL = u
	}
	return c, nil
}

// MergeBase asks the API for the merge-base of base and head ("" when it can't).
func MergeBase(ctx context.Context, c *github.Client, owner, repo, base, head string) (string, error) {
	if base == "" || head == "" {
		return "", nil
	}
	cmp, _, err := c.Repositories.CompareCommits(ctx, owner, repo, base, head, nil)
	if err != nil {
		return "", fmt.Errorf("find merge-base: %w", err)
	}
	return cmp.GetMergeBaseCommit().GetSHA(), nil
}

// ErrForbidden means the token may not write (a fork's read-only token).
var ErrForbidden = errors.New("the token may not write to this repository")

// FindSticky returns the gate's comment with marker on a PR, searching
// every page of comments, or nil when there is none. With legacy it takes
// a comment of an earlier version (Marker, no key) when none has marker.
func FindSticky(ctx context.Context, c *github.Client, owner, repo string, pr int, marker string, legacy bool) (*github.IssueComment, error) {
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var old *github.IssueComment
	for {
		cs, resp, err := c.Issues.ListComments(ctx, owner, repo, pr, opt)
		if err != nil {
			return nil, fmt.Errorf("list comments of #%d: %w", pr, err)
		}
		for _, cm := range cs {
			switch body := cm.GetBody(); {
			case strings.Contains(body, marker):
				return cm, nil
			case legacy && old == nil && strings.Contains(body, Marker):
				old = cm
			}
		}
		if resp.NextPage == 0 {
			return old, nil
		}
		opt.Page = resp.NextPage
	}
}

// StickyComment creates the gate's comment with marker on a PR, or edits
// it in place (a keyed marker takes over an earlier version's unkeyed
// comment).
func StickyComment(ctx context.Context, c *github.Client, owner, repo string, pr int, body, marker string) (string, error) {
	if !strings.Contains(body, marker) {
		body = marker + "\n" + body
	}
	found, err := FindSticky(ctx, c, owner, repo, pr, marker, marker != Marker)
	if err != nil {
		return "", err
	}
	var out *github.IssueComment
	var resp *github.Response
	if found != nil {
		out, resp, err = c.Issues.EditComment(ctx, owner, repo, found.GetID(), &github.IssueComment{Body: github.String(body)})
	} else {
		out, resp, err = c.Issues.CreateComment(ctx, owner, repo, pr, &github.IssueComment{Body: github.String(body)})
	}
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound) {
			return "", fmt.Errorf("%w: %v", ErrForbidden, err)
		}
		return "", fmt.Errorf("write the comment on #%d: %w", pr, err)
	}
	return out.GetHTMLURL(), nil
}
