package charts

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
)

// Chart is one picture: its file name (AIPerf's plot name where AIPerf
// has one) and what it draws.
type Chart struct {
	Name  string // file stem: ttft_over_time, cdf_ttft, …
	Title string
	About string // one line under it in a report: what it shows, and any thinning
	Plot  *plot.Plot
}

// Options say how to draw.
type Options struct {
	MaxPoints   int  // most requests a series draws one by one (buckets beyond it); 0: 4000
	TimelineMax int  // most requests a timeline draws; 0: 1000
	Dark        bool // AIPerf's --theme dark
}

func (o Options) maxPoints() int {
	if o.MaxPoints > 0 {
		return o.MaxPoints
	}
	return 4000
}

func (o Options) timelineMax() int {
	if o.TimelineMax > 0 {
		return o.TimelineMax
	}
	return 1000
}

// Colours: a palette that reads on light and dark, in series order.
var palette = []color.Color{
	color.RGBA{0x76, 0xb9, 0x00, 0xff}, // green
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, // blue
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, // orange
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, // red
	color.RGBA{0x94, 0x67, 0xbd, 0xff}, // purple
	color.RGBA{0x8c, 0x56, 0x4b, 0xff}, // brown
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, // pink
	color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, // grey
}

func colour(i int) color.Color { return palette[i%len(palette)] }

// newPlot is a plot with its title and axes, in the theme.
func newPlot(title, x, y string, o Options) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Title.Padding = vg.Points(6)
	p.Add(plotter.NewGrid())
	if o.Dark {
		bg, fg := color.RGBA{0x1e, 0x1e, 0x1e, 0xff}, color.RGBA{0xe6, 0xe6, 0xe6, 0xff}
		p.BackgroundColor = bg
		p.Title.TextStyle.Color = fg
		p.Legend.TextStyle.Color = fg
		for _, a := range []*plot.Axis{&p.X, &p.Y} {
			a.Color, a.Label.TextStyle.Color, a.Tick.Color, a.Tick.Label.Color = fg, fg, fg, fg
		}
	}
	p.Legend.Top = true
	return p
}

// msOf is a duration in ns as ms.
func msOf(ns int64) float64 { return float64(ns) / 1e6 }

func scatter(p *plot.Plot, pts plotter.XYs, c color.Color) error {
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	s.GlyphStyle.Color = c
	s.GlyphStyle.Radius = vg.Points(1.2)
	s.GlyphStyle.Shape = draw.CircleGlyph{}
	p.Add(s)
	return nil
}

func line(p *plot.Plot, pts plotter.XYs, c color.Color, legend string) error {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	p.Add(l)
	if legend != "" {
		p.Legend.Add(legend, l)
	}
	return nil
}

// Single is one run's charts, AIPerf's single-run set and more: the
// per-request series over time, the dispersed throughput, the request
// timeline, errors over time, each latency's CDF and its timeslices. What
// cannot be drawn is named in skipped with the reason.
func Single(r *Run, o Options) (out []Chart, skipped []string) {
	add := func(c *Chart, err error) {
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", c.Name, err))
			return
		}
		out = append(out, *c)
	}
	if r.Reqs == nil {
		skipped = append(skipped, "the charts over time: "+r.NoRecord)
	} else {
		for _, s := range []struct {
			name, title, y string
			v              func(q *Req) (float64, bool)
		}{
			{"ttft_over_time", "Time to first token over time", "TTFT (ms)", func(q *Req) (float64, bool) {
				return msOf(q.First - q.Sent), q.OK() && q.Streaming && q.First != 0
			}},
			{"itl_over_time", "Inter-token latency over time", "ITL (ms)", func(q *Req) (float64, bool) {
				return msOf(q.Last-q.First) / float64(q.OSL-1), q.OK() && q.Streaming && q.First != 0 && q.OSL > 1 && q.Last > q.First
			}},
			{"latency_over_time", "Request latency over time", "latency (ms)", func(q *Req) (float64, bool) {
				return msOf(q.Last - q.Sent), q.OK()
			}},
		} {
			add(overTime(r, o, s.name, s.title, s.y, s.v))
		}
		add(dispersed(r, o))
		add(loadOverTime(r, o))
		add(timeline(r, o))
		add(scheduleLag(r, o))
		if c, err := errorsOverTime(r, o); c != nil || err != nil {
			add(c, err)
		}
	}
	sc, sk := serverCharts(r, o)
	out, skipped = append(out, sc...), append(skipped, sk...)
	for _, m := range []struct{ name, metric, label string }{
		{"cdf_ttft", metrics.TTFT, "TTFT"}, {"cdf_itl", metrics.ITL, "ITL"}, {"cdf_latency", metrics.RequestLatency, "request latency"},
	} {
		if _, ok := dist(r, m.metric); !ok {
			continue
		}
		add(cdf([]*Run{r}, o, m.name, m.metric, m.label))
		add(histogram(r, o, "hist"+strings.TrimPrefix(m.name, "cdf"), m.metric, m.label))
	}
	for _, m := range []struct{ name, metric, label string }{
		{"timeslices_ttft", metrics.TTFT, "TTFT"}, {"timeslices_itl", metrics.ITL, "ITL"}, {"timeslices_latency", metrics.RequestLatency, "request latency"},
	} {
		if d, ok := dist(r, m.metric); !ok || len(d.Windows) < 2 {
			continue
		}
		add(timeslices(r, o, m.name, m.metric, m.label))
	}
	return out, skipped
}

func dist(r *Run, name string) (*metrics.Dist, bool) {
	m, ok := r.Run.Metrics[name]
	if !ok || m.Dist == nil || m.Dist.Count == 0 {
		return nil, false
	}
	return m.Dist, true
}

// logTicks labels a log axis at 1, 2 and 5 times each power of ten, with
// unlabelled ticks between (gonum's LogTicks labels powers of ten only,
// which leaves a latency axis of 20 to 600 ms one label).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	// Under two decades every mantissa is labelled, else 1, 2 and 5.
	every := math.Log10(hi/lo) < 1.3
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * p
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if every || m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
			}
			ts = append(ts, t)
		}
	}
	labelled := 0
	for _, t := range ts {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled < 2 {
		// A range narrower than the steps between round numbers: four
		// labels evenly spaced inside it on the log axis, to three figures.
		ts = ts[:0]
		for i := 0; i < 4; i++ {
			v := lo * math.Pow(hi/lo, (float64(i)+0.5)/4)
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 3, 64)})
		}
	}
	return ts
}
