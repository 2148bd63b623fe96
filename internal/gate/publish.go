package gate

// The gate's output side: report files, job summary, outputs, annotations
// and the PR comment.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// finish writes the report, the summary, outputs and annotations, posts the
// comment, and picks the exit code.
func (g *gate) finish(ctx context.Context, rep *Report) (int, error) {
	out := g.opt.ResultsDir
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	full := g.opt.Render.Markdown(rep, true)
	reportPath := filepath.Join(out, "report.md")
	if err := result.WriteFileAtomic(reportPath, []byte(full)); err != nil {
		return 0, err
	}
	// report.html: the charts, for the run's artifacts (a failure to draw
	// is said, and never fails the gate).
	htmlPath := filepath.Join(out, HTMLReportFile)
	if b, err := g.opt.Render.HTML(rep, out); err != nil {
		rep.Notes = append(rep.Notes, "report.html was not written: "+err.Error())
		htmlPath = ""
	} else if err := result.WriteFileAtomic(htmlPath, b); err != nil {
		rep.Notes = append(rep.Notes, "report.html was not written: "+err.Error())
		htmlPath = ""
	}
	rep.Meta.HTMLReport = htmlPath != ""
	cj, _ := json.MarshalIndent(NewArtifact(rep, g.env.PRNumber(), g.env.HeadSHA(), g.opt.CommentKey), "", "  ")
	if err := result.WriteFileAtomic(filepath.Join(out, ArtifactFile), append(cj, '\n')); err != nil {
		return 0, err
	}
	if pr := g.env.PRNumber(); pr > 0 {
		result.WriteFileAtomic(filepath.Join(out, "pr-number"), []byte(strconv.Itoa(pr)+"\n"))
	}
	rep.Advisory = g.opt.Advisory
	if rep.Verdict == Fail && !rep.Broken() && g.env.IsPR() && g.opt.AcceptLabel != "" && slices.Contains(g.labels(ctx), g.opt.AcceptLabel) {
		rep.Accepted = "the pull request has the label " + g.opt.AcceptLabel
	}
	for _, msg := range regressions(rep) {
		switch {
		case !g.env.InActions():
			fmt.Fprintln(g.opt.Stderr, "regression: "+msg)
		case rep.Blocks(g.cfg.Thresholds.FailOnInconclusive):
			g.env.Error(msg)
		default:
			g.env.Warning(msg)
		}
	}
	full = g.opt.Render.Markdown(rep, true)
	result.WriteFileAtomic(reportPath, []byte(full))
	commentURL := ""
	if g.opt.Mode == "gate" {
		g.commentCharts(ctx, rep)
		url, note := g.postComment(ctx, rep)
		commentURL = url
		if g.env.IsPR() {
			if n := g.checkRun(ctx, rep, g.env.HeadSHA(), g.cfg.Thresholds.FailOnInconclusive); n != "" {
				note = strings.TrimSpace(note + " " + n)
			}
		}
		if note != "" {
			rep.Notes = append(rep.Notes, note)
			full = g.opt.Render.Markdown(rep, true)
			result.WriteFileAtomic(reportPath, []byte(full))
		}
	}
	if g.env.InActions() {
		g.env.Summary(full)
		g.env.Output("verdict", string(rep.Verdict))
		g.env.Output("report-path", reportPath)
		if htmlPath != "" {
			g.env.Output("report-html-path", htmlPath)
		}
		g.env.Output("comment-url", commentURL)
		g.env.Output("summary-markdown", full)
	} else {
		fmt.Fprintln(g.opt.Stdout, "\n---- the report (the PR comment it would post) ----")
		fmt.Fprint(g.opt.Stdout, g.opt.Render.Comment(rep, action.MaxComment))
	}
	g.logf("aiperf-action gate: verdict %s; report %s", strings.ToUpper(string(rep.Verdict)), reportPath)
	if rep.Blocks(g.cfg.Thresholds.FailOnInconclusive) {
		return run.ExitRegression, nil
	}
	return run.ExitOK, nil
}

// maxAnnotations is the most annotations one check-run request may carry.
const maxAnnotations = 50

