package gputelemetry

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/servermetrics"
)

// AIPerf's defaults: the endpoints it always tries (DCGM exporter's port
// and Dynamo's) and its scrape interval; AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS
// and AIPERF_GPU_COLLECTION_INTERVAL change them as they change AIPerf's.
var DefaultEndpoints = []string{"http://localhost:9400/metrics", "http://localhost:9401/metrics"}

const DefaultInterval = 333 * time.Millisecond

// maxReadings bounds what is kept of one endpoint (at 3 a second, 3 h):
// past it the older half is thinned to every other scrape.
const maxReadings = 1 << 15

// NormalizeURL makes an endpoint as AIPerf takes it: "host:port" gets
// http://, and a URL with no path gets /metrics.
func NormalizeURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%q is not a DCGM exporter URL (want host:port or http://host:port/metrics)", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	return u.String(), nil
}

// Env reads AIPerf's environment settings: the default endpoints (comma
// separated, or a JSON-ish list) and the interval in seconds.
func Env(getenv func(string) string) (defaults []string, interval time.Duration, err error) {
	defaults, interval = DefaultEndpoints, DefaultInterval
	if v := strings.TrimSpace(getenv("AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS")); v != "" {
		defaults = nil
		for _, s := range strings.Split(strings.Trim(v, "[]"), ",") {
			if s = strings.Trim(strings.TrimSpace(s), `"'`); s == "" {
				continue
			}
			u, err := NormalizeURL(s)
			if err != nil {
				return nil, 0, fmt.Errorf("AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS: %v", err)
			}
			defaults = append(defaults, u)
		}
	}
	if v := strings.TrimSpace(getenv("AIPERF_GPU_COLLECTION_INTERVAL")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0.01 && f <= 300) {
			return nil, 0, fmt.Errorf("AIPERF_GPU_COLLECTION_INTERVAL=%s: want seconds from 0.01 to 300", v)
		}
		interval = time.Duration(f * float64(time.Second))
	}
	return defaults, interval, nil
}

// Options are what Start scrapes.
type Options struct {
	URLs     []string      // given with --gpu-telemetry: a warning when one doesn't answer
	Defaults []string      // tried always, left out quietly when they don't answer
	Interval time.Duration // between scrapes
	Extra    []Field       // fields a --gpu-telemetry CSV adds
	Asked    bool          // --gpu-telemetry was given: none answering is a warning
}

// During scrapes the endpoints that answered until Stop.
type During struct {
	cancel   context.CancelFunc
	fields   []Field
	interval time.Duration
	live     []string
	results  chan collected
	got      []collected
	tried    []string
	warnings []string
}

type collected struct {
	url      string
	readings []reading
	failures int
}

// reading is one scrape of one endpoint, parsed: each GPU's values by
// field (NaN where the exporter had none).
type reading struct {
	at   time.Time
	gpus map[int]*gpuValues
}

type gpuValues struct {
	id   identity
	vals []float64
}

type identity struct {
	uuid, model, hostname, pciBusID, driver string
}

// Start probes each endpoint once and scrapes those that answered with
// DCGM GPU series, every interval, until Stop.
func Start(ctx context.Context, o Options) *During {
	d := &During{cancel: func() {}, fields: append(append([]Field{}, Fields...), o.Extra...), interval: cmpDur(o.Interval, DefaultInterval)}
	hc := &http.Client{Timeout: 3 * time.Second}
	seen := map[string]bool{}
	try := func(u string, explicit bool) {
		if seen[u] {
			return
		}
		seen[u] = true
		d.tried = append(d.tried, u)
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		r, err := scrapeOnce(pctx, hc, u, d.fields)
		cancel()
		switch {
		case err != nil:
			if explicit {
				d.warnings = append(d.warnings, fmt.Sprintf("--gpu-telemetry %s: %v; not scraped", u, err))
			}
		case len(r.gpus) == 0:
			if explicit {
				d.warnings = append(d.warnings, fmt.Sprintf("--gpu-telemetry %s: answered with no DCGM GPU series (no DCGM_FI_* metric with a gpu label); not scraped", u))
			}
		default:
			d.live = append(d.live, u)
		}
	}
	for _, u := range o.URLs {
		try(u, true)
	}
	for _, u := range o.Defaults {
		try(u, false)
	}
	if len(d.live) == 0 && o.Asked && len(o.URLs) == 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("--gpu-telemetry: no DCGM exporter answered at %s: no GPU telemetry (give the exporter's address: --gpu-telemetry host:9400)", strings.Join(d.tried, ", ")))
	}
	sctx, cancel := context.WithCancel(ctx)
	d.cancel = cancel
	d.results = make(chan collected, len(d.live))
	for _, u := range d.live {
		go func() {
			rs, f := scrapeLoop(sctx, hc, u, d.interval, d.fields)
			d.results <- collected{u, rs, f}
		}()
	}
	return d
}

