package gate

// A label added to or taken off a pull request is answered without new
// load: the gate finds the results an earlier run of the same head commit
// uploaded (comparison.json in a workflow run's artifact), rebuilds the
// report from them, reads the labels as they are now, and posts the
// verdict again. Every label change is answered so, not only the accept
// label's: a job that passed on an unrelated label without judging would
// replace the failed job's check on the commit with a green one.

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"time"

	"github.com/google/go-github/v66/github"
)

// Bounds on the search for an earlier run's results.
const (
	rejudgeRuns     = 10       // the newest completed runs of the head commit looked at
	rejudgeZipBytes = 64 << 20 // an artifact larger than this is not downloaded
)

// relabeled reports a pull_request event for a label change.
func (g *gate) relabeled() bool {
	a := g.env.EventAction()
	return g.opt.Mode == "gate" && g.env.IsPR() && (a == "labeled" || a == "unlabeled")
}

// rejudge answers a label change from an earlier run's results; done is
// false when there are none to be found, and the gate then runs in full.
func (g *gate) rejudge(ctx context.Context) (code int, done bool, err error) {
	head := g.env.HeadSHA()
	rep, runID, why := g.findResults(ctx, head)
	if rep == nil {
		g.logf("aiperf-action gate: a label changed, but %s: running the gate in full", why)
		return 0, false, nil
	}
	g.logf("aiperf-action gate: a label changed: re-judging the results of workflow run %d for %.12s, with no new load", runID, head)
	rep.AcceptLabel, rep.FailOnInconclusive = g.opt.AcceptLabel, g.cfg.Thresholds.FailOnInconclusive
	rep.Meta.Head = head
	if u := g.env.RunPage(runID); u != "" {
		rep.Meta.RunURL = u // the run whose artifacts these are
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("Re-judged after a label change, from the results of an earlier run of this commit (workflow run %d): no new load was sent.", runID))
	code, err = g.finish(ctx, rep)
	return code, true, err
}

// findResults is the report of the newest earlier run of head whose
// artifact holds this job's comparison.json: same commit, same comment
// key, same pull request. why says what was missing when there is none.
func (g *gate) findResults(ctx context.Context, head string) (rep *Report, runID int64, why string) {
	if g.env.Token == "" || head == "" {
		return nil, 0, "there is no token to look for an earlier run's results with"
	}
	c, err := g.github()
	if err != nil {
		return nil, 0, err.Error()
	}
	owner, repo := g.env.Repo()
	runs, _, err := c.Actions.ListRepositoryWorkflowRuns(ctx, owner, repo, &github.ListWorkflowRunsOptions{HeadSHA: head, Status: "completed",
		ListOptions: github.ListOptions{PerPage: rejudgeRuns + 1}})
	if err != nil {
		return nil, 0, fmt.Sprintf("the earlier runs could not be listed (%v; the workflow needs `actions: read`)", err)
	}
	looked := 0
	for _, r := range runs.WorkflowRuns {
		if r.GetID() == g.env.Ctx.RunID || looked == rejudgeRuns {
			continue
		}
		looked++
		arts, _, err := c.Actions.ListWorkflowRunArtifacts(ctx, owner, repo, r.GetID(), &github.ListOptions{PerPage: 100})
		if err != nil {
			continue
		}
		for _, a := range arts.Artifacts {
			if a.GetExpired() || a.GetSizeInBytes() > rejudgeZipBytes {
				continue
			}
			art, rep, err := g.artifactReport(ctx, a.GetID())
			if err != nil {
				g.logf("aiperf-action gate: artifact %q of run %d: %v", a.GetName(), r.GetID(), err)
				continue
			}
			if art.HeadSHA == head && art.CommentKey == g.opt.CommentKey && (art.PR == 0 || art.PR == g.env.PRNumber()) {
				return rep, r.GetID(), ""
			}
		}
	}
	return nil, 0, fmt.Sprintf("no artifact of the %d earlier completed run(s) of %.12s holds this job's %s (upload the results folder with actions/upload-artifact, `if: always()`)", looked, head, ArtifactFile)
}

// artifactReport downloads artifact id and reads the comparison.json in
// it, as hostile as the fork flow's.
func (g *gate) artifactReport(ctx context.Context, id int64) (*Artifact, *Report, error) {
	c, _ := g.github()
	owner, repo := g.env.Repo()
	u, _, err := c.Actions.DownloadArtifact(ctx, owner, repo, id, 0)
	if err != nil {
		return nil, nil, err
	}
	// The zip lives on a storage host: asked without the token.
	hc := g.opt.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("download: %s", resp.Status)
	}
	f, err := os.CreateTemp("", "aiperf-artifact-*.zip")
	if err != nil {
		return nil, nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := io.Copy(f, io.LimitReader(resp.Body, rejudgeZipBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if n > rejudgeZipBytes {
		return nil, nil, fmt.Errorf("larger than %d MiB", rejudgeZipBytes>>20)
	}
	zr, err := zip.NewReader(f, n)
	if err != nil {
		return nil, nil, err
	}
	for _, zf := range zr.File {
		// At the folder's top, or one folder down (a matrix's uploads).
		if path.Base(zf.Name) != ArtifactFile || len(bytes.Split([]byte(path.Clean(zf.Name)), []byte("/"))) > 2 {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(io.LimitReader(rc, maxArtifactBytes+1))
		rc.Close()
		if err != nil {
			return nil, nil, err
		}
		return parseArtifact(b, zf.Name)
	}
	return nil, nil, errors.New("no " + ArtifactFile + " in it")
}