// checkRun reports the verdict as a completed check run on sha, with an
// annotation per failing or inconclusive statistic (on the config file,
// where their thresholds are). A token that may not write checks leaves a
// note, never a failure.
func (g *gate) checkRun(ctx context.Context, rep *Report, sha string, failOnInconclusive bool) (note string) {
	if !g.opt.CheckRun || g.env.Token == "" || sha == "" {
		return ""
	}
	c, err := g.github()
	if err != nil {
		return ""
	}
	path := cmp.Or(g.opt.ConfigPath, ".github/aiperf.yml")
	if g.opt.ConfigText != "" { // inline: annotate the workflow file that holds it
		path = cmp.Or(g.env.WorkflowFile(), ".github/workflows")
	}
	var anns []*github.CheckRunAnnotation
	for _, s := range rep.Scenarios {
		if s.Broken != "" {
			anns = append(anns, &github.CheckRunAnnotation{Path: github.String(path), StartLine: github.Int(1), EndLine: github.Int(1),
				AnnotationLevel: github.String("failure"), Title: github.String(s.Name + ": runs failed"), Message: github.String(s.Broken)})
		}
		if s.Compare == nil {
			continue
		}
		for _, r := range s.Compare.Results {
			level := map[compare.Verdict]string{compare.Fail: "failure", compare.Inconclusive: "warning"}[r.Verdict]
			if level == "" || len(anns) == maxAnnotations {
				continue
			}
			if level == "failure" && !rep.Blocks(failOnInconclusive) {
				level = "warning"
			}
			anns = append(anns, &github.CheckRunAnnotation{Path: github.String(path), StartLine: github.Int(1), EndLine: github.Int(1),
				AnnotationLevel: github.String(level), Title: github.String(s.Name + ": " + r.Name()),
				Message: github.String(fmt.Sprintf("%s %+.1f%% (90%% interval %+.1f%% to %+.1f%%, tolerance %.3g%%): %s",
					r.Name(), 100*r.Change, 100*r.Lo, 100*r.Hi, 100*r.Tolerance, strings.ToUpper(string(r.Verdict))))})
		}
	}
	name := "aiperf-action"
	if g.opt.CommentKey != "" {
		name += " (" + g.opt.CommentKey + ")"
	}
	summary := g.opt.Render.Comment(rep, 65000)
	title := strings.ToUpper(string(rep.Verdict))
	switch {
	case rep.Accepted != "":
		title += " (accepted: " + rep.Accepted + ")"
	case rep.Advisory:
		title += " (advisory)"
	}
	owner, repo := g.env.Repo()
	_, resp, err := c.Checks.CreateCheckRun(ctx, owner, repo, github.CreateCheckRunOptions{Name: name, HeadSHA: sha,
		Status: github.String("completed"), Conclusion: github.String(rep.Conclusion(failOnInconclusive)),
		Output: &github.CheckRunOutput{Title: github.String(title), Summary: github.String(summary), Annotations: anns}})
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound) {
			return "No check run: the token may not write checks (add `checks: write` to the workflow's permissions, or `check-run: false`)."
		}
		g.env.Warning(fmt.Sprintf("aiperf-action: check run: %v", err))
		return "Could not create the check run: " + err.Error()
	}
	return ""
}

// regressions is one sentence per failed statistic, for the annotations.
func regressions(rep *Report) []string {
	var out []string
	for _, s := range rep.Scenarios {
		if s.Broken != "" {
			out = append(out, s.Name+": "+s.Broken)
		}
		if s.Compare == nil {
			continue
		}
		for _, r := range s.Compare.Results {
			if r.Verdict != compare.Fail || s.CacheMismatch != "" && r.Metric != "error_rate" {
				continue // (a scenario the prefix cache served otherwise than its baseline: not judged)
			}
			msg := fmt.Sprintf("%s: %s regressed: %+.1f%% (interval %+.1f%% to %+.1f%%, tolerance %.1f%%)", s.Name, r.Name(), 100*r.Change, 100*r.Lo, 100*r.Hi, 100*r.Tolerance)
			if r.Metric == "error_rate" {
				msg = fmt.Sprintf("%s: error rate %.2f%% is above %.2f%%", s.Name, 100*r.Candidate, 100*r.Tolerance)
			}
			out = append(out, msg)
		}
	}
	return out
}

// postComment posts or updates the sticky comment on a PR. A token that
// may not write (a fork PR) does not fail the gate: it leaves a note on
// how to split the work.
func (g *gate) postComment(ctx context.Context, rep *Report) (url, note string) {
	if !g.env.IsPR() || g.opt.Comment == "never" {
		return "", ""
	}
	if g.opt.Comment == "on-change" && rep.Verdict == Pass && !g.hasComment(ctx) {
		return "", ""
	}
	c, err := g.github()
	if err != nil || g.env.Token == "" {
		return "", "No PR comment: no github-token."
	}
	owner, repo := g.env.Repo()
	url, err = action.StickyComment(ctx, c, owner, repo, g.env.PRNumber(), g.opt.Render.Comment(rep, action.MaxComment), g.marker())
	if errors.Is(err, action.ErrForbidden) {
		msg := "Could not comment on the pull request: the token is read-only (a pull request from a fork?). " +
			"Run the gate with `mode: run` and upload the results folder as an artifact, then post it from a `workflow_run` workflow with `mode: comment` (see the README)."
		g.env.Warning(msg)
		return "", msg
	}
	if err != nil {
		g.env.Warning(fmt.Sprintf("aiperf-action: %v", err))
		return "", "Could not post the PR comment: " + err.Error()
	}
	return url, ""
}

