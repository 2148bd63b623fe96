package charts

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/aiperf-action/aiperf-action/internal/capacity"
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
	MaxPoints   int  // most points a series draws (LTTB beyond it); 0: 4000
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

func overTime(r *Run, o Options, name, title, y string, v func(*Req) (float64, bool)) (*Chart, error) {
	c := &Chart{Name: name, Title: title}
	pts := make(plotter.XYs, 0, len(r.Reqs))
	for i := range r.Reqs {
		q := &r.Reqs[i]
		if val, ok := v(q); ok && !math.IsNaN(val) && !math.IsInf(val, 0) {
			pts = append(pts, plotter.XY{X: float64(q.Sent) / 1e9, Y: val})
		}
	}
	if len(pts) == 0 {
		return c, errors.New("no request has it")
	}
	c.Plot = newPlot(title, "time since the run's start (s)", y, o)
	if len(pts) <= o.maxPoints() {
		c.About = fmt.Sprintf("one point a request, at its send time: %d requests", len(pts))
		return c, scatter(c.Plot, pts, colour(0))
	}
	// Too many to draw one by one: each time bucket's median and p99 as
	// lines, and its least and greatest value as points, so that neither
	// the body nor an outlier is lost (thinning a noisy scatter by LTTB
	// alone draws two false bands, its minima and maxima).
	nb := max(10, o.maxPoints()/4)
	b := buckets(pts, nb)
	for i, s := range []struct {
		xy     plotter.XYs
		legend string
	}{{b.p50, "median"}, {b.p99, "p99"}} {
		if err := line(c.Plot, s.xy, colour(i), s.legend); err != nil {
			return c, err
		}
	}
	for _, xy := range []plotter.XYs{b.min, b.max} {
		if err := scatter(c.Plot, xy, colour(7)); err != nil {
			return c, err
		}
	}
	c.About = fmt.Sprintf("%d requests in %d buckets of send time: each bucket's median and p99 (lines), least and greatest (grey points)", len(pts), len(b.p50))
	return c, nil
}

// bucketed is a series summarised over buckets of X.
type bucketed struct{ p50, p99, min, max plotter.XYs }

// buckets splits pts (sorted by X) into n runs of equal count and
// summarises each at its mean X.
func buckets(pts plotter.XYs, n int) bucketed {
	var b bucketed
	vals := make([]float64, 0, len(pts)/n+1)
	for i := 0; i < n; i++ {
		lo, hi := i*len(pts)/n, (i+1)*len(pts)/n
		if hi <= lo {
			continue
		}
		vals = vals[:0]
		x := 0.0
		for _, p := range pts[lo:hi] {
			vals = append(vals, p.Y)
			x += p.X
		}
		x /= float64(hi - lo)
		sort.Float64s(vals)
		q := func(f float64) float64 { return vals[min(len(vals)-1, int(f*float64(len(vals))))] }
		b.p50 = append(b.p50, plotter.XY{X: x, Y: q(0.5)})
		b.p99 = append(b.p99, plotter.XY{X: x, Y: q(0.99)})
		b.min = append(b.min, plotter.XY{X: x, Y: vals[0]})
		b.max = append(b.max, plotter.XY{X: x, Y: vals[len(vals)-1]})
	}
	return b
}

