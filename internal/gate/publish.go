package gate

// The gate's output side: report files, job summary, outputs, annotations
// and the PR comment.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/judge"
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
	var comps []*judge.Report
	for _, s := range rep.Scenarios {
		comps = append(comps, s.Compare)
	}
	cj, _ := json.MarshalIndent(map[string]any{"verdict": rep.Verdict, "scenarios": comps}, "", "  ")
	if err := result.WriteFileAtomic(filepath.Join(out, "comparison.json"), append(cj, '\n')); err != nil {
		return 0, err
	}
	if pr := g.env.PRNumber(); pr > 0 {
		result.WriteFileAtomic(filepath.Join(out, "pr-number"), []byte(strconv.Itoa(pr)+"\n"))
	}
	for _, msg := range regressions(rep) {
		if g.env.InActions() {
			g.env.Error(msg)
		} else {
			fmt.Fprintln(g.opt.Stderr, "regression: "+msg)
		}
	}
	commentURL := ""
	if g.opt.Mode == "gate" {
		url, note := g.postComment(ctx, rep)
		commentURL = url
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
		g.env.Output("comment-url", commentURL)
		g.env.Output("summary-markdown", full)
	} else {
		fmt.Fprintln(g.opt.Stdout, "\n---- the report (the PR comment it would post) ----")
		fmt.Fprint(g.opt.Stdout, g.opt.Render.Comment(rep, action.MaxComment))
	}
	g.logf("aiperf-action gate: verdict %s; report %s", strings.ToUpper(string(rep.Verdict)), reportPath)
	switch {
	case rep.Verdict == Fail:
		return run.ExitRegression, nil
	case rep.Verdict == Inconclusive && g.cfg.Thresholds.FailOnInconclusive:
		return run.ExitRegression, nil
	}
	return run.ExitOK, nil
}

// regressions is one sentence per failed statistic, for the annotations.
func regressions(rep *Report) []string {
	var out []string
	for _, s := range rep.Scenarios {
		if s.Compare == nil {
			continue
		}
		for _, r := range s.Compare.Results {
			if r.Verdict != compare.Fail {
				continue
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
	url, err = action.StickyComment(ctx, c, owner, repo, g.env.PRNumber(), g.opt.Render.Comment(rep, action.MaxComment))
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

func (g *gate) hasComment(ctx context.Context) bool {
	c, err := g.github()
	if err != nil {
		return false
	}
	owner, repo := g.env.Repo()
	found, err := action.FindSticky(ctx, c, owner, repo, g.env.PRNumber())
	return err == nil && found != nil
}

// PostReport posts a report written by an earlier `mode: run` (downloaded
// as an artifact into the results folder) from a workflow_run job: the
// comment mode, which needs no config and runs nothing.
func PostReport(ctx context.Context, env *action.Env, opt Options) (int, error) {
	opt.defaults()
	g := &gate{opt: opt, env: env}
	out := opt.ResultsDir
	body, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		return 0, fmt.Errorf("mode comment: %w (download the results artifact of the run first)", err)
	}
	nb, err := os.ReadFile(filepath.Join(out, "pr-number"))
	if err != nil {
		return 0, fmt.Errorf("mode comment: %w", err)
	}
	pr, err := strconv.Atoi(strings.TrimSpace(string(nb)))
	if err != nil || pr <= 0 {
		return 0, fmt.Errorf("mode comment: %s holds no PR number", filepath.Join(out, "pr-number"))
	}
	text := string(body)
	if len(text) > action.MaxComment {
		text = text[:action.MaxComment-200] + "\n\n_Truncated: see the job summary of the run._\n"
	}
	c, err := g.github()
	if err != nil {
		return 0, err
	}
	owner, repo := env.Repo()
	url, err := action.StickyComment(ctx, c, owner, repo, pr, text)
	if err != nil {
		return 0, err
	}
	env.Output("comment-url", url)
	g.logf("aiperf-action gate: comment %s", url)
	return run.ExitOK, nil
}
