package report

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/compare"
	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/charts"
	"github.com/aiperf-action/aiperf-action/internal/judge"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
)

// HTMLInput is what a report shows: runs on their own, or a baseline and
// a candidate with their comparison, or a capacity search; each drawn
// from its artifacts alone.
type HTMLInput struct {
	Title      string
	Lines      []string       // said under the title
	Scenarios  []HTMLScenario // a gate's scenarios
	Runs       []*charts.Run  // each on its own, and side by side when several
	Baseline   []*charts.Run  // with Candidate and Comparison: a comparison
	Candidate  []*charts.Run
	Comparison *judge.Report
	Search     *capacity.Estimate // a capacity search's estimate (search.json)
	SearchNote string
	Options    charts.Options
	Generated  time.Time
	Version    string
}

// HTMLScenario is one of a gate's scenarios: its verdict, its comparison
// (nil without a baseline), and its runs.
type HTMLScenario struct {
	Name, Verdict string
	Notes         []string
	Comparison    *judge.Report
	Baseline      []*charts.Run // the stored runs compared with (their run.json only), or a paired A/B's
	Candidate     []*charts.Run
	Trends        []charts.Chart // the baseline's trend by commit, a chart a gated statistic
}

type htmlChart struct {
	Title, About string
	SVG          template.HTML // drawn here by gonum/plot; its text escaped by vgsvg
}

type htmlRow struct{ Cells []string }

type htmlSection struct {
	ID, Heading string
	Lines       []string
	Tables      []htmlTable
	Charts      []htmlChart
	Skipped     []string
}

type htmlTable struct {
	Head []string
	Rows []htmlRow
	// Verdicts colour a comparison's rows by their last cell.
	Verdicts bool
}

// HTML writes the report: one self-contained page, its charts inline SVG,
// no script, no style sheet or font fetched, nothing it loads from a
// network when viewed.
func HTML(w io.Writer, in HTMLInput) error {
	var secs []htmlSection
	add := func(s htmlSection, cs []charts.Chart, skipped []string) error {
		for _, c := range cs {
			svg, err := charts.SVG(c)
			if err != nil {
				return err
			}
			s.Charts = append(s.Charts, htmlChart{Title: c.Title, About: c.About, SVG: template.HTML(svg)})
		}
		s.Skipped = append(s.Skipped, skipped...)
		secs = append(secs, s)
		return nil
	}
	for i, sc := range in.Scenarios {
		s := htmlSection{ID: fmt.Sprintf("scenario-%d", i+1), Heading: fmt.Sprintf("Scenario %s: %s", sc.Name, strings.ToUpper(sc.Verdict)), Lines: sc.Notes}
		if sc.Comparison != nil {
			cs := comparisonSection(sc.Comparison)
			s.Lines = append(s.Lines, cs.Lines...)
			s.Tables = cs.Tables
		}
		cs, skipped := compareCDFs(sc.Baseline, sc.Candidate, in.Options)
		cs = append(cs, sc.Trends...)
		if len(sc.Candidate) > 0 {
			s.Tables = append(s.Tables, runsTable(sc.Candidate))
			// The first candidate run over time.
			one, sk := charts.Single(sc.Candidate[0], in.Options)
			for _, c := range one {
				if !strings.HasPrefix(c.Name, "cdf_") {
					c.Title += " (candidate " + sc.Candidate[0].Label + ")"
					cs = append(cs, c)
				}
			}
			skipped = append(skipped, sk...)
		}
		if err := add(s, cs, skipped); err != nil {
			return err
		}
	}
	if in.Comparison != nil {
		s := comparisonSection(in.Comparison)
		cs, skipped := compareCDFs(in.Baseline, in.Candidate, in.Options)
		if err := add(s, cs, skipped); err != nil {
			return err
		}
	}
	if in.Search != nil {
		s := htmlSection{ID: "search", Heading: "Capacity search", Lines: []string{in.Search.String(), in.SearchNote}}
		c, err := charts.Attainment(*in.Search, in.Options)
		var cs []charts.Chart
		var skipped []string
		if err != nil {
			skipped = append(skipped, err.Error())
		} else {
			cs = append(cs, *c)
		}
		s.Tables = append(s.Tables, searchTable(in.Search))
		if err := add(s, cs, skipped); err != nil {
			return err
		}
	}
	if len(in.Runs) > 1 {
		cs, skipped := charts.Multi(in.Runs, in.Options)
		s := htmlSection{ID: "runs", Heading: fmt.Sprintf("%d runs side by side", len(in.Runs)), Tables: []htmlTable{runsTable(in.Runs)}}
		if err := add(s, cs, skipped); err != nil {
			return err
		}
	}
	for i, r := range in.Runs {
		cs, skipped := charts.Single(r, in.Options)
		s := htmlSection{ID: fmt.Sprintf("run-%d", i+1), Heading: "Run " + r.Label, Lines: runLines(r), Tables: []htmlTable{runsTable([]*charts.Run{r})}}
		if err := add(s, cs, skipped); err != nil {
			return err
		}
	}
	title := in.Title
	if title == "" {
		title = "aiperf-action report"
	}
	gen := in.Generated
	if gen.IsZero() {
		gen = time.Now()
	}
	return htmlPage.Execute(w, struct {
		Title, Generated, Version string
		Lines                     []string
		Sections                  []htmlSection
		Dark                      bool
	}{title, gen.UTC().Format(time.RFC3339), in.Version, in.Lines, secs, in.Options.Dark})
}