// dispersed is AIPerf's dispersed throughput: each request's output tokens
// spread evenly over its generation (first token to last), none during
// its prefill, summed over the requests at each instant.
func dispersed(r *Run, o Options) (*Chart, error) {
	c := &Chart{Name: "dispersed_throughput_over_time", Title: "Dispersed output token throughput over time"}
	var t0, t1 int64 = math.MaxInt64, math.MinInt64
	for i := range r.Reqs {
		q := &r.Reqs[i]
		if q.OK() && q.OSL > 0 && q.Last > q.First && q.First != 0 {
			t0, t1 = min(t0, q.First), max(t1, q.Last)
		}
	}
	if t0 >= t1 {
		return c, errors.New("no request has a first and a last token apart")
	}
	const bins = 600
	w := float64(t1-t0) / bins
	diff := make([]float64, bins+1) // full bins, as differences
	part := make([]float64, bins)   // partial bins at each request's ends
	for i := range r.Reqs {
		q := &r.Reqs[i]
		if !(q.OK() && q.OSL > 0 && q.Last > q.First && q.First != 0) {
			continue
		}
		rate := float64(q.OSL) / (float64(q.Last-q.First) / 1e9)
		a, b := float64(q.First-t0)/w, float64(q.Last-t0)/w
		ia, ib := min(int(a), bins-1), min(int(b), bins-1)
		if ia == ib {
			part[ia] += rate * (b - a)
			continue
		}
		part[ia] += rate * (float64(ia+1) - a)
		part[ib] += rate * (b - float64(ib))
		diff[ia+1] += rate
		diff[ib] -= rate
	}
	pts := make(plotter.XYs, bins)
	run := 0.0
	for i := 0; i < bins; i++ {
		run += diff[i]
		pts[i] = plotter.XY{X: (float64(t0) + (float64(i)+0.5)*w) / 1e9, Y: run + part[i]}
	}
	c.About = fmt.Sprintf("each request's output tokens spread evenly from its first token to its last (AIPerf's definition), in %d bins of %.3g s", bins, w/1e9)
	c.Plot = newPlot(c.Title, "time since the run's start (s)", "output tokens/s", o)
	c.Plot.Y.Min = 0
	return c, line(c.Plot, pts, colour(0), "")
}

// segments draws many horizontal bars at once: a timeline's requests.
type segments struct {
	x0, x1, y []float64
	c         []color.Color
	width     vg.Length
}

func (s *segments) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for i := range s.x0 {
		ls := draw.LineStyle{Color: s.c[i], Width: s.width}
		c.StrokeLine2(ls, tx(s.x0[i]), ty(s.y[i]), tx(s.x1[i]), ty(s.y[i]))
	}
}

func (s *segments) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i := range s.x0 {
		xmin, xmax = math.Min(xmin, s.x0[i]), math.Max(xmax, s.x1[i])
		ymin, ymax = math.Min(ymin, s.y[i]), math.Max(ymax, s.y[i])
	}
	return xmin, xmax, ymin - 1, ymax + 1
}

// timeline is AIPerf's ttft_timeline, as swim lanes by slot: the first
// requests (by when they were due), each put in the first lane free when
// it became due (a concurrency slot, in a closed loop; in an open loop the
// lanes are as many as were ever waiting or in flight at once), waiting
// from due to sent (grey), in prefill to the first token (orange),
// decoding to the last (blue), a failure red.
func timeline(r *Run, o Options) (*Chart, error) {
	c := &Chart{Name: "ttft_timeline", Title: "Request timeline, by slot"}
	n := min(len(r.Reqs), o.timelineMax())
	idx := make([]int, len(r.Reqs))
	for i := range idx {
		idx[i] = i
	}
	start := func(q *Req) int64 { return min(q.Due, q.Sent) }
	sort.SliceStable(idx, func(a, b int) bool { return start(&r.Reqs[idx[a]]) < start(&r.Reqs[idx[b]]) })
	idx = idx[:n]
	var free []int64 // each lane's end
	lane := func(q *Req) int {
		for l, end := range free {
			if end <= start(q) {
				free[l] = q.End
				return l
			}
		}
		free = append(free, q.End)
		return len(free) - 1
	}
	s := &segments{}
	grey, orange, blue, red := color.RGBA{0xa0, 0xa0, 0xa0, 0xff}, colour(2), colour(1), colour(3)
	seg := func(a, b int64, y int, col color.Color) {
		if b > a {
			s.x0, s.x1, s.y, s.c = append(s.x0, float64(a)/1e9), append(s.x1, float64(b)/1e9), append(s.y, float64(y)), append(s.c, col)
		}
	}
	for _, i := range idx {
		q := &r.Reqs[i]
		y := lane(q)
		seg(q.Due, q.Sent, y, grey)
		switch {
		case !q.OK():
			seg(q.Sent, q.End, y, red)
		case q.First != 0:
			seg(q.Sent, q.First, y, orange)
			seg(q.First, max(q.Last, q.First), y, blue)
		default:
			seg(q.Sent, q.End, y, blue)
		}
	}
	if len(s.x0) == 0 {
		return c, errors.New("no request has a span")
	}
	s.width = vg.Points(math.Max(0.6, math.Min(6, 200/float64(len(free)))))
	c.Plot = newPlot(c.Title, "time since the run's start (s)", "slot", o)
	c.Plot.Legend.Left = true
	c.Plot.Add(s)
	for _, l := range []struct {
		name string
		col  color.Color
	}{{"waiting (due → sent)", grey}, {"prefill (sent → first token)", orange}, {"decode (first → last token)", blue}, {"failed", red}} {
		c.Plot.Legend.Add(l.name, legendSwatch{l.col})
	}
	c.About = fmt.Sprintf("the first %d of %d requests (by when each was due), in %d lanes: each request in the first lane free when it became due", n, len(r.Reqs), len(free))
	return c, nil
}