// labels are the pull request's labels as of now, from the API (a re-run
// sees a label added since the event); the event's when the API can't say.
func (g *gate) labels(ctx context.Context) []string {
	if c, err := g.github(); err == nil && g.env.Token != "" {
		owner, repo := g.env.Repo()
		ls, err := action.Labels(ctx, c, owner, repo, g.env.PRNumber())
		if err == nil {
			return ls
		}
		g.env.Warning("aiperf-action: " + err.Error() + ": using the labels the event carried")
	}
	return g.env.PRLabels()
}

// marker is the sticky comment's marker.
func (g *gate) marker() string {
	if g.opt.Marker == "" {
		return action.Marker
	}
	return g.opt.Marker
}

func (g *gate) hasComment(ctx context.Context) bool {
	c, err := g.github()
	if err != nil {
		return false
	}
	owner, repo := g.env.Repo()
	found, err := action.FindSticky(ctx, c, owner, repo, g.env.PRNumber(), g.marker(), g.marker() != action.Marker)
	return err == nil && found != nil
}

// PostReport posts the comment for a `mode: run` of a pull request (its
// results folder downloaded as an artifact) from a workflow_run job: the
// comment mode, which needs no config and runs nothing.
//
// In the fork flow everything in the artifact came from a workflow the
// fork controlled. So the comment is drawn afresh from the checked
// comparison.json (ReadArtifact), never from its report.md; and the pull
// request is the one the workflow run was for, found from the run's head
// commit and repository, never from the artifact, whose pr-number and
// head_sha must agree with it.
func PostReport(ctx context.Context, env *action.Env, opt Options) (int, error) {
	opt.defaults()
	if opt.Render == nil {
		return 0, errors.New("gate: no renderer (Options.Render)")
	}
	g := &gate{opt: opt, env: env}
	out := opt.ResultsDir
	art, rep, err := ReadArtifact(filepath.Join(out, ArtifactFile))
	if err != nil {
		return 0, fmt.Errorf("mode comment: %w (download the results artifact of the run first)", err)
	}
	c, err := g.github()
	if err != nil {
		return 0, err
	}
	pr, err := g.findPR(ctx, c, art)
	if err != nil {
		return 0, fmt.Errorf("mode comment: %w", err)
	}
	g.opt.Marker = action.MarkerFor(art.CommentKey) // the run's job's comment
	g.opt.CommentKey = art.CommentKey
	rep.Advisory, rep.AcceptLabel = opt.Advisory, opt.AcceptLabel
	// What the event says of the run, never what its artifact claims.
	wr, _ := env.WorkflowRun()
	rep.Meta.Head, rep.Meta.RunURL = wr.HeadSHA, wr.HTMLURL
	if rep.Verdict == Fail && !rep.Broken() && opt.AcceptLabel != "" {
		owner, repo := env.Repo()
		if labels, err := action.Labels(ctx, c, owner, repo, pr); err == nil && slices.Contains(labels, opt.AcceptLabel) {
			rep.Accepted = "the pull request has the label " + opt.AcceptLabel
		}
	}
	rep.Notes = append(rep.Notes, "Posted from the results of a separate run of this pull request's workflow (the fork flow): the details and charts are in that run's job summary.")
	owner, repo := env.Repo()
	body := opt.Render.Comment(rep, action.MaxComment)
	if opt.Marker != "" { // the renderer's, this comment job's own: the run's instead
		body = strings.Replace(body, opt.Marker, g.marker(), 1)
	}
	url, err := action.StickyComment(ctx, c, owner, repo, pr, body, g.marker())
	if err != nil {
		return 0, err
	}
	env.Output("comment-url", url)
	env.Output("verdict", string(rep.Verdict))
	g.logf("aiperf-action gate: verdict %s posted on #%d: %s", strings.ToUpper(string(rep.Verdict)), pr, url)
	if note := g.checkRun(ctx, rep, wr.HeadSHA, false); note != "" {
		env.Warning(note)
	}
	if rep.Blocks(false) {
		return run.ExitRegression, nil
	}
	return run.ExitOK, nil
}