func f3(v float64) string { return fmt.Sprintf("%.4g", v) }

// compareCDFs is the candidate's TTFT, ITL and latency CDFs over the
// baseline's runs, and what could not be drawn.
func compareCDFs(base, cand []*charts.Run, o charts.Options) (cs []charts.Chart, skipped []string) {
	for _, m := range []struct{ name, metric, label string }{
		{"cmp_cdf_ttft", metrics.TTFT, "TTFT"}, {"cmp_cdf_itl", metrics.ITL, "ITL"}, {"cmp_cdf_latency", metrics.RequestLatency, "request latency"},
	} {
		c, err := charts.CompareCDF(base, cand, o, m.name, m.metric, m.label)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", c.Name, err))
			continue
		}
		cs = append(cs, *c)
	}
	return cs, skipped
}

// runLines is a run's facts in words.
func runLines(r *charts.Run) []string {
	rr := r.Run
	ls := []string{
		fmt.Sprintf("%s at %s (%s%s), started %s, %.2f s", rr.Target.Model, rr.Target.URL, rr.Target.EndpointType, map[bool]string{true: ", streamed"}[rr.Target.Streaming], rr.StartedAt, rr.DurationS),
		fmt.Sprintf("profile %s, seed %d; %s", rr.ProfileHash, rr.Seed, r.Dir),
	}
	if rr.Cancelled {
		ls = append(ls, "interrupted: the results are partial")
	}
	if n := rr.Counts.Errors; n > 0 {
		kinds := make([]string, 0, len(rr.Counts.ErrorsByKind))
		for k, v := range rr.Counts.ErrorsByKind {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(kinds)
		ls = append(ls, fmt.Sprintf("%d of %d requests failed: %s", n, rr.Counts.Requests, strings.Join(kinds, ", ")))
	} else {
		ls = append(ls, fmt.Sprintf("no request of %d failed", rr.Counts.Requests))
	}
	th := rr.ToolHealth
	if th.ScheduleLagMs != nil {
		ls = append(ls, fmt.Sprintf("tool health: schedule lag p99 %.3g ms, %d workers, GC pause %.3g ms", th.ScheduleLagMs.P99, th.Workers, th.GCPauseMs))
	}
	for _, w := range th.Warnings {
		ls = append(ls, "warning: "+w)
	}
	return ls
}

// runsTable is each run's headline figures, a row a run.
func runsTable(runs []*charts.Run) htmlTable {
	t := htmlTable{Head: []string{"run", "requests", "failed", "req/s", "output tok/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "latency p50", "latency p99"}}
	for _, r := range runs {
		m := r.Run.Metrics
		rate := func(name string) string {
			if x, ok := m[name]; ok && x.Rate != nil {
				return f3(x.Rate.Value)
			}
			return "—"
		}
		q := func(name string, p func(*metrics.Dist) float64) string {
			if x, ok := m[name]; ok && x.Dist != nil && x.Dist.Count > 0 {
				return f3(p(x.Dist)) + " " + x.Dist.Unit
			}
			return "—"
		}
		p50 := func(d *metrics.Dist) float64 { return d.P50 }
		p99 := func(d *metrics.Dist) float64 { return d.P99 }
		t.Rows = append(t.Rows, htmlRow{[]string{r.Label, fmt.Sprint(r.Run.Counts.Requests), fmt.Sprint(r.Run.Counts.Errors), rate(metrics.RequestTput), rate(metrics.OutputTput),
			q(metrics.TTFT, p50), q(metrics.TTFT, p99), q(metrics.ITL, p50), q(metrics.ITL, p99), q(metrics.RequestLatency, p50), q(metrics.RequestLatency, p99)}})
	}
	return t
}

// comparisonSection is a comparison's verdict and its table: each
// statistic's change with its interval against its tolerance.
func comparisonSection(rep *judge.Report) htmlSection {
	s := htmlSection{ID: "comparison", Heading: "Comparison: " + strings.ToUpper(string(rep.Verdict))}
	if len(rep.BaselineRuns)+len(rep.CandidateRuns) > 0 { // (a comparison read back from comparison.json names none)
		s.Lines = append(s.Lines, fmt.Sprintf("%d baseline runs, %d candidate runs, profile %s", len(rep.BaselineRuns), len(rep.CandidateRuns), rep.ProfileHash))
	}
	s.Lines = append(s.Lines, rep.Comparison.Warnings...)
	t := htmlTable{Head: []string{"statistic", "baseline", "candidate", "change", "interval", "tolerance", "detects", "verdict"}, Verdicts: true}
	for i, r := range rep.Results {
		unit := ""
		if i < len(rep.Units) {
			unit = " " + rep.Units[i]
		}
		t.Rows = append(t.Rows, htmlRow{[]string{r.Name(), f3(r.Baseline) + unit, f3(r.Candidate) + unit, signedPct(r.Change),
			signedPct(r.Lo) + " to " + signedPct(r.Hi), fmt.Sprintf("%.1f%%", 100*r.Tolerance), fmt.Sprintf("%.1f%%", 100*r.MDE), string(r.Verdict)}})
	}
	s.Tables = append(s.Tables, t)
	return s
}

// searchTable is a search's loads: each its probes, requests, attainment
// and interval.
func searchTable(e *capacity.Estimate) htmlTable {
	t := htmlTable{Head: []string{"load", "runs", "requests", "attainment", "interval", "fit"}}
	for _, p := range e.Points {
		t.Rows = append(t.Rows, htmlRow{[]string{f3(p.Load), fmt.Sprint(p.Probes), fmt.Sprint(p.N), fmt.Sprintf("%.1f%%", 100*p.Attainment),
			fmt.Sprintf("%.1f%% to %.1f%%", 100*p.Lo, 100*p.Hi), fmt.Sprintf("%.1f%%", 100*p.Fit)}})
	}
	return t
}

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"verdictClass": func(v string) string {
		switch compare.Verdict(v) {
		case compare.Pass:
			return "pass"
		case compare.Fail:
			return "fail"
		case compare.Inconclusive:
			return "inconclusive"
		}
		return ""
	},
	"last": func(cells []string) string {
		if len(cells) == 0 {
			return ""
		}
		return cells[len(cells)-1]
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto; max-width: 1100px; padding: 16px; color: #1f2328; background: #fff; line-height: 1.45; }
{{if .Dark}}body { color: #e6e6e6; background: #1e1e1e; } th { background: #2a2a2a !important; } td, th { border-color: #444 !important; }{{end}}
h1 { font-size: 1.6em; margin-bottom: 0; } h2 { border-bottom: 1px solid #d1d9e0; padding-bottom: 4px; margin-top: 2em; }
nav a { margin-right: 12px; } .meta { color: #59636e; font-size: 0.9em; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.9em; } th, td { border: 1px solid #d1d9e0; padding: 3px 8px; text-align: right; }
th { background: #f6f8fa; } td:first-child, th:first-child { text-align: left; }
tr.pass td:last-child { color: #1a7f37; font-weight: 600; } tr.fail td:last-child { color: #cf222e; font-weight: 600; } tr.inconclusive td:last-child { color: #9a6700; font-weight: 600; }
figure { margin: 16px 0; } figure svg { max-width: 100%; height: auto; display: block; }
.about { color: #59636e; font-size: 0.85em; margin: 2px 0 0; } ul.skipped { color: #59636e; font-size: 0.85em; }
</style></head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">Generated {{.Generated}} by aiperf-action {{.Version}} from the run folders alone (run.json, records.jsonl); every chart is drawn into this file, and nothing is fetched to view it.</p>
{{range .Lines}}<p>{{.}}</p>{{end}}
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Heading}}</a>{{end}}</nav>
{{range .Sections}}<section id="{{.ID}}">
<h2>{{.Heading}}</h2>
{{range .Lines}}{{if .}}<p>{{.}}</p>{{end}}{{end}}
{{range .Tables}}<table><thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{$v := .Verdicts}}{{range .Rows}}<tr{{if $v}} class="{{verdictClass (last .Cells)}}"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table>{{end}}
{{range .Charts}}<figure class="chart" aria-label="{{.Title}}">
{{.SVG}}
<p class="about">{{.About}}</p></figure>
{{end}}{{if .Skipped}}<ul class="skipped">{{range .Skipped}}<li>not drawn: {{.}}</li>{{end}}</ul>{{end}}
</section>
{{end}}</body></html>
`))
