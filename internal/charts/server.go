package charts

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"
)

// serverCharts is each scraped endpoint's engine state over the run (its
// KV cache use, requests running and waiting, preemptions), on the
// requests' time axis.
func serverCharts(r *Run, o Options) (out []Chart, skipped []string) {
	urls := make([]string, 0, len(r.Run.ServerMetrics))
	for u, ep := range r.Run.ServerMetrics {
		if len(ep.Series) > 0 {
			urls = append(urls, u)
		}
	}
	sort.Strings(urls)
	// The requests' zero: run.json's started_at is the first send.
	t0, err := time.Parse(time.RFC3339Nano, r.Run.StartedAt)
	if err != nil {
		if len(urls) > 0 {
			skipped = append(skipped, "server metrics over time: run.json has no started_at to place them")
		}
		return nil, skipped
	}
	if len(r.Reqs) > 0 {
		t0 = t0.Add(-time.Duration(r.Reqs[0].Sent))
	}
	for k, u := range urls {
		ep := r.Run.ServerMetrics[u]
		suffix := ""
		if k > 0 {
			suffix = fmt.Sprintf("_%d", k+1)
		}
		for _, g := range []struct {
			name, title, y string
			match          []string
			percent, delta bool
		}{
			{"server_kv_cache_over_time", "Server KV cache use over time", "KV cache in use (%)", []string{"cache_usage", "token_usage"}, true, false},
			{"server_requests_over_time", "Server requests running and waiting", "requests", []string{"num_requests_running", "num_requests_waiting", "num_running_reqs", "num_queue_reqs"}, false, false},
			{"server_preemptions_over_time", "Server preemptions over time", "preemptions since the first scrape", []string{"num_preemptions"}, false, true},
		} {
			var names []string
			for n := range ep.Series {
				for _, m := range g.match {
					if strings.Contains(n, m) {
						names = append(names, n)
						break
					}
				}
			}
			if len(names) == 0 {
				continue
			}
			sort.Strings(names)
			c := Chart{Name: g.name + suffix, Title: g.title}
			c.Plot = newPlot(g.title, "time since the run's start (s)", g.y, o)
			for i, n := range names {
				se := ep.Series[n]
				off := se.Start.Sub(t0).Seconds()
				scale := 1.0
				if g.percent {
					top := 0.0
					for _, v := range se.V {
						top = max(top, v)
					}
					if top <= 1 { // a fraction (vLLM's _perc is 0 to 1)
						scale = 100
					}
				}
				pts := make(plotter.XYs, len(se.T))
				for j := range se.T {
					v := se.V[j] * scale
					if g.delta {
						v = se.V[j] - se.V[0]
					}
					pts[j] = plotter.XY{X: off + se.T[j], Y: v}
				}
				if err := line(c.Plot, pts, colour(i), n); err != nil {
					skipped = append(skipped, fmt.Sprintf("%s: %v", c.Name, err))
					continue
				}
			}
			c.Plot.Y.Min = 0
			c.About = fmt.Sprintf("scraped from %s each second (run.json's server_metrics series)", u)
			out = append(out, c)
		}
	}
	return out, skipped
}
