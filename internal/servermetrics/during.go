package servermetrics

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Endpoint is one scraped /metrics endpoint over a run, as run.json keeps it.
type Endpoint struct {
	Scrapes  int                `json:"scrapes"`
	Failures int                `json:"failures"`
	Metrics  map[string]Summary `json:"metrics"`
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
		out[r.url] = Endpoint{Scrapes: len(r.samples), Failures: r.failures, Metrics: Summarize(r.samples)}
		if r.failures > 0 {
			d.warnings = append(d.warnings, fmt.Sprintf("server metrics %s: %d of %d scrapes failed", r.url, r.failures, r.failures+len(r.samples)))
		}
	}
	return out, d.warnings
}