// findPR is the pull request the workflow run that made the artifact was
// for: one GitHub linked to the run, or (a fork's, which GitHub does not
// link) the open one whose head is the run's branch, repository and
// commit. The artifact's own pr-number and head_sha only have to agree.
func (g *gate) findPR(ctx context.Context, c *github.Client, art *Artifact) (int, error) {
	wr, ok := g.env.WorkflowRun()
	if !ok {
		return 0, errors.New("runs on a workflow_run event (see the README's fork flow): the pull request is found from the run that made the artifact, never taken from the artifact")
	}
	if wr.HeadSHA == "" {
		return 0, errors.New("the workflow_run event names no head commit")
	}
	if art.HeadSHA != "" && art.HeadSHA != wr.HeadSHA {
		return 0, fmt.Errorf("the artifact says it ran commit %.12s, but the workflow run was for %.12s: refused", art.HeadSHA, wr.HeadSHA)
	}
	var found []int
	for _, p := range wr.PRs {
		if p.HeadSHA == wr.HeadSHA {
			found = append(found, p.Number)
		}
	}
	if len(found) == 0 {
		owner, repo := g.env.Repo()
		headOwner, _, _ := strings.Cut(wr.HeadRepo, "/")
		prs, _, err := c.PullRequests.List(ctx, owner, repo, &github.PullRequestListOptions{State: "open", Head: headOwner + ":" + wr.HeadBranch,
			ListOptions: github.ListOptions{PerPage: 100}})
		if err != nil {
			return 0, fmt.Errorf("find the pull request of commit %.12s: %w", wr.HeadSHA, err)
		}
		for _, p := range prs {
			if p.GetHead().GetSHA() == wr.HeadSHA && p.GetHead().GetRepo().GetFullName() == wr.HeadRepo {
				found = append(found, p.GetNumber())
			}
		}
	}
	switch {
	case len(found) == 0:
		return 0, fmt.Errorf("no open pull request has head %s:%s at commit %.12s (closed, or pushed to since?)", wr.HeadRepo, wr.HeadBranch, wr.HeadSHA)
	case len(found) > 1:
		return 0, fmt.Errorf("%d open pull requests have head commit %.12s: not choosing one", len(found), wr.HeadSHA)
	}
	pr := found[0]
	claimed := art.PR
	if b, err := os.ReadFile(filepath.Join(g.opt.ResultsDir, "pr-number")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || (claimed != 0 && n != claimed) {
			return 0, errors.New("pr-number and comparison.json disagree: refused")
		} else {
			claimed = n
		}
	}
	if claimed != 0 && claimed != pr {
		return 0, fmt.Errorf("the artifact names pull request #%d, but the run that made it was for #%d: refused", claimed, pr)
	}
	return pr, nil
}

// chartsDir is where a pull request's comment charts live on the baseline
// branch (its top, beside the baselines' root): one folder a pull request,
// replaced by each run.
func chartsDir(pr int) string { return fmt.Sprintf("aiperf-charts/pr-%d", pr) }

// commentCharts draws each compared scenario's charts as PNG, commits them
// to the baseline branch, and gives the comment their URLs at that commit,
// so GitHub shows them. A token that may not write (a fork's) or any
// other failure leaves the comment without them, with a note in the log.
func (g *gate) commentCharts(ctx context.Context, rep *Report) {
	if !g.env.IsPR() || g.branch == nil || g.env.Token == "" || g.env.Ctx.ServerURL == "" || g.opt.Comment == "never" {
		return
	}
	files := map[string][]byte{}
	type placed struct {
		scenario int
		title    string
		name     string
	}
	var order []placed
	for i := range rep.Scenarios {
		s := &rep.Scenarios[i]
		if s.Compare == nil || s.Broken != "" {
			continue
		}
		pngs, err := g.opt.Render.PNGs(s)
		if err != nil {
			g.logf("aiperf-action gate: %s: charts for the comment not drawn: %v", s.Name, err)
			continue
		}
		for _, p := range pngs {
			name := run.SafeName(s.Name) + "-" + p.Name + ".png"
			files[name] = p.PNG
			order = append(order, placed{i, p.Title, name})
		}
	}
	if len(files) == 0 {
		return
	}
	dir := chartsDir(g.env.PRNumber())
	commit, err := g.branch.PutFiles(ctx, dir, files, fmt.Sprintf("aiperf-action: charts of pull request #%d at %s", g.env.PRNumber(), short(g.env.HeadSHA())))
	if err != nil {
		g.logf("aiperf-action gate: the comment's charts were not committed to %s (%v): the comment goes without them", g.branch, err)
		return
	}
	owner, repo := g.env.Repo()
	base := fmt.Sprintf("%s/%s/%s/blob/%s/", strings.TrimSuffix(g.env.Ctx.ServerURL, "/"), url.PathEscape(owner), url.PathEscape(repo), commit)
	for _, o := range order {
		s := &rep.Scenarios[o.scenario]
		s.Images = append(s.Images, Image{Title: o.title, URL: base + dir + "/" + url.PathEscape(o.name) + "?raw=true"})
	}
}

// short is a commit's first 12 characters.
func short(sha string) string { return sha[:min(12, len(sha))] }
