// Package servermetrics scrapes a server's Prometheus /metrics during a run
// and summarises what moved: for gauges the average, maximum and p99 of the
// scraped values, for counters the increase and its rate, for histograms
// the percentiles of the observations made during the run, interpolated
// within buckets as Prometheus's histogram_quantile does. Series of one
// family are summed. Parsing is the Prometheus text-format library's.
package servermetrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one scrape.
type Sample struct {
	At       time.Time
	Families map[string]*dto.MetricFamily
}

// Fetch scrapes url once.
func Fetch(ctx context.Context, c *http.Client, url string) (*Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: not Prometheus text: %w", url, err)
	}
	return &Sample{At: time.Now(), Families: fams}, nil
}

// Scrape fetches url every interval until ctx ends, keeping at most max
// samples (later ones replace the oldest half's every other sample, so a
// long run stays bounded). A failed scrape is counted and skipped.
func Scrape(ctx context.Context, c *http.Client, url string, interval time.Duration, max int) (samples []*Sample, failures int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		sctx, cancel := context.WithTimeout(context.Background(), interval+2*time.Second)
		s, err := Fetch(sctx, c, url)
		cancel()
		if err != nil {
			failures++
		} else {
			samples = append(samples, s)
			if len(samples) > max {
				kept := samples[:0]
				for i, x := range samples {
					if i%2 == 0 || i >= len(samples)/2 {
						kept = append(kept, x)
					}
				}
				samples = kept
			}
		}
		select {
		case <-ctx.Done():
			// One last scrape, so counters cover the whole run.
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if s, err := Fetch(fctx, c, url); err == nil {
				samples = append(samples, s)
			} else {
				failures++
			}
			cancel()
			return samples, failures
		case <-t.C:
		}
	}
}

// Summary is one metric family over the run.
type Summary struct {
	Type  string   `json:"type"`
	Help  string   `json:"help,omitempty"`
	Avg   *float64 `json:"avg,omitempty"`
	Max   *float64 `json:"max,omitempty"`
	P50   *float64 `json:"p50,omitempty"`
	P90   *float64 `json:"p90,omitempty"`
	P99   *float64 `json:"p99,omitempty"`
	Delta *float64 `json:"delta,omitempty"`
	Rate  *float64 `json:"rate,omitempty"` // per second
	Count *float64 `json:"count,omitempty"`
}

func f(v float64) *float64 { return &v }

// Summarize turns the samples (oldest first) into a summary per family.
func Summarize(samples []*Sample) map[string]Summary {
	out := map[string]Summary{}
	if len(samples) == 0 {
		return out
	}
	first, last := samples[0], samples[len(samples)-1]
	span := last.At.Sub(first.At).Seconds()
	for name, fam := range last.Families {
		s := Summary{Type: fam.GetType().String(), Help: fam.GetHelp()}
		switch fam.GetType() {
		case dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
			var vals []float64
			for _, smp := range samples {
				if fm, ok := smp.Families[name]; ok {
					vals = append(vals, sumValues(fm))
				}
			}
			sort.Float64s(vals)
			sum := 0.0
			for _, v := range vals {
				sum += v
			}
			s.Avg, s.Max = f(sum/float64(len(vals))), f(vals[len(vals)-1])
			s.P99 = f(vals[max(0, int(math.Ceil(0.99*float64(len(vals))))-1)])
		case dto.MetricType_COUNTER:
			d := increase(samples, name)
			s.Delta = f(d)
			if span > 0 {
				s.Rate = f(d / span)
			}
		case dto.MetricType_HISTOGRAM:
			b1, c1 := buckets(fam)
			b0, c0 := buckets(first.Families[name])
			// A count that went down means the server restarted: the last
			// scrape's observations are then all the run's that it kept.
			if len(c0) == 0 || c0[len(c0)-1] <= c1[len(c1)-1] {
				for i := range c1 {
					if i < len(c0) && b0[i] == b1[i] {
						c1[i] -= c0[i]
					}
				}
			}
			if n := c1[len(c1)-1]; n > 0 {
				s.Count = f(n)
				// With no finite bucket there is nothing to interpolate
				// in: the count stands, the percentiles are left out.
				if len(b1) > 1 {
					s.P50, s.P90, s.P99 = f(quantile(0.5, b1, c1)), f(quantile(0.9, b1, c1)), f(quantile(0.99, b1, c1))
				}
			}
		default:
			continue
		}
		out[name] = s
	}
	return out
}

// increase is a counter family's increase over the samples, as
// Prometheus's increase() counts it: a value lower than the one before is
// a reset (the server restarted), after which the counter counts from zero.
func increase(samples []*Sample, name string) float64 {
	d, prev := 0.0, sumValues(samples[0].Families[name])
	for _, smp := range samples[1:] {
		fm, ok := smp.Families[name]
		if !ok {
			continue
		}
		v := sumValues(fm)
		if v >= prev {
			d += v - prev
		} else {
			d += v
		}
		prev = v
	}
	return d
}

// sumValues adds up a gauge's or counter's series.
func sumValues(fam *dto.MetricFamily) float64 {
	if fam == nil {
		return 0
	}
	v := 0.0
	for _, m := range fam.Metric {
		switch {
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Untyped != nil:
			v += m.Untyped.GetValue()
		}
	}
	return v
}

// buckets returns a histogram's upper bounds and cumulative counts, summed
// over its series; the last bound is +Inf.
func buckets(fam *dto.MetricFamily) ([]float64, []float64) {
	if fam == nil {
		return nil, nil
	}
	acc := map[float64]float64{}
	total := 0.0
	for _, m := range fam.Metric {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		for _, b := range h.Bucket {
			acc[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		total += float64(h.GetSampleCount())
	}
	acc[math.Inf(1)] = total
	bounds := make([]float64, 0, len(acc))
	for b := range acc {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	counts := make([]float64, len(bounds))
	for i, b := range bounds {
		counts[i] = acc[b]
	}
	return bounds, counts
}

// quantile interpolates linearly within the bucket holding rank q·n, as
// Prometheus's histogram_quantile does; a rank in the +Inf bucket gives
// the highest finite bound.
func quantile(q float64, bounds, counts []float64) float64 {
	n := counts[len(counts)-1]
	rank := q * n
	for i, c := range counts {
		if c < rank {
			continue
		}
		if math.IsInf(bounds[i], 1) {
			return bounds[i-1] // the caller gives at least one finite bound
		}
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = bounds[i-1], counts[i-1]
		}
		if c == below {
			return bounds[i]
		}
		return lo + (bounds[i]-lo)*(rank-below)/(c-below)
	}
	return bounds[len(bounds)-1]
}