// scheduleLag is the tool's own health over the run: how late each
// request was sent after it was due (an open loop's queue for a slot
// included).
func scheduleLag(r *Run, o Options) (*Chart, error) {
	return overTime(r, o, "schedule_lag_over_time", "Schedule lag over time (the tool's health)", "sent − due (ms)", func(q *Req) (float64, bool) {
		return msOf(q.Sent - q.Due), q.Sent >= q.Due
	})
}

// legendSwatch is a legend thumbnail of a colour.
type legendSwatch struct{ c color.Color }

func (l legendSwatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(l.c, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// errorsOverTime counts failures by kind in each window (run.json's
// window, by when they ended); nil with no failure.
func errorsOverTime(r *Run, o Options) (*Chart, error) {
	failed := 0
	var t1 int64
	for i := range r.Reqs {
		q := &r.Reqs[i]
		if !q.OK() {
			failed++
		}
		t1 = max(t1, q.End)
	}
	if failed == 0 {
		return nil, nil
	}
	win := 1.0
	if d, ok := dist(r, metrics.RequestLatency); ok && d.WindowS > 0 {
		win = d.WindowS
	}
	bins := int(float64(t1)/1e9/win) + 1
	if bins > 2000 {
		win *= float64(bins) / 2000
		bins = 2000
	}
	counts := map[string][]float64{}
	for i := range r.Reqs {
		q := &r.Reqs[i]
		if q.OK() {
			continue
		}
		k := r.ErrKind(q)
		if counts[k] == nil {
			counts[k] = make([]float64, bins)
		}
		counts[k][min(bins-1, max(0, int(float64(q.End)/1e9/win)))]++
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	c := &Chart{Name: "errors_over_time", Title: "Failed requests over time, by kind"}
	c.Plot = newPlot(c.Title, "time since the run's start (s)", fmt.Sprintf("failed requests per %.3g s", win), o)
	for i, k := range kinds {
		pts := make(plotter.XYs, bins)
		for b := range pts {
			pts[b] = plotter.XY{X: (float64(b) + 0.5) * win, Y: counts[k][b]}
		}
		if err := line(c.Plot, pts, colour(3+i), k); err != nil {
			return c, err
		}
	}
	c.Plot.Y.Min = 0
	c.About = fmt.Sprintf("%d failed requests of %d, counted when each ended", failed, len(r.Reqs))
	return c, nil
}

// cdfPoints is a histogram's CDF: at each bucket's upper edge (in the
// metric's unit), the share of values at or below it.
func cdfPoints(h *hdr.Histogram, scale float64) plotter.XYs {
	var pts plotter.XYs
	total := h.TotalCount()
	if total == 0 || scale <= 0 {
		return nil
	}
	seen := int64(0)
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		seen += b.Count
		x := float64(b.To) / scale
		if x <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: x, Y: float64(seen) / float64(total)})
	}
	return pts
}

