package charts

import (
	"cmp"
	"errors"
	"fmt"
	"sort"

	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

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
	c.Plot = newPlot(c.Title, "load ("+cmp.Or(e.Unit, "requests/s")+", log scale)", "share of requests meeting every objective", o)
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
