package gate

// comparison.json: what `mode: run` leaves for `mode: comment`. In the
// fork flow it comes from a workflow the fork controls, so it is read as
// hostile: bounded in size, every field checked, every verdict worked out
// again from the results, and the comment drawn from it by the same
// renderer (which escapes every string); nothing in it is run or posted
// as it is.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strings"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
)

// ArtifactSchema names comparison.json's format.
const ArtifactSchema = "aiperf-action/comparison/v1"

// ArtifactFile is comparison.json's name in the results folder.
const ArtifactFile = "comparison.json"

// Limits on a comparison.json read for a comment.
const (
	maxArtifactBytes = 4 << 20
	maxScenarios     = 64
	maxResults       = 64
	maxWarnings      = 16
	maxText          = 400
)

// Artifact is comparison.json.
type Artifact struct {
	Schema  string  `json:"schema"`
	Verdict Verdict `json:"verdict"`
	PR      int     `json:"pr,omitempty"`       // the pull request the runs were for
	HeadSHA string  `json:"head_sha,omitempty"` // the commit they ran
	// CommentKey is the run's comment key, so that the comment job, a job
	// of another workflow, edits the comment of the job that ran.
	CommentKey string             `json:"comment_key,omitempty"`
	Meta       Meta               `json:"meta"`
	Scenarios  []ArtifactScenario `json:"scenarios"`
}

// ArtifactScenario is one scenario's outcome in comparison.json.
type ArtifactScenario struct {
	Name           string        `json:"name"`
	Verdict        Verdict       `json:"verdict"`
	BaselineSource string        `json:"baseline_source,omitempty"`
	BaselineRuns   int           `json:"baseline_runs"`
	CandidateRuns  int           `json:"candidate_runs"`
	Paired         bool          `json:"paired,omitempty"`
	ProfileChanged string        `json:"profile_changed,omitempty"`
	Broken         string        `json:"broken,omitempty"`             // why its runs are no measurement (it fails)
	OtherTestbeds  bool          `json:"other_testbeds,omitempty"`     // profile_changed's reason: runs on other testbeds only
	EnvChanged     string        `json:"env_changed,omitempty"`        // what differs from the baseline's machine and stack
	EnvHardware    bool          `json:"env_hardware,omitempty"`       // and that the machine or its drivers did
	CacheMismatch  string        `json:"cache_mismatch,omitempty"`     // why its runs' prefix-cache hits are not the baseline's (it reads INCONCLUSIVE)
	CacheHotBase   bool          `json:"cache_hot_baseline,omitempty"` // and that the baseline's were the cached ones
	Comparison     *judge.Report `json:"comparison,omitempty"`         // nil: no baseline yet
	Capacity       *Capacity     `json:"capacity,omitempty"`           // a search scenario's capacities
}

// NewArtifact is rep as comparison.json holds it.
func NewArtifact(rep *Report, pr int, headSHA, commentKey string) *Artifact {
	a := &Artifact{Schema: ArtifactSchema, Verdict: rep.Verdict, PR: pr, HeadSHA: headSHA, CommentKey: commentKey, Meta: rep.Meta}
	for _, s := range rep.Scenarios {
		a.Scenarios = append(a.Scenarios, ArtifactScenario{Name: s.Name, Verdict: s.Verdict(), BaselineSource: s.BaselineSource,
			BaselineRuns: s.BaselineCount(), CandidateRuns: s.CandidateCount(), Paired: s.Paired, ProfileChanged: s.ProfileChanged, Broken: s.Broken,
			OtherTestbeds: s.OtherTestbeds, EnvChanged: s.EnvChanged, EnvHardware: s.EnvHardware,
			CacheMismatch: s.CacheMismatch, CacheHotBase: s.CacheHotBaseline, Comparison: s.Compare, Capacity: s.Capacity})
	}
	return a
}

var (
	statName   = regexp.MustCompile(`^(p[0-9]{1,4}|value|)$`)
	shaLike    = regexp.MustCompile(`^[0-9A-Za-z]{0,64}$`)
	commentKey = regexp.MustCompile(`^[A-Za-z0-9._/=,:-]{0,200}$`)
	runURL     = regexp.MustCompile(`^https?://[A-Za-z0-9./:_~%-]+/actions/runs/[0-9]+(/attempts/[0-9]+)?$`)
)

// ReadArtifact reads and checks a comparison.json, and rebuilds the
// report from it with every verdict worked out again. Its errors name the
// file and the field.
func ReadArtifact(path string) (*Artifact, *Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxArtifactBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return parseArtifact(b, path)
}