// cdf overlays each run's CDF of a metric, from run.json's histogram, on a
// log axis.
func cdf(runs []*Run, o Options, name, metric, label string) (*Chart, error) {
	var ls []cdfLine
	for i, r := range runs {
		legend := ""
		if len(runs) > 1 {
			legend = r.Label
		}
		ls = append(ls, cdfLine{r, colour(i), legend})
	}
	return cdfOf(&Chart{Name: name, Title: "CDF of " + label, About: "from run.json's HdrHistogram (3 significant figures): every request, no sampling"}, metric, label, ls, o)
}

// cdfLine is one run's line on a CDF chart.
type cdfLine struct {
	r      *Run
	col    color.Color
	legend string
}

// cdfOf draws c: each line's CDF of metric on a log axis.
func cdfOf(c *Chart, metric, label string, ls []cdfLine, o Options) (*Chart, error) {
	c.Plot = newPlot(c.Title, "", "share of requests at or below", o)
	unit, drawn := "", 0
	for _, l := range ls {
		u, ok, err := drawCDF(c.Plot, l.r, metric, l.col, l.legend)
		if err != nil {
			return c, err
		}
		if ok {
			unit, drawn = u, drawn+1
		}
	}
	if drawn == 0 {
		return c, errors.New("no run has it")
	}
	cdfAxes(c.Plot, label, unit)
	return c, nil
}

// drawCDF adds a run's CDF of a metric to p; false when the run has none.
func drawCDF(p *plot.Plot, r *Run, metric string, col color.Color, legend string) (unit string, ok bool, err error) {
	d, has := dist(r, metric)
	if !has {
		return "", false, nil
	}
	h, err := d.Histogram()
	if err != nil {
		return "", false, fmt.Errorf("%s: %s's histogram: %v", r.Label, metric, err)
	}
	pts := cdfPoints(h, d.Scale)
	if len(pts) == 0 {
		return "", false, nil
	}
	return d.Unit, true, line(p, pts, col, legend)
}

// cdfAxes sets a CDF's log value axis and its share axis.
func cdfAxes(p *plot.Plot, label, unit string) {
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
	p.X.Label.Text = fmt.Sprintf("%s (%s, log scale)", label, unit)
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = false // (a CDF leaves its lower right empty)
}

// timeslices is a metric's p50, p90 and p99 in each window of run.json.
func timeslices(r *Run, o Options, name, metric, label string) (*Chart, error) {
	d, _ := dist(r, metric)
	c := &Chart{Name: name, Title: label + " by time slice"}
	qs := []float64{50, 90, 99}
	series := make([]plotter.XYs, len(qs))
	for w, enc := range d.Windows {
		if enc == "" {
			continue
		}
		h, err := hdr.Decode([]byte(enc))
		if err != nil {
			return c, fmt.Errorf("window %d: %v", w, err)
		}
		if h.TotalCount() == 0 {
			continue
		}
		for i, q := range qs {
			series[i] = append(series[i], plotter.XY{X: (float64(w) + 0.5) * d.WindowS, Y: float64(h.ValueAtQuantile(q)) / d.Scale})
		}
	}
	if len(series[0]) == 0 {
		return c, errors.New("no window has a value")
	}
	c.Plot = newPlot(c.Title, fmt.Sprintf("time since the run's start (s), windows of %.3g s", d.WindowS), fmt.Sprintf("%s (%s)", label, d.Unit), o)
	for i, q := range qs {
		if err := line(c.Plot, series[i], colour(i), fmt.Sprintf("p%g", q)); err != nil {
			return c, err
		}
	}
	c.About = "each window's percentiles, from its own HdrHistogram in run.json"
	return c, nil
}

// Multi is the charts that set several runs side by side: AIPerf's TTFT
// against throughput, and each latency's CDFs overlaid.
func Multi(runs []*Run, o Options) (out []Chart, skipped []string) {
	add := func(c *Chart, err error) {
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", c.Name, err))
			return
		}
		out = append(out, *c)
	}
	add(ttftVsThroughput(runs, o))
	for _, m := range []struct{ name, metric, label string }{
		{"cdf_ttft", metrics.TTFT, "TTFT"}, {"cdf_itl", metrics.ITL, "ITL"}, {"cdf_latency", metrics.RequestLatency, "request latency"},
	} {
		add(cdf(runs, o, m.name, m.metric, m.label))
	}
	skipped = append(skipped, "pareto_curve_throughput_per_gpu_vs_latency, pareto_curve_throughput_per_gpu_vs_interactivity: throughput per GPU needs each run's GPU count, which only GPU telemetry gives; not drawn")
	return out, skipped
}

