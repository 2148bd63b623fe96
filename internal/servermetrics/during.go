package servermetrics

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Endpoint is one scraped /metrics endpoint over a run, as run.json keeps it.
type Endpoint struct {
	Scrapes  int                `json:"scrapes"`
	Failures int                `json:"failures"`
	Metrics  map[string]Summary `json:"metrics"`
	// Series is the engine's state over the run, for its pictures: each
	// family SeriesOf keeps (KV cache use, requests running and waiting,
	// preemptions), summed over its label sets.
	Series map[string]Series `json:"series,omitempty"`
}

// Series is one family's value at each scrape: Start the first scrape's
// wall-clock time, T each scrape's seconds after it. Past MaxSeriesPoints
// scrapes, each point is the greatest value of its span, at the span's
// first scrape.
type Series struct {
	Start time.Time `json:"start"`
	T     []float64 `json:"t"`
	V     []float64 `json:"v"`
}

// MaxSeriesPoints bounds a series in run.json.
const MaxSeriesPoints = 600

// seriesFamily says whether a family is kept as a series: the engine's
// load and memory state (vLLM's and SGLang's names and their kind).
func seriesFamily(name string) bool {
	for _, k := range []string{"kv_cache_usage", "gpu_cache_usage", "cache_usage_perc", "num_requests_running", "num_requests_waiting",
		"num_preemptions", "num_running_reqs", "num_queue_reqs", "token_usage"} {
		if strings.Contains(name, k) {
			return true
		}
	}
	return false
}

// SeriesOf is the kept families' values over samples (oldest first).
func SeriesOf(samples []*Sample) map[string]Series {
	if len(samples) == 0 {
		return nil
	}
	out := map[string]Series{}
	t0 := samples[0].At
	stride := (len(samples) + MaxSeriesPoints - 1) / MaxSeriesPoints
	for name := range samples[len(samples)-1].Families {
		if !seriesFamily(name) {
			continue
		}
		se := Series{Start: t0.UTC()}
		for i := 0; i < len(samples); i += stride {
			v, seen := 0.0, false
			for _, smp := range samples[i:min(i+stride, len(samples))] {
				if fm, ok := smp.Families[name]; ok {
					if x := sumValues(fm); !seen || x > v {
						v, seen = x, true
					}
				}
			}
			if seen {
				se.T = append(se.T, math.Round(samples[i].At.Sub(t0).Seconds()*1e3)/1e3)
				se.V = append(se.V, v)
			}
		}
		if len(se.T) > 0 {
			out[name] = se
		}
	}
	return out
}

// During scrapes /metrics endpoints for the length of a run.
type During struct {
	cancel   context.CancelFunc
	live     []string
	results  chan scraped
	warnings []string
}

type scraped struct {
	url      string
	samples  []*Sample
	failures int
}

// Scrape interval and the most samples kept per endpoint.
const (
	scrapeEvery = time.Second
	maxSamples  = 4096
)

// Start probes each of urls, or, when there are none, target's /metrics,
// and scrapes every one that answered each second until Stop. An explicit
// URL that does not answer is a warning; the default one is quietly left out.
func Start(ctx context.Context, urls []string, target string) *During {
	d := &During{cancel: func() {}}
	explicit := len(urls) > 0
	if !explicit {
		u, err := url.Parse(target)
		if err != nil {
			return d
		}
		urls = []string{u.Scheme + "://" + u.Host + "/metrics"}
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	for _, u := range urls {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := Fetch(pctx, hc, u)
		cancel()
		if err != nil {
			if explicit {
				d.warnings = append(d.warnings, fmt.Sprintf("--server-metrics %s: %v; not scraped", u, err))
			}
			continue
		}
		d.live = append(d.live, u)
	}
	sctx, cancel := context.WithCancel(ctx)
	d.cancel = cancel
	d.results = make(chan scraped, len(d.live))
	for _, u := range d.live {
		go func() {
			s, f := Scrape(sctx, hc, u, scrapeEvery, maxSamples)
			d.results <- scraped{u, s, f}
		}()
	}
	return d
}

// Stop ends the scraping, waits for every scraper and summarises each
// endpoint (nil when none was scraped), with the warnings of the run.
func (d *During) Stop() (map[string]Endpoint, []string) {
	d.cancel()
	if len(d.live) == 0 {
		return nil, d.warnings
	}
	out := map[string]Endpoint{}
	for range d.live {
		r := <-d.results
		out[r.url] = Endpoint{Scrapes: len(r.samples), Failures: r.failures, Metrics: Summarize(r.samples), Series: SeriesOf(r.samples)}
		if r.failures > 0 {
			d.warnings = append(d.warnings, fmt.Sprintf("server metrics %s: %d of %d scrapes failed", r.url, r.failures, r.failures+len(r.samples)))
		}
	}
	return out, d.warnings
}
