package cli

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
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// finish writes the report, the summary, outputs and annotations, posts the
// comment, and picks the exit code.
func (g *gate) finish(ctx context.Context, mode string, rep *report.GateReport) (int, error) {
	if err := os.MkdirAll(g.out, 0o755); err != nil {
		return 0, err
	}
	full := report.GateMarkdown(rep, action.Marker, true)
	reportPath := filepath.Join(g.out, "report.md")
	if err := result.WriteFileAtomic(reportPath, []byte(full)); err != nil {
		return 0, err
	}
	var comps []*report.CompareReport
	for _, s := range rep.Scenarios {
		comps = append(comps, s.Compare)
	}
	cj, _ := json.MarshalIndent(map[string]any{"verdict": rep.Verdict, "scenarios": comps}, "", "  ")
	if err := result.WriteFileAtomic(filepath.Join(g.out, "comparison.json"), append(cj, '\n')); err != nil {
		return 0, err
	}
	if pr := g.env.PRNumber(); pr > 0 {
		result.WriteFileAtomic(filepath.Join(g.out, "pr-number"), []byte(strconv.Itoa(pr)+"\n"))
	}
	for _, s := range rep.Scenarios {
		if s.Compare == nil {
			continue
		}
		for _, r := range s.Compare.Results {
			if r.Verdict == compare.Fail {
				msg := fmt.Sprintf("%s: %s regressed: %+.1f%% (interval %+.1f%% to %+.1f%%, tolerance %.1f%%)", s.Name, r.Name(), 100*r.Change, 100*r.Lo, 100*r.Hi, 100*r.Tolerance)
				if r.Metric == "error_rate" {
					msg = fmt.Sprintf("%s: error rate %.2f%% is above %.2f%%", s.Name, 100*r.Candidate, 100*r.Tolerance)
				}
				if g.env.InActions() {
					g.env.A.Errorf("%s", msg)
				} else {
					fmt.Fprintln(g.opt.Stderr, "regression: "+msg)
				}
			}
		}
	}
	commentURL := ""
	if mode == "gate" {
		url, note := g.postComment(ctx, rep)
		commentURL = url
		if note != "" {
			rep.Notes = append(rep.Notes, note)
			full = report.GateMarkdown(rep, action.Marker, true)
			result.WriteFileAtomic(reportPath, []byte(full))
		}
	}
	if g.env.InActions() {
		g.env.A.AddStepSummary(full)
		g.env.A.SetOutput("verdict", rep.Verdict)
		g.env.A.SetOutput("report-path", reportPath)
		g.env.A.SetOutput("comment-url", commentURL)
		g.env.A.SetOutput("summary-markdown", full)
	} else {
		fmt.Fprintln(g.opt.Stdout, "\n---- the report (the PR comment it would post) ----")
		fmt.Fprint(g.opt.Stdout, report.CommentMarkdown(rep, action.Marker, action.MaxComment))
	}
	g.logf("aiperf-action gate: verdict %s; report %s", strings.ToUpper(rep.Verdict), reportPath)
	switch {
	case rep.Verdict == string(compare.Fail):
		return ExitRegression, nil
	case rep.Verdict == string(compare.Inconclusive) && g.cfg.Thresholds.FailOnInconclusive:
		return ExitRegression, nil
	}
	return ExitOK, nil
}

// postComment posts or updates the sticky comment on a PR. A token that
// may not write (a fork PR) does not fail the gate: it leaves a note on
// how to split the work.
func (g *gate) postComment(ctx context.Context, rep *report.GateReport) (url, note string) {
	if !g.env.IsPR() || g.input("comment") == "never" {
		return "", ""
	}
	if g.input("comment") == "on-change" && rep.Verdict == string(compare.Pass) && !g.hasComment(ctx) {
		return "", ""
	}
	c, err := g.github()
	if err != nil || g.env.Token == "" {
		return "", "No PR comment: no github-token."
	}
	owner, repo := g.env.Repo()
	url, err = action.StickyComment(ctx, c, owner, repo, g.env.PRNumber(), report.CommentMarkdown(rep, action.Marker, action.MaxComment))
	if errors.Is(err, action.ErrForbidden) {
		msg := "Could not comment on the pull request: the token is read-only (a pull request from a fork?). " +
			"Run the gate with `mode: run` and upload the results folder as an artifact, then post it from a `workflow_run` workflow with `mode: comment` (see the README)."
		g.env.A.Warningf("%s", msg)
		return "", msg
	}
	if err != nil {
		g.env.A.Warningf("aiperf-action: %v", err)
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

// commentFromResults posts a report written by an earlier `mode: run`
// (downloaded as an artifact into results-dir) from a workflow_run job.
func (g *gate) commentFromResults(ctx context.Context) (int, error) {
	body, err := os.ReadFile(filepath.Join(g.out, "report.md"))
	if err != nil {
		return 0, fmt.Errorf("mode comment: %w (download the results artifact of the run first)", err)
	}
	nb, err := os.ReadFile(filepath.Join(g.out, "pr-number"))
	if err != nil {
		return 0, fmt.Errorf("mode comment: %w", err)
	}
	pr, err := strconv.Atoi(strings.TrimSpace(string(nb)))
	if err != nil || pr <= 0 {
		return 0, fmt.Errorf("mode comment: %s holds no PR number", filepath.Join(g.out, "pr-number"))
	}
	text := string(body)
	if len(text) > action.MaxComment {
		text = text[:action.MaxComment-200] + "\n\n_Truncated: see the job summary of the run._\n"
	}
	c, err := g.github()
	if err != nil {
		return 0, err
	}
	owner, repo := g.env.Repo()
	url, err := action.StickyComment(ctx, c, owner, repo, pr, text)
	if err != nil {
		return 0, err
	}
	g.env.A.SetOutput("comment-url", url)
	g.logf("aiperf-action gate: comment %s", url)
	return ExitOK, nil
}