// ttftVsThroughput is AIPerf's ttft_vs_throughput: each run's TTFT p50 and
// p99 against its request throughput, in order of throughput.
func ttftVsThroughput(runs []*Run, o Options) (*Chart, error) {
	c := &Chart{Name: "ttft_vs_throughput", Title: "TTFT against request throughput"}
	type pt struct {
		x, p50, p99 float64
		label       string
	}
	var ps []pt
	unit := "ms"
	for _, r := range runs {
		d, ok := dist(r, metrics.TTFT)
		rt, ok2 := r.Run.Metrics[metrics.RequestTput]
		if !ok || !ok2 || rt.Rate == nil {
			continue
		}
		unit = d.Unit
		ps = append(ps, pt{rt.Rate.Value, d.P50, d.P99, r.Label})
	}
	if len(ps) == 0 {
		return c, errors.New("no run has both TTFT and request throughput (a streamed run)")
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].x < ps[j].x })
	c.Plot = newPlot(c.Title, "request throughput (requests/s)", "TTFT ("+unit+")", o)
	for i, s := range []struct {
		name string
		v    func(pt) float64
	}{{"p50", func(p pt) float64 { return p.p50 }}, {"p99", func(p pt) float64 { return p.p99 }}} {
		xy := make(plotter.XYs, len(ps))
		for k, p := range ps {
			xy[k] = plotter.XY{X: p.x, Y: s.v(p)}
		}
		if err := line(c.Plot, xy, colour(i), "TTFT "+s.name); err != nil {
			return c, err
		}
		if err := scatter(c.Plot, xy, colour(i)); err != nil {
			return c, err
		}
	}
	labels := make([]string, len(ps))
	xy := make(plotter.XYs, len(ps))
	for k, p := range ps {
		labels[k], xy[k] = p.label, plotter.XY{X: p.x, Y: p.p50}
	}
	if l, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: labels}); err == nil {
		c.Plot.Add(l)
	}
	c.About = fmt.Sprintf("%d runs, each a point at its request throughput", len(ps))
	return c, nil
}

// Attainment is a capacity search's picture: each load's attainment with
// its interval, the isotonic fit, the target, and the capacity's interval.
func Attainment(e capacity.Estimate, o Options) (*Chart, error) {
	c := &Chart{Name: "attainment_vs_load", Title: "Attainment of the objectives against load"}
	if len(e.Points) == 0 {
		return c, errors.New("no probe")
	}
	c.Plot = newPlot(c.Title, "load (requests/s, log scale)", "share of requests meeting every objective", o)
	c.Plot.X.Scale, c.Plot.X.Tick.Marker = plot.LogScale{}, logTicks{}
	pts := make(plotter.XYs, len(e.Points))
	fit := make(plotter.XYs, len(e.Points))
	bars := make(plotter.YErrors, len(e.Points))
	for i, p := range e.Points {
		pts[i] = plotter.XY{X: p.Load, Y: p.Attainment}
		fit[i] = plotter.XY{X: p.Load, Y: p.Fit}
		bars[i].Low, bars[i].High = p.Attainment-p.Lo, p.Hi-p.Attainment
	}
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{pts, bars})
	if err != nil {
		return c, err
	}
	eb.Color = colour(1)
	c.Plot.Add(eb)
	if err := scatter(c.Plot, pts, colour(1)); err != nil {
		return c, err
	}
	if err := line(c.Plot, fit, colour(0), "isotonic fit"); err != nil {
		return c, err
	}
	lo, hi := e.Points[0].Load, e.Points[len(e.Points)-1].Load
	if err := line(c.Plot, plotter.XYs{{X: lo, Y: e.Target}, {X: hi, Y: e.Target}}, colour(3), fmt.Sprintf("target %.3g%%", 100*e.Target)); err != nil {
		return c, err
	}
	if e.LoBounded && e.HiBounded {
		if err := line(c.Plot, plotter.XYs{{X: e.Lo, Y: 0.02}, {X: e.Hi, Y: 0.02}}, colour(2), fmt.Sprintf("capacity %.4g, interval %.4g to %.4g", e.Capacity, e.Lo, e.Hi)); err != nil {
			return c, err
		}
	}
	c.Plot.Y.Min, c.Plot.Y.Max = 0, 1.02
	c.Plot.Legend.Top, c.Plot.Legend.Left = false, true // (attainment falls to the right: the lower left is empty)
	c.About = "each load's attainment with its interval (simultaneous over the loads); " + e.String()
	return c, nil
}