// parseArtifact is ReadArtifact on a comparison.json's bytes, named in
// errors as name.
func parseArtifact(b []byte, path string) (*Artifact, *Report, error) {
	if len(b) > maxArtifactBytes {
		return nil, nil, fmt.Errorf("%s: larger than %d MiB: not a comparison this gate wrote", path, maxArtifactBytes>>20)
	}
	var a Artifact
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	rep, err := a.report()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return &a, rep, nil
}

// report checks a and rebuilds the report it describes.
func (a *Artifact) report() (*Report, error) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if a.Schema != ArtifactSchema {
		return nil, fmt.Errorf("schema %q: want %q", a.Schema, ArtifactSchema)
	}
	if a.PR < 0 {
		bad("pr %d: negative", a.PR)
	}
	if !shaLike.MatchString(a.HeadSHA) {
		bad("head_sha: not a commit")
	}
	if !commentKey.MatchString(a.CommentKey) {
		bad("comment_key: not a comment key")
	}
	m := &a.Meta
	for name, s := range map[string]*string{"model": &m.Model, "server": &m.Server, "runner": &m.Runner, "commit": &m.Commit, "event": &m.Event, "store": &m.Store,
		"testbed": &m.Testbed, "environment": &m.Environment} {
		if len(*s) > maxText {
			bad("meta.%s: longer than %d bytes", name, maxText)
		}
	}
	if !shaLike.MatchString(m.Head) || !shaLike.MatchString(m.Base) {
		bad("meta.head or meta.base: not a commit")
	}
	if m.RunURL != "" && (!runURL.MatchString(m.RunURL) || len(m.RunURL) > maxText) {
		bad("meta.run_url: not a workflow run's address")
	}
	if m.Repeats < 0 || m.Repeats > 10000 {
		bad("meta.repeats %d: out of range", m.Repeats)
	}
	if n := len(a.Scenarios); n == 0 || n > maxScenarios {
		bad("scenarios: %d, want 1 to %d", n, maxScenarios)
	}
	rep := &Report{Meta: a.Meta}
	names := map[string]bool{}
	for i, as := range a.Scenarios {
		at := fmt.Sprintf("scenarios[%d]", i)
		if err := config.CheckScenarioName(as.Name); err != nil || len(as.Name) > 100 {
			bad("%s.name: not a scenario name", at)
		}
		if names[as.Name] {
			bad("%s.name %q: twice", at, as.Name)
		}
		names[as.Name] = true
		if len(as.BaselineSource) > maxText {
			bad("%s.baseline_source: longer than %d bytes", at, maxText)
		}
		if len(as.ProfileChanged) > 4*maxText {
			bad("%s.profile_changed: longer than %d bytes", at, 4*maxText)
		}
		if len(as.Broken) > 4*maxText || len(as.EnvChanged) > 4*maxText || len(as.CacheMismatch) > 4*maxText {
			bad("%s.broken, env_changed or cache_mismatch: longer than %d bytes", at, 4*maxText)
		}
		if as.BaselineRuns < 0 || as.CandidateRuns < 0 || as.BaselineRuns > 100000 || as.CandidateRuns > 10000 {
			bad("%s: run counts out of range", at)
		}
		s := Scenario{Name: as.Name, BaselineSource: as.BaselineSource, Paired: as.Paired, ProfileChanged: as.ProfileChanged, Broken: as.Broken, OtherTestbeds: as.OtherTestbeds, EnvChanged: as.EnvChanged, EnvHardware: as.EnvHardware,
			CacheMismatch: as.CacheMismatch, CacheHotBaseline: as.CacheHotBase, baselineN: as.BaselineRuns, candidateN: as.CandidateRuns}
		if as.Capacity != nil {
			checkCapacity(as.Capacity, at+".capacity", bad)
			s.Capacity = as.Capacity
		}
		if c := as.Comparison; c != nil {
			checkComparison(c, at+".comparison", bad)
			if c.Comparison != nil {
				c.Comparison.Verdict = compare.Overall(c.Comparison.Results)
			}
			// Paths of runs on the machine that made them: not shown.
			c.BaselineRuns, c.CandidateRuns = nil, nil
			s.Compare = c
		}
		rep.Scenarios = append(rep.Scenarios, s)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	rep.Verdict = Fold(rep.Scenarios)
	return rep, nil
}

