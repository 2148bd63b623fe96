package charts

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

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