// CompareCDF draws a metric's CDF for each baseline run in grey, the band
// the baseline spans, and each candidate run in colour over it.
func CompareCDF(base, cand []*Run, o Options, name, metric, label string) (*Chart, error) {
	grey := color.RGBA{0xb0, 0xb0, 0xb0, 0xff}
	var ls []cdfLine
	for i, r := range base {
		legend := ""
		if i == 0 {
			legend = fmt.Sprintf("baseline (%d runs)", len(base))
		}
		ls = append(ls, cdfLine{r, grey, legend})
	}
	for i, r := range cand {
		ls = append(ls, cdfLine{r, colour(i), "candidate " + r.Label})
	}
	return cdfOf(&Chart{Name: name, Title: "CDF of " + label + ": candidate over the baseline's runs",
		About: "from each run's HdrHistogram in run.json; grey: the baseline's runs"}, metric, label, ls, o)
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

// Trend is a statistic of the stored baseline runs in the order they were
// stored (labelled by the commit each ran), and the candidate's mean as a
// line across them: the baseline's trend by commit.
func Trend(name, title, unit string, labels []string, vals []float64, cand float64, candRuns int, o Options) (*Chart, error) {
	c := &Chart{Name: name, Title: title}
	if len(vals) == 0 {
		return c, errors.New("no baseline run has it")
	}
	c.Plot = newPlot(title, "stored baseline runs, oldest first, by commit", unit, o)
	pts := make(plotter.XYs, len(vals))
	for i, v := range vals {
		pts[i] = plotter.XY{X: float64(i), Y: v}
	}
	if err := line(c.Plot, pts, colour(7), "baseline runs"); err != nil {
		return c, err
	}
	if err := scatter(c.Plot, pts, colour(7)); err != nil {
		return c, err
	}
	if err := line(c.Plot, plotter.XYs{{X: 0, Y: cand}, {X: float64(len(vals) - 1), Y: cand}}, colour(0), fmt.Sprintf("this PR (mean of %d runs)", candRuns)); err != nil {
		return c, err
	}
	// Every commit's label where they fit, else every k-th.
	step := max(1, len(labels)/12)
	var ticks []plot.Tick
	for i, l := range labels {
		t := plot.Tick{Value: float64(i)}
		if i%step == 0 {
			t.Label = l
		}
		ticks = append(ticks, t)
	}
	c.Plot.X.Tick.Marker = plot.ConstantTicks(ticks)
	c.Plot.Y.Min = 0
	c.About = fmt.Sprintf("%d stored runs; the line across them is this PR's mean", len(vals))
	return c, nil
}

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

// histogram is a metric's distribution from run.json's HdrHistogram, in
// 40 bins even on a log axis: the share of requests in each.
func histogram(r *Run, o Options, name, metric, label string) (*Chart, error) {
	c := &Chart{Name: name, Title: "Histogram of " + label}
	d, _ := dist(r, metric)
	h, err := d.Histogram()
	if err != nil {
		return c, fmt.Errorf("%s's histogram: %v", metric, err)
	}
	lo, hi := float64(h.Min())/d.Scale, float64(h.Max())/d.Scale
	if !(lo > 0) || !(hi > lo) || h.TotalCount() == 0 {
		return c, errors.New("one value, or none above zero: nothing to spread")
	}
	const bins = 40
	counts := make([]float64, bins)
	step := math.Log(hi/lo) / bins
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		v := float64(b.From+b.To) / 2 / d.Scale
		i := 0
		if v > lo {
			i = min(bins-1, int(math.Log(v/lo)/step))
		}
		counts[i] += float64(b.Count)
	}
	pts := make(plotter.XYs, 0, bins+1)
	for i := 0; i < bins; i++ {
		pts = append(pts, plotter.XY{X: lo * math.Exp(float64(i)*step), Y: counts[i] / float64(h.TotalCount())})
	}
	pts = append(pts, plotter.XY{X: hi, Y: pts[bins-1].Y})
	c.Plot = newPlot(c.Title, fmt.Sprintf("%s (%s, log scale)", label, d.Unit), "share of requests", o)
	c.Plot.X.Scale, c.Plot.X.Tick.Marker = plot.LogScale{}, logTicks{}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return c, err
	}
	l.StepStyle, l.Color, l.Width = plotter.PostStep, colour(1), vg.Points(1.5)
	l.FillColor = color.NRGBA{0x1f, 0x77, 0xb4, 0x50}
	c.Plot.Add(l)
	c.Plot.Y.Min = 0
	c.About = fmt.Sprintf("%d requests in %d bins even on the log axis, from run.json's HdrHistogram", h.TotalCount(), bins)
	return c, nil
}

