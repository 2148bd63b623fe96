package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/baseline"
	"github.com/aiperf-action/aiperf-action/internal/gputelemetry"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/testbed"
)

// judgeConfig is the config's thresholds (judge.Default where it has
// none).
func (g *gate) judgeConfig() judge.Config { return g.cfg.Thresholds.Config }

// comparer is what comparing a scenario needs: the settings, the store
// and the PR's merge-base.
type comparer struct {
	st        *judge.Settings
	store     baseline.Store
	mergeBase string
}

// comparer parses the thresholds and finds the merge-base, before any run.
func (g *gate) comparer(ctx context.Context, store baseline.Store) (*comparer, []string, error) {
	jc := g.judgeConfig()
	st, err := jc.Parse()
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: thresholds: %w", g.opt.ConfigPath, err)
	}
	c := &comparer{st: st, store: store}
	var notes []string
	if g.env.IsPR() && g.env.Token != "" {
		if gh, err := g.github(); err == nil {
			owner, repo := g.env.Repo()
			mb, err := action.MergeBase(ctx, gh, owner, repo, g.env.BaseSHA(), g.env.HeadSHA())
			if err != nil {
				// The API's own words go to the log; the comment says what it means.
				g.env.Warning("aiperf-action: " + err.Error())
				notes = append(notes, "The merge-base of this pull request could not be found (the error is in the job's log), so it is compared with the newest baselines on the default branch, not those as of where it branched.")
			}
			c.mergeBase = mb
		}
	}
	return c, notes, nil
}

