package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/aiperf-action/aiperf-action/internal/baseline"
)

// The default branch's refresh of the baselines, and the mark an
// accepted regression leaves on the runs it stores.

// refresh appends this run's results to the baselines, as run.json was
// written.
func (g *gate) refresh(ctx context.Context, store baseline.Store, scenarios []Scenario) error {
	accepted := g.acceptedMerge(ctx)
	for _, sc := range scenarios {
		if sc.Broken != "" {
			g.logf("aiperf-action gate: %s: nothing stored in the baselines: %s", sc.Name, sc.Broken)
			continue
		}
		if sc.CacheMismatch != "" && !sc.CacheHotBaseline {
			g.logf("aiperf-action gate: %s: nothing stored in the baselines: its runs were served from the server's prefix cache: %s", sc.Name, sc.CacheMismatch)
			continue
		}
		runs := sc.candidateJSON
		if accepted != "" {
			runs = make([][]byte, len(sc.candidateJSON))
			for i, b := range sc.candidateJSON {
				runs[i] = markAccepted(b, accepted)
			}
			g.logf("aiperf-action gate: %s: the runs stored record an accepted regression (%s)", sc.Name, accepted)
		}
		if err := store.Append(ctx, sc.Name, g.key(sc.StoreHash()), g.commit(), runs, g.cfg.Baseline.Retain()); err != nil {
			return fmt.Errorf("refresh baselines of %q: %w", sc.Name, err)
		}
		g.logf("aiperf-action gate: recorded %d run(s) of %s in the baselines (%s, testbed %s, keeping %d)", len(sc.candidateJSON), sc.Name, store, g.fp.Testbed, g.cfg.Baseline.Retain())
	}
	return nil
}

// acceptedMerge says, on a push to the default branch, that the pull
// request merged as this commit carried the accept label: its regression
// was accepted, and the refreshed runs record it. "" otherwise, or when
// the API can't say.
func (g *gate) acceptedMerge(ctx context.Context) string {
	if !g.env.IsPushToDefault() || g.opt.AcceptLabel == "" || g.env.Token == "" || g.env.Ctx.SHA == "" {
		return ""
	}
	c, err := g.github()
	if err != nil {
		return ""
	}
	owner, repo := g.env.Repo()
	prs, _, err := c.PullRequests.ListPullRequestsWithCommit(ctx, owner, repo, g.env.Ctx.SHA, nil)
	if err != nil {
		return ""
	}
	for _, pr := range prs {
		for _, l := range pr.Labels {
			if l.GetName() == g.opt.AcceptLabel {
				return fmt.Sprintf("#%d, labelled %s", pr.GetNumber(), g.opt.AcceptLabel)
			}
		}
	}
	return ""
}

// markAccepted is run.json b with "accepted" set, its other bytes as they
// were written.
func markAccepted(b []byte, why string) []byte {
	q, _ := json.Marshal(why)
	i := bytes.IndexByte(b, '{')
	if i < 0 {
		return b
	}
	out := append([]byte{}, b[:i+1]...)
	out = append(out, "\n  \"accepted\": "...)
	out = append(out, q...)
	out = append(out, ',')
	return append(out, b[i+1:]...)
}
