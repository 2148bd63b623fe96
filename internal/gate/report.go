package gate

import (
	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// A Verdict is the gate's answer for a scenario or the whole PR.
type Verdict string

// Verdicts: compare's three, and no-baseline for a profile that has none
// yet (it passes; its runs become the baseline once merged).
const (
	Pass         = Verdict(compare.Pass)
	Fail         = Verdict(compare.Fail)
	Inconclusive = Verdict(compare.Inconclusive)
	NoBaseline   = Verdict("no-baseline")
)

// Scenario is one scenario's outcome.
type Scenario struct {
	Name           string
	Compare        *judge.Report // nil without a baseline
	BaselineSource string
	Baseline       []*result.Run
	Candidate      []*result.Run
	// BaselineCommits are the commits Baseline's runs were recorded at
	// (12-character prefixes), for the trend chart's labels.
	BaselineCommits []string
	Paired          bool            // Baseline[i] ran next to Candidate[i] in this job (paired A/B)
	candidateJSON   [][]byte        // the candidate runs' run.json, as written (what a refresh stores)
	loaded          bool            // the stored baselines were read
	baselineNames   []string        // their file names
	history         []result.Loaded // the stored runs of this profile on this testbed the noise is estimated from
	lookNote        string          // how the adaptive looks ended
	acrossUpgrade   bool            // its baseline runs are another hash of the same plan (baseline: across-upgrades)
	// ProfileChanged says why a scenario with stored runs has no baseline:
	// its profile changed.
	ProfileChanged string
	// OtherTestbeds says ProfileChanged's reason is that the profile has
	// runs only on other testbeds.
	OtherTestbeds bool
	// EnvChanged lists what differs between the machine and stack of the
	// baseline's newest run and this job's ("cpu A → B; cuda 12.4 →
	// 12.6"); EnvHardware says a difference is of the machine or its
	// drivers: a FAIL is then no evidence against the pull request, and
	// reads INCONCLUSIVE ("environment changed").
	EnvChanged  string
	EnvHardware bool
	// CacheMismatch says why the runs' prefix-cache hits differ from the
	// baseline's beyond cacheTolerance, after a run again with fresh
	// prompts (checkCache): they measured other work, and the scenario
	// reads INCONCLUSIVE, never FAIL or PASS. CacheHotBaseline says the
	// baseline's side was the cached one.
	CacheMismatch    string
	CacheHotBaseline bool
	cacheChecked     int    // the candidate runs checkCache has seen
	cacheNote        string // the server's prefix caching changed, compared as it is
	// Broken says why the scenario's runs are no measurement (none of a
	// run's requests succeeded, or more failed than max-error-rate): it
	// FAILs, whether or not there is a baseline, and nothing is stored.
	Broken string
	// The run counts, for a scenario rebuilt from comparison.json, which
	// holds no runs.
	baselineN, candidateN int
	// Capacity is a search scenario's capacities (nil for a scenario of
	// runs): its Compare holds the one comparison, of capacity.
	Capacity  *Capacity
	storeHash string // a search's baselines key (its run.json-less profile)
	// Images are the scenario's charts as PNG files the gate committed to
	// the baseline branch, for the comment (never read from an artifact).
	Images []Image
}

// Image is a chart the comment shows from a URL GitHub serves.
type Image struct{ Title, URL string }

// ChartPNG is a chart drawn for the comment.
type ChartPNG struct {
	Name, Title string
	PNG         []byte
}

// BaselineCount is how many baseline runs the scenario was compared with.
func (s *Scenario) BaselineCount() int {
	if len(s.Baseline) > 0 {
		return len(s.Baseline)
	}
	return s.baselineN
}

// StoreHash is the key the scenario's results are stored under (without
// the testbed): its runs' profile hash, or a search's key.
func (s *Scenario) StoreHash() string {
	if s.storeHash != "" || len(s.Candidate) == 0 {
		return s.storeHash
	}
	return s.Candidate[0].ProfileHash
}

// CandidateCount is how many runs of the candidate it has.
func (s *Scenario) CandidateCount() int {
	if len(s.Candidate) > 0 {
		return len(s.Candidate)
	}
	return s.candidateN
}

// Verdict is the scenario's verdict, or NoBaseline; Fail for broken runs.
func (s *Scenario) Verdict() Verdict {
	if s.Broken != "" {
		return Fail
	}
	if s.Compare == nil {
		return NoBaseline
	}
	if s.EnvHardware && s.Compare.Verdict == compare.Fail {
		return Inconclusive
	}
	if s.CacheMismatch != "" && s.Compare.Verdict != compare.Inconclusive {
		// The latencies measured other work; failed requests are failed
		// requests whatever the cache served.
		for _, r := range s.Compare.Results {
			if r.Metric == "error_rate" && r.Verdict == compare.Fail {
				return Fail
			}
		}
		return Inconclusive
	}
	return Verdict(s.Compare.Verdict)
}

// Meta is what was run where.
type Meta struct {
	Model   string `json:"model"`
	Server  string `json:"server"`
	Runner  string `json:"runner"`
	Commit  string `json:"commit"`
	Event   string `json:"event"`
	Store   string `json:"store"`
	Seed    uint64 `json:"seed"`
	Repeats int    `json:"repeats"`
	// Head is the commit judged (a pull request's head, not the merge
	// commit Actions checks out), Base what it was judged against (the
	// merge-base, else the base branch's commit), RunURL the workflow
	// run's page: the comment's first lines name them.
	Head   string `json:"head,omitempty"`
	Base   string `json:"base,omitempty"`
	RunURL string `json:"run_url,omitempty"`
	// HTMLReport says report.html (the charts) was written beside
	// report.md, for the run's artifacts.
	HTMLReport bool `json:"html_report,omitempty"`
	// Testbed is the key the baselines were kept apart by, Environment
	// the machine and server in words.
	Testbed     string `json:"testbed,omitempty"`
	Environment string `json:"environment,omitempty"`
}

// Report is the whole gate's outcome.
type Report struct {
	Verdict   Verdict
	Scenarios []Scenario
	Meta      Meta
	Notes     []string // gate-level notes (e.g. a comment that could not be posted)
	// Advisory: the gate reports but never fails on a regression.
	Advisory bool
	// Accepted says why a failing verdict is accepted (the pull request's
	// label): reported, not failed.
	Accepted string
	// AcceptLabel is the label that would accept a regression ("": none),
	// and FailOnInconclusive whether an undecided verdict blocks: what the
	// comment's second line tells the author to do.
	AcceptLabel        string
	FailOnInconclusive bool
}

// Broken reports whether a scenario's runs are no measurement: a FAIL no
// label accepts (there is no regression to accept, only runs to fix).
func (r *Report) Broken() bool {
	for i := range r.Scenarios {
		if r.Scenarios[i].Broken != "" {
			return true
		}
	}
	return false
}

// Blocks reports whether the verdict fails the step: a regression neither
// accepted nor advisory, or an inconclusive verdict when failOnInconclusive.
func (r *Report) Blocks(failOnInconclusive bool) bool {
	if r.Advisory || r.Accepted != "" {
		return false
	}
	return r.Verdict == Fail || (r.Verdict == Inconclusive && failOnInconclusive)
}

// Conclusion is the check run's conclusion for the verdict.
func (r *Report) Conclusion(failOnInconclusive bool) string {
	switch {
	case r.Blocks(failOnInconclusive):
		return "failure"
	case r.Verdict == Fail || r.Verdict == Inconclusive:
		return "neutral"
	}
	return "success"
}

// Fold folds scenario verdicts: any fail fails; then inconclusive; then
// pass; no-baseline only when no scenario had one.
func Fold(ss []Scenario) Verdict {
	v := NoBaseline
	for _, s := range ss {
		switch s.Verdict() {
		case Fail:
			return Fail
		case Inconclusive:
			v = Inconclusive
		case Pass:
			if v == NoBaseline {
				v = Pass
			}
		}
	}
	return v
}

// HTMLReportFile is report.html's name in the results folder.
const HTMLReportFile = "report.html"