// compareScenario compares sc's runs so far at the look's levels: with the
// baseline server's runs (paired), or with the stored baselines, read once.
func (g *gate) compareScenario(ctx context.Context, c *comparer, sc *Scenario, look compare.Look) error {
	st := *c.st
	st.Options.Alpha, st.Options.PassAlpha = look.Alpha, look.PassAlpha
	var base, cand []result.Loaded
	for i, r := range sc.Candidate {
		cand = append(cand, result.Loaded{Path: fmt.Sprintf("run-%d", i+1), Run: r})
	}
	if sc.Paired {
		for i := range sc.Candidate {
			base = append(base, result.Loaded{Path: fmt.Sprintf("baseline-%d", i+1), Run: sc.Baseline[i]})
		}
		st.Paired = true
	} else {
		if !sc.loaded {
			if err := g.loadBaselines(ctx, c, sc); err != nil {
				return err
			}
		}
		if len(sc.Baseline) == 0 {
			return nil // no baseline yet
		}
		for i, r := range sc.Baseline {
			base = append(base, result.Loaded{Path: sc.baselineNames[i], Run: r})
		}
	}
	if sc.acrossUpgrade { // another hash of the same plan, as the config allows
		st.AllowMismatch = true
	}
	cr, err := judge.CompareWithHistory(&st, base, cand, sc.history)
	if err != nil {
		return fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	sc.Compare = cr
	sc.EnvChanged, sc.EnvHardware = envChanges(sc)
	return nil
}

// envChanges says what differs between the arms' machines: unpaired,
// the candidate's against the newest stored run's fingerprint and GPUs;
// paired, each pair's GPUs as their DCGM exporters saw them (a baseline
// server on other GPUs, or at another clock, is another environment).
func envChanges(sc *Scenario) (string, bool) {
	var changes []string
	seen := map[string]bool{}
	hw := false
	add := func(chs []testbed.Change) {
		for _, ch := range chs {
			if s := ch.String(); !seen[s] {
				seen[s] = true
				changes = append(changes, s)
				hw = hw || ch.Hardware()
			}
		}
	}
	if !sc.Paired {
		base := sc.Baseline[len(sc.Baseline)-1]
		add(testbed.Diff(base.Environment, sc.Candidate[0].Environment))
		add(gputelemetry.Diff(base.GPUTelemetry, sc.Candidate[0].GPUTelemetry))
	} else {
		for i := range min(len(sc.Baseline), len(sc.Candidate)) {
			add(gputelemetry.Diff(sc.Baseline[i].GPUTelemetry, sc.Candidate[i].GPUTelemetry))
		}
	}
	return strings.Join(changes, "; "), hw
}

// loadBaselines reads sc's stored baseline runs (as of the merge-base
// where there are some).
func (g *gate) loadBaselines(ctx context.Context, c *comparer, sc *Scenario) error {
	sc.loaded = true
	hash := sc.Candidate[0].ProfileHash
	es, err := c.store.List(ctx, sc.Name, g.key(hash))
	if err != nil {
		return fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	legacy := false
	if len(es) == 0 && g.key(hash) != hash {
		// Runs stored before baselines were kept apart by testbed: used
		// while this testbed has none of its own, when they were measured
		// on this testbed or said nothing of it.
		if es, err = c.store.List(ctx, sc.Name, hash); err != nil {
			return fmt.Errorf("scenario %q: %w", sc.Name, err)
		}
		legacy = len(es) > 0
	}
	source, err := g.readRuns(ctx, c, sc, es, legacy)
	if err != nil {
		return err
	}
	if err := g.readHistory(ctx, c, sc, es, legacy); err != nil {
		return err
	}
	across := ""
	if len(sc.Baseline) == 0 {
		// Runs under another hash of the same plan (a tool upgrade that
		// hashes profiles otherwise), when the config says to use them.
		up := g.upgraded(ctx, c, sc)
		if up.same && g.cfg.Baseline.AcrossUpgrades {
			if source, err = g.readRuns(ctx, c, sc, up.entries, false); err != nil {
				return err
			}
			sc.acrossUpgrade = true
			across = fmt.Sprintf(", under profile %s, recorded by aiperf-action %s: another hash of the same plan (baseline: across-upgrades)", up.folder, up.version)
		} else if up.folder != "" {
			across = up.says()
		}
	}
	if len(sc.Baseline) == 0 {
		if why := g.otherTestbeds(ctx, c, sc.Name, hash); why != "" {
			sc.ProfileChanged, sc.OtherTestbeds = why, true
			g.env.Warning(why)
			g.logf("aiperf-action gate: %s", why)
			return nil
		}
		// Runs of this scenario under other profiles: its flags, model or
		// seed changed, which no comparison can span. Said loudly, not left
		// as a quiet no-baseline pass.
		if others, err := c.store.Profiles(ctx, sc.Name); err == nil && len(others) > 0 {
			sc.ProfileChanged = fmt.Sprintf("the load profile of %s changed (profile_hash %.23s): %s has runs of it only under other profiles (%s), so it is not compared until the default branch has runs of this one. Its flags, the model or the seed changed it.",
				sc.Name, sc.Candidate[0].ProfileHash, c.store.String(), strings.Join(others, ", "))
			if across != "" {
				sc.ProfileChanged = fmt.Sprintf("the load profile of %s changed (profile_hash %.23s): %s has runs of it only under other profiles (%s), so it is not compared until the default branch has runs of this one. %s",
					sc.Name, sc.Candidate[0].ProfileHash, c.store.String(), strings.Join(others, ", "), across)
			}
			g.env.Warning(sc.ProfileChanged)
			g.logf("aiperf-action gate: %s", sc.ProfileChanged)
		}
		return nil
	}
	sc.BaselineSource = source + " in " + c.store.String() + across
	if legacy {
		sc.BaselineSource += ", recorded before baselines were kept apart by testbed (the next refresh starts testbed " + g.fp.Testbed + "'s own)"
	} else if g.fp != nil {
		sc.BaselineSource += ", testbed " + g.fp.Testbed
	}
	// Where main's history shows a step, only the runs since describe it.
	var loaded []result.Loaded
	for i, r := range sc.Baseline {
		loaded = append(loaded, result.Loaded{Path: sc.baselineNames[i], Run: r})
	}
	shift, err := judge.LastShift(c.st, loaded)
	if err != nil {
		return fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	if shift != nil {
		at := sc.BaselineCommits[shift.Run]
		why := ""
		if a := sc.Baseline[shift.Run].Accepted; a != "" {
			why = ", an accepted regression: " + a
		}
		sc.BaselineSource += fmt.Sprintf(", since main changed at commit %s (%s %+.1f%%, p = %.2g%s; %d older run(s) left out)",
			at, shift.Stat, 100*shift.Change, shift.P, why, shift.Run)
		sc.Baseline, sc.baselineNames, sc.BaselineCommits = sc.Baseline[shift.Run:], sc.baselineNames[shift.Run:], sc.BaselineCommits[shift.Run:]
		g.logf("aiperf-action gate: %s: the baseline history steps at commit %s (%s %+.1f%%): comparing with the %d run(s) since", sc.Name, at, shift.Stat, 100*shift.Change, len(sc.Baseline))
	}
	return nil
}

// otherTestbeds says why a profile with no runs on this testbed is not
// compared, when it has runs on others: baselines never mix testbeds.
func (g *gate) otherTestbeds(ctx context.Context, c *comparer, scenario, hash string) string {
	if g.fp == nil {
		return ""
	}
	folders, err := c.store.Profiles(ctx, scenario)
	if err != nil {
		return ""
	}
	mine := path.Base(baseline.Dir("", scenario, hash))
	var beds []string
	for _, f := range folders {
		if bed, ok := strings.CutPrefix(f, mine+"."); ok && bed != g.fp.Testbed {
			beds = append(beds, bed)
		}
	}
	if len(beds) == 0 {
		return ""
	}
	return fmt.Sprintf("%s has runs of this profile of %s only on other testbeds (%s), and this job runs on testbed %s: runs are compared only within one testbed (a GPU, driver or runner change starts its own baselines; `testbed:` in the config names one explicitly).",
		c.store.String(), scenario, strings.Join(beds, ", "), g.fp.Testbed)
}

// readRuns reads the entries es selects (as of the merge-base where there
// are some) into sc's baseline; legacy entries (from before testbeds) of
// another testbed are left out. It returns which runs were selected.
func (g *gate) readRuns(ctx context.Context, c *comparer, sc *Scenario, es []baseline.Entry, legacy bool) (string, error) {
	sel, source := baseline.Select(es, c.mergeBase, g.cfg.Baseline.Keep)
	for _, e := range sel {
		b, err := e.Load(ctx)
		if err != nil {
			return "", fmt.Errorf("scenario %q: read baseline %s: %w", sc.Name, e.Name, err)
		}
		r, err := result.Parse(b, c.store.String()+": "+e.Name)
		if err != nil {
			return "", err
		}
		if r.Job == "" { // recorded before runs said their job: one refresh is one job
			r.Job = "refresh " + e.Refresh
		}
		if legacy && r.Environment != nil && r.Environment.Testbed != g.fp.Testbed {
			continue // another testbed's, from before the split
		}
		sc.Baseline = append(sc.Baseline, r)
		sc.baselineNames = append(sc.baselineNames, e.Name)
		sc.BaselineCommits = append(sc.BaselineCommits, e.Commit)
	}
	return source, nil
}

// readHistory reads the newest baseline.history entries of es (all of
// them up to that, wherever the merge-base is: the noise is the testbed's,
// not the commit's) into sc's history, those readRuns read among them, and
// keeps the runs since the last step the history shows (a step between
// jobs is not their noise). Fewer jobs than the baseline's own: none.
func (g *gate) readHistory(ctx context.Context, c *comparer, sc *Scenario, es []baseline.Entry, legacy bool) error {
	n := g.cfg.Baseline.History
	if n <= len(sc.Baseline) || len(es) <= len(sc.Baseline) {
		return nil
	}
	have := map[string]*result.Run{}
	for i, name := range sc.baselineNames {
		have[name] = sc.Baseline[i]
	}
	var hist []result.Loaded
	for _, e := range es[max(0, len(es)-n):] {
		r, ok := have[e.Name]
		if !ok {
			b, err := e.Load(ctx)
			if err != nil {
				return fmt.Errorf("scenario %q: read baseline %s: %w", sc.Name, e.Name, err)
			}
			if r, err = result.Parse(b, c.store.String()+": "+e.Name); err != nil {
				return err
			}
			if r.Job == "" {
				r.Job = "refresh " + e.Refresh
			}
			if legacy && r.Environment != nil && r.Environment.Testbed != g.fp.Testbed {
				continue
			}
		}
		hist = append(hist, result.Loaded{Path: e.Name, Run: r})
	}
	shift, err := judge.LastShift(c.st, hist)
	if err != nil {
		return fmt.Errorf("scenario %q: history: %w", sc.Name, err)
	}
	if shift != nil {
		hist = hist[shift.Run:]
	}
	if len(hist) > len(sc.Baseline) {
		sc.history = hist
	}
	return nil
}

// upgrade is what the newest run under another profile of this scenario,
// on this testbed, says: the tool that recorded it, and whether its plan
// is this run's in substance (load, model, endpoint, seed).
type upgrade struct {
	folder, version string
	same            bool
	entries         []baseline.Entry
}

// says is the sentence the comment gets about it.
func (u upgrade) says() string {
	s := ""
	if u.version != run.Version {
		s = fmt.Sprintf("Those runs were recorded by aiperf-action %s and this is %s: the upgrade changed how the profile is hashed.", u.version, run.Version)
	}
	if u.same {
		s += fmt.Sprintf(" The runs under %s have this run's load, model, endpoint and seed: `baseline: {across-upgrades: true}` in the config keeps comparing with them.", u.folder)
	}
	return strings.TrimSpace(s)
}

// upgraded looks at the newest run of each other profile folder of sc on
// this testbed (or from before testbeds) for one with the same plan in
// substance; the first such, else the newest folder's.
func (g *gate) upgraded(ctx context.Context, c *comparer, sc *Scenario) upgrade {
	folders, err := c.store.Profiles(ctx, sc.Name)
	if err != nil {
		return upgrade{}
	}
	cand := sc.Candidate[0]
	var found upgrade
	for i, f := range folders {
		if i == 8 {
			break // bounded: a scenario's profiles, not its history
		}
		h16, bed, _ := strings.Cut(f, ".")
		if g.fp != nil && bed != "" && bed != g.fp.Testbed {
			continue
		}
		es, err := c.store.List(ctx, sc.Name, baseline.Key(h16, bed))
		if err != nil || len(es) == 0 {
			continue
		}
		b, err := es[len(es)-1].Load(ctx)
		if err != nil {
			continue
		}
		r, err := result.Parse(b, f)
		if err != nil || r.ProfileHash == cand.ProfileHash {
			continue
		}
		u := upgrade{folder: f, version: r.Tool.Version, same: samePlan(r, cand), entries: es}
		if u.same {
			return u
		}
		if found.folder == "" {
			found = u
		}
	}
	return found
}

// samePlan reports whether two runs had the same plan in substance: the
// same load, model, endpoint, streaming and seed.
func samePlan(a, b *result.Run) bool {
	la, _ := json.Marshal(a.Load)
	lb, _ := json.Marshal(b.Load)
	return bytes.Equal(la, lb) && a.Seed == b.Seed && a.Target.Model == b.Target.Model &&
		a.Target.EndpointType == b.Target.EndpointType && a.Target.Streaming == b.Target.Streaming
}