func cmpDur(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}

// Live says how many endpoints are being scraped.
func (d *During) Live() int { return len(d.live) }

// Stop ends the scraping: each endpoint is scraped once more, so the
// counters reach past the measurement's end.
func (d *During) Stop() {
	d.cancel()
	if d.results == nil {
		return
	}
	byURL := map[string]collected{}
	for range d.live {
		c := <-d.results
		byURL[c.url] = c
	}
	d.results = nil
	for _, u := range d.live {
		c := byURL[u]
		d.got = append(d.got, c)
		if c.failures > 0 {
			d.warnings = append(d.warnings, fmt.Sprintf("GPU telemetry %s: %d of %d scrapes failed", u, c.failures, c.failures+len(c.readings)))
		}
	}
}

// Summary summarises every GPU over the window, after Stop; outputTokens
// are the measurement's, for tokens per joule. Nil when no endpoint was
// scraped. The warnings include the summary's notes.
func (d *During) Summary(w Window, outputTokens int64) (*Telemetry, []string) {
	if len(d.got) == 0 {
		return nil, d.warnings
	}
	t := summarize(d.got, d.tried, d.fields, d.interval, w, outputTokens)
	return t, append(append([]string{}, d.warnings...), t.Notes...)
}

// scrapeLoop scrapes u every interval until ctx ends, then once more.
func scrapeLoop(ctx context.Context, hc *http.Client, u string, interval time.Duration, fields []Field) (rs []reading, failures int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	one := func() {
		sctx, cancel := context.WithTimeout(context.Background(), interval+2*time.Second)
		defer cancel()
		r, err := scrapeOnce(sctx, hc, u, fields)
		if err != nil {
			failures++
			return
		}
		rs = append(rs, r)
		if len(rs) > maxReadings {
			kept := rs[:0]
			for i, x := range rs {
				if i%2 == 0 || i >= len(rs)/2 {
					kept = append(kept, x)
				}
			}
			rs = kept
		}
	}
	for {
		one()
		select {
		case <-ctx.Done():
			one()
			return rs, failures
		case <-t.C:
		}
	}
}

// scrapeOnce fetches u and keeps each GPU's values of fields.
func scrapeOnce(ctx context.Context, hc *http.Client, u string, fields []Field) (reading, error) {
	s, err := servermetrics.Fetch(ctx, hc, u)
	if err != nil {
		return reading{}, err
	}
	return parse(s, fields), nil
}

// parse reads a scrape's DCGM series: a series without a numeric "gpu"
// label, and DCGM's blank values (a field the GPU doesn't support), are
// left out.
func parse(s *servermetrics.Sample, fields []Field) reading {
	r := reading{at: s.At, gpus: map[int]*gpuValues{}}
	for name, fam := range s.Families {
		if !strings.HasPrefix(name, "DCGM_") {
			continue
		}
		k := -1
		for i, f := range fields {
			if f.DCGM == strings.TrimSuffix(name, "_total") {
				k = i
				break
			}
		}
		if k < 0 {
			continue
		}
		for _, m := range fam.Metric {
			labels := map[string]string{}
			for _, lp := range m.Label {
				labels[lp.GetName()] = lp.GetValue()
			}
			idx, err := strconv.Atoi(labels["gpu"])
			if err != nil || idx < 0 {
				continue
			}
			var v float64
			switch {
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Untyped != nil:
				v = m.Untyped.GetValue()
			default:
				continue
			}
			if blank(v, fields[k].Kind) {
				continue
			}
			g := r.gpus[idx]
			if g == nil {
				g = &gpuValues{vals: make([]float64, len(fields))}
				for i := range g.vals {
					g.vals[i] = math.NaN()
				}
				r.gpus[idx] = g
			}
			g.vals[k] = v * fields[k].Scale
			id := identity{uuid: labels["UUID"], model: labels["modelName"], hostname: labels["Hostname"], pciBusID: labels["pci_bus_id"], driver: labels["DCGM_FI_DRIVER_VERSION"]}
			if id.hostname == "" {
				id.hostname = labels["hostname"] // newer exporters lowercase it
			}
			if g.id.uuid == "" {
				g.id = id
			}
		}
	}
	return r
}

// blank is one of DCGM's "no value" markers: NaN or infinite, the int64
// blanks (0x7ffffffffffffff0 and up), the FP64 blanks (2^47 and the few
// after it) and, for a gauge, the int32 ones (0x7ffffff0 and up), which a
// counter of millijoules can pass honestly.
func blank(v float64, k Kind) bool {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return true
	case v >= 9.2233720368547758e18:
		return true
	case v >= 140737488355328 && v <= 140737488355328+16:
		return true
	case k != Counter && v >= 2147483632 && v <= 2147483647:
		return true
	}
	return false
}