// loadOverTime is the load the server met: the requests in flight (sent,
// not ended) and, in an open loop, those due but not yet sent, each the
// mean over its bin of time.
func loadOverTime(r *Run, o Options) (*Chart, error) {
	c := &Chart{Name: "load_over_time", Title: "Load over time: requests in flight and waiting"}
	var t0, t1 int64 = math.MaxInt64, math.MinInt64
	for i := range r.Reqs {
		q := &r.Reqs[i]
		t0, t1 = min(t0, q.Due, q.Sent), max(t1, q.End)
	}
	if t0 >= t1 {
		return c, errors.New("no request has a span")
	}
	const bins = 600
	w := float64(t1-t0) / bins
	// Each span [a, b) adds its overlap with each bin, as a share of the
	// bin: full bins by differences, the two ends apart.
	spread := func(diff, part []float64, a, b int64) {
		if b <= a {
			return
		}
		x, y := float64(a-t0)/w, float64(b-t0)/w
		ia, ib := min(int(x), bins-1), min(int(y), bins-1)
		if ia == ib {
			part[ia] += y - x
			return
		}
		part[ia] += float64(ia+1) - x
		part[ib] += y - float64(ib)
		diff[ia+1]++
		diff[ib]--
	}
	flight, fpart := make([]float64, bins+1), make([]float64, bins)
	wait, wpart := make([]float64, bins+1), make([]float64, bins)
	waited := false
	for i := range r.Reqs {
		q := &r.Reqs[i]
		spread(flight, fpart, q.Sent, q.End)
		if q.Sent > q.Due {
			spread(wait, wpart, q.Due, q.Sent)
			waited = waited || q.Sent-q.Due > 1e6 // (drawn when some request waited a millisecond)
		}
	}
	series := func(diff, part []float64) plotter.XYs {
		pts := make(plotter.XYs, bins)
		run := 0.0
		for i := 0; i < bins; i++ {
			run += diff[i]
			pts[i] = plotter.XY{X: (float64(t0) + (float64(i)+0.5)*w) / 1e9, Y: run + part[i]}
		}
		return pts
	}
	c.Plot = newPlot(c.Title, "time since the run's start (s)", "requests (mean over each bin)", o)
	if err := line(c.Plot, series(flight, fpart), colour(0), "in flight (sent, not ended)"); err != nil {
		return c, err
	}
	if waited {
		if err := line(c.Plot, series(wait, wpart), colour(2), "due, not yet sent"); err != nil {
			return c, err
		}
	}
	c.Plot.Y.Min = 0
	c.About = fmt.Sprintf("from records.jsonl, in %d bins of %.3g s", bins, w/1e9)
	return c, nil
}
