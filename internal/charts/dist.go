package charts

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

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