// checkComparison checks one scenario's comparison: known metrics and
// statistics, the verdicts compare gives, finite numbers, units that are
// the metric's, and bounded text.
func checkComparison(c *judge.Report, at string, bad func(string, ...any)) {
	if c.Comparison == nil || len(c.Results) == 0 || len(c.Results) > maxResults {
		bad("%s.results: want 1 to %d", at, maxResults)
		return
	}
	if len(c.Units) != len(c.Results) {
		bad("%s.units: %d for %d results", at, len(c.Units), len(c.Results))
		return
	}
	if len(c.ProfileHash) > 100 {
		bad("%s.profile_hash: too long", at)
	}
	c.Comparison.Warnings = boundText(c.Comparison.Warnings, at+".warnings", bad)
	for j := range c.Results {
		r := &c.Results[j]
		rat := fmt.Sprintf("%s.results[%d]", at, j)
		f, known := metrics.Lookup(r.Metric)
		switch {
		case r.Metric == "error_rate":
			if c.Units[j] != "%" {
				bad("%s: unit %q", rat, c.Units[j])
			}
		case r.Metric == capacity.Metric:
			if c.Units[j] != "streams" && c.Units[j] != "requests/s" {
				bad("%s: unit %q", rat, c.Units[j])
			}
		case !known:
			bad("%s.metric %q: not a metric", rat, r.Metric)
		case c.Units[j] != f.Unit:
			bad("%s: unit %q, want %q", rat, c.Units[j], f.Unit)
		}
		if !statName.MatchString(r.Stat) {
			bad("%s.stat %q: not a statistic", rat, r.Stat)
		}
		switch r.Verdict {
		case compare.Pass, compare.Fail, compare.Inconclusive, compare.NotGated:
		default:
			bad("%s.verdict %q", rat, r.Verdict)
		}
		for name, v := range map[string]float64{"baseline": r.Baseline, "candidate": r.Candidate, "change": r.Change, "lo": r.Lo, "hi": r.Hi,
			"p": r.P, "mde": r.MDE, "tolerance": r.Tolerance, "job_noise": r.JobNoise, "run_noise": r.RunNoise, "need_tolerance": r.NeedTolerance} {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e12 {
				bad("%s.%s: not a finite number", rat, name)
			}
		}
		if r.Lo > r.Hi || r.Tolerance < 0 || r.Tolerance > 100 {
			bad("%s: interval or tolerance out of order", rat)
		}
		if r.K < 0 || r.R < 0 || r.NeedR < 0 || r.NeedK < 0 || r.Jobs < 0 || r.K > 100000 || r.NeedR > 100000 || r.NeedK > 100000 || r.NeedSamples < 0 || r.NeedSamples > 1e12 {
			bad("%s: counts out of range", rat)
		}
		r.Warnings = boundText(r.Warnings, rat+".warnings", bad)
	}
}

// checkCapacity checks a search scenario's capacities: bounded text,
// at most maxPoints loads a side, every number finite.
func checkCapacity(c *Capacity, at string, bad func(string, ...any)) {
	if len(c.Objective) > maxText || len(c.CandidateStopped) > maxText || len(c.BaselineStopped) > maxText {
		bad("%s: text longer than %d bytes", at, maxText)
	}
	if c.Unit != "streams" && c.Unit != "requests/s" {
		bad("%s.unit %q", at, c.Unit)
	}
	if c.CandidateProbes < 0 || c.BaselineProbes < 0 || c.CandidateProbes > 10000 || c.BaselineProbes > 10000 {
		bad("%s: probe counts out of range", at)
	}
	for side, e := range map[string]*capacity.Estimate{"candidate": &c.Candidate, "baseline": c.Baseline} {
		if e == nil {
			continue
		}
		if len(e.Points) > maxPoints || len(e.Unit) > 20 {
			bad("%s.%s: more than %d loads", at, side, maxPoints)
			continue
		}
		e.Cliff = nil // (not shown)
		vs := []float64{e.Target, e.Confidence, e.Capacity, e.Lo, e.Hi}
		for _, p := range e.Points {
			vs = append(vs, p.Load, p.Effective, p.Attainment, p.Lo, p.Hi, p.LoEnvelope, p.HiEnvelope, p.Fit)
		}
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e12 {
				bad("%s.%s: not a finite number", at, side)
				break
			}
		}
	}
}

// maxPoints is the most loads a side of a capacity comparison shows.
const maxPoints = 200

// boundText keeps at most maxWarnings strings of at most maxText bytes.
func boundText(ws []string, at string, bad func(string, ...any)) []string {
	if len(ws) > maxWarnings {
		bad("%s: %d, at most %d", at, len(ws), maxWarnings)
		return nil
	}
	for _, w := range ws {
		if len(w) > maxText {
			bad("%s: one longer than %d bytes", at, maxText)
			return nil
		}
	}
	return ws
}
