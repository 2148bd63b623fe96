package metrics

import (
	"fmt"
	"maps"
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/internal/record"
)

// series is one distribution: an overall histogram, one per window, and
// exact running moments (for avg and std).
//
// A window histogram takes ~190 KB whatever it holds, so a long run would
// hold them all: 11 series at 5-s windows is 1.5 GB an hour. Only the
// newest liveWindows stay open; an older one is sealed (kept as the
// compressed encoding run.json stores, a few KB) and opened again only if
// a record ends in it late.
type series struct {
	unit, hdrUnit string
	scale         float64 // summary = hdr value / scale
	lo, hi        int64
	all           *hdr.Histogram
	windows       []*hdr.Histogram // open windows; nil when sealed or never used
	sealed        []string         // a sealed window's encoding
	open          []int            // which windows are open
	newest        int
	n             int64
	mean, m2      float64
}

// liveWindows is how many of the newest windows a series keeps open.
const liveWindows = 3

func newSeries(unit, hdrUnit string, scale float64, hi int64) *series {
	return &series{unit: unit, hdrUnit: hdrUnit, scale: scale, lo: 1, hi: hi, all: hdr.New(1, hi, 3)}
}

func (s *series) add(v float64, window int) {
	iv := int64(math.Round(v * s.scale))
	iv = max(0, min(iv, s.hi))
	_ = s.all.RecordValue(iv)
	for len(s.windows) <= window {
		s.windows = append(s.windows, nil)
		s.sealed = append(s.sealed, "")
	}
	h := s.windows[window]
	if h == nil {
		h = hdr.New(s.lo, s.hi, 3)
		if s.sealed[window] != "" {
			if old, err := hdr.Decode([]byte(s.sealed[window])); err == nil {
				h = old
			}
			s.sealed[window] = ""
		}
		s.windows[window] = h
		s.open = append(s.open, window)
	}
	_ = h.RecordValue(iv)
	if window > s.newest {
		s.newest = window
		s.seal(window - liveWindows)
	}
	s.n++
	d := v - s.mean
	s.mean += d / float64(s.n)
	s.m2 += d * (v - s.mean)
}

// seal encodes and closes every open window before w.
func (s *series) seal(w int) {
	keep := s.open[:0]
	for _, i := range s.open {
		if i >= w {
			keep = append(keep, i)
			continue
		}
		b, _ := s.windows[i].Encode(hdr.V2CompressedEncodingCookieBase)
		s.sealed[i], s.windows[i] = string(b), nil
	}
	s.open = keep
}

// window is window i's encoding.
func (s *series) window(i int) string {
	switch {
	case s.windows[i] != nil:
		b, _ := s.windows[i].Encode(hdr.V2CompressedEncodingCookieBase)
		return string(b)
	case s.sealed[i] != "":
		return s.sealed[i]
	}
	b, _ := hdr.New(s.lo, s.hi, 3).Encode(hdr.V2CompressedEncodingCookieBase)
	return string(b)
}

// Aggregator folds records into histograms. It is not safe for concurrent
// use: the controller feeds it from its single draining goroutine.
type Aggregator struct {
	Window  time.Duration
	SLOs    []SLO
	FromDue bool // open loop: also record latencies from the due time
	// ServerCounts takes ISL and OSL from the server's usage when a
	// response carried one (--use-server-token-count).
	ServerCounts bool
	// ItemUnit names what a non-token endpoint's answers hold (inputs,
	// passages, images): with it, their count a second is the item
	// throughput, in that unit.
	ItemUnit string

	dists     map[string]*series
	lag       *series // schedule lag, sent − due: the tool's own health
	counts    Counts
	errMsgs   map[string]string
	firstSent int64
	lastEnd   int64
	any       bool
	totalISL  int64
	totalOSL  int64
	winTokens []float64
	winOK     []float64
	items     int64
	winItems  []float64
	winGood   []float64

	islMismatch, oslMismatch, short, noUsage, connRetries int

	sent             int
	slotWaits        int
	minDue, maxDue   int64
	minSent, maxSent int64
}

// NewAggregator returns an empty aggregator with window length w.
func NewAggregator(w time.Duration, slos []SLO) *Aggregator {
	const hour = int64(time.Hour / time.Microsecond)
	a := &Aggregator{Window: w, SLOs: slos, errMsgs: map[string]string{}}
	a.counts.ErrorsByKind = map[string]int{}
	a.dists = map[string]*series{}
	for _, name := range []string{TTFT, TTST, ITL, ICL, TTFTFromDue, RequestLatencyFromDue, RequestLatency, TTFTFromWrite, ConnSetup} {
		a.dists[name] = newSeries(unit(name), "us", 1000, hour)
	}
	a.dists[ISL] = newSeries(unit(ISL), "tokens", 1, 1<<30)
	a.dists[OSL] = newSeries(unit(OSL), "tokens", 1, 1<<30)
	a.dists[ReasoningTokens] = newSeries(unit(ReasoningTokens), "tokens", 1, 1<<30)
	a.dists[TTFO] = newSeries(unit(TTFO), "us", 1000, hour)
	a.dists[PerUser] = newSeries(unit(PerUser), "mtokens/sec/user", 1000, 1<<40)
	a.lag = newSeries("ms", "us", 1000, hour)
	return a
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// countError counts a failed request by kind, and a cancelled one by cause.
func (a *Aggregator) countError(r *record.Record) {
	if r.ErrKind == record.ErrCancelled {
		a.counts.Cancelled++
		if r.CancelCause != "" {
			if a.counts.CancelledBy == nil {
				a.counts.CancelledBy = map[string]int{}
			}
			a.counts.CancelledBy[r.CancelCause]++
		}
	}
	a.counts.Errors++
	a.counts.ErrorsByKind[r.ErrKind]++
	if _, ok := a.errMsgs[r.ErrKind]; !ok {
		a.errMsgs[r.ErrKind] = r.ErrMsg
	}
}

// Add folds one record in.
func (a *Aggregator) Add(r *record.Record) {
	if r.Warmup {
		a.counts.Warmup++
		return
	}
	a.counts.Requests++
	if r.ErrKind == record.ErrCancelled && r.CancelCause == record.CancelUnsent {
		// Planned and never sent: counted, but in no timing.
		a.countError(r)
		return
	}
	if !a.any || r.Sent < a.firstSent {
		a.firstSent = r.Sent
	}
	if !a.any || r.End > a.lastEnd {
		a.lastEnd = r.End
	}
	a.any = true
	if r.Sent > 0 || r.Due > 0 {
		a.lag.add(ms(max(0, r.Sent-r.Due)), 0)
		if a.sent == 0 {
			a.minDue, a.maxDue, a.minSent, a.maxSent = r.Due, r.Due, r.Sent, r.Sent
		}
		a.sent++
		a.minDue, a.maxDue = min(a.minDue, r.Due), max(a.maxDue, r.Due)
		a.minSent, a.maxSent = min(a.minSent, r.Sent), max(a.maxSent, r.Sent)
	}
	if r.SlotWait {
		a.slotWaits++
	}
	if r.Retried {
		a.connRetries++
	}
	if !r.OK() {
		a.countError(r)
		return
	}
	a.counts.OK++
	r = a.counted(r)
	w := 0
	if a.Window > 0 && r.End > 0 {
		w = int(r.End / int64(a.Window))
	}
	vals := RecordMetrics(r)
	if !a.FromDue {
		delete(vals, TTFTFromDue)
		delete(vals, RequestLatencyFromDue)
	}
	for name, v := range vals {
		if name == ICL {
			continue
		}
		a.dists[name].add(v, w)
	}
	for i := 1; i < len(r.Chunks); i++ {
		a.dists[ICL].add(ms(r.Chunks[i]-r.Chunks[i-1]), w)
	}
	a.totalISL += int64(r.ISL)
	a.totalOSL += int64(r.OSL)
	grow := func(s *[]float64, w int) {
		for len(*s) <= w {
			*s = append(*s, 0)
		}
	}
	grow(&a.winTokens, w)
	grow(&a.winOK, w)
	grow(&a.winGood, w)
	grow(&a.winItems, w)
	a.items += int64(r.Items)
	a.winItems[w] += float64(r.Items)
	// Tokens count in the window they arrived in (a stream's OSL spread
	// evenly over its chunks), not all at the request's end: a closed loop
	// whose requests end in bursts still streams tokens at a steady rate.
	if n := len(r.Chunks); n > 0 && r.OSL > 0 && a.Window > 0 {
		per := float64(r.OSL) / float64(n)
		for _, t := range r.Chunks {
			cw := int(max(t, 0) / int64(a.Window))
			grow(&a.winTokens, cw)
			a.winTokens[cw] += per
		}
	} else {
		a.winTokens[w] += float64(r.OSL)
	}
	a.winOK[w]++
	if Good(vals, a.SLOs) {
		a.counts.Good++
		a.winGood[w]++
	}
}

// counted returns r with the ISL and OSL the metrics use, and tallies where
// the client's and the server's counts disagree.
func (a *Aggregator) counted(r *record.Record) *record.Record {
	differs := func(c, s int) bool { return s > 0 && math.Abs(float64(c-s)) > 0.1*float64(s) }
	if differs(r.ISL, r.ServerISL) {
		a.islMismatch++
	}
	if differs(r.OSL, r.ServerOSL) {
		a.oslMismatch++
	}
	rr := *r
	if a.ServerCounts {
		if r.ServerOSL > 0 {
			rr.ISL, rr.OSL = r.ServerISL, r.ServerOSL
		} else {
			a.noUsage++
		}
	}
	if rr.MaxTokens > 0 && rr.OSL < rr.MaxTokens {
		a.short++
	}
	return &rr
}

// RecordMetrics computes one successful record's per-request metrics, in
// display units (ms, tokens, tokens/sec/user). Metrics that don't apply
// (TTFT when not streaming, ITL with one token) are absent.
func RecordMetrics(r *record.Record) map[string]float64 {
	out := map[string]float64{ISL: float64(r.ISL), OSL: float64(r.OSL)}
	if r.NewConn && r.Connected >= r.Sent && r.Sent > 0 {
		out[ConnSetup] = ms(r.Connected - r.Sent)
	}
	if r.ReasoningTokens > 0 {
		out[ReasoningTokens] = float64(r.ReasoningTokens)
		if r.Streaming && r.FirstOutput >= r.Sent && r.FirstOutput > 0 {
			out[TTFO] = ms(r.FirstOutput - r.Sent)
		}
	} else if r.Streaming && len(r.Chunks) > 0 {
		out[TTFO] = ms(r.FirstToken - r.Sent) // no reasoning: the first token is the answer's
	}
	if r.Streaming && len(r.Chunks) > 0 && r.Written > 0 && r.FirstToken >= r.Written {
		out[TTFTFromWrite] = ms(r.FirstToken - r.Written)
	}
	if r.Streaming && len(r.Chunks) > 0 {
		last := r.Chunks[len(r.Chunks)-1]
		ttft := r.FirstToken - r.Sent
		lat := last - r.Sent
		out[TTFT] = ms(ttft)
		out[RequestLatency] = ms(lat)
		out[TTFTFromDue] = ms(r.FirstToken - r.Due)
		out[RequestLatencyFromDue] = ms(last - r.Due)
		if len(r.Chunks) > 1 {
			out[TTST] = ms(r.Chunks[1] - r.Chunks[0])
		}
		if r.OSL > 1 {
			itl := float64(lat-ttft) / float64(r.OSL-1)
			out[ITL] = itl / 1e6
			if itl > 0 {
				out[PerUser] = 1e9 / itl
			}
		}
	} else {
		out[RequestLatency] = ms(r.End - r.Sent)
		out[RequestLatencyFromDue] = ms(r.End - r.Due)
	}
	return out
}

// Summary computes the run summary.
func (a *Aggregator) Summary() *Summary {
	s := &Summary{Counts: a.counts, Metrics: map[string]Metric{},
		FirstSent: a.firstSent, LastEnd: a.lastEnd, TotalISL: a.totalISL, TotalOSL: a.totalOSL,
		Sent: a.sent, SlotWaits: a.slotWaits, ConnRetries: a.connRetries,
		DueSpan: float64(a.maxDue-a.minDue) / 1e9, SentSpan: float64(a.maxSent-a.minSent) / 1e9}
	if len(a.errMsgs) > 0 {
		s.Counts.ErrorExamples = maps.Clone(a.errMsgs)
	}
	if a.any {
		s.DurationS = float64(a.lastEnd-a.firstSent) / 1e9
	}
	ws := a.Window.Seconds()
	for name, sr := range a.dists {
		if sr.n == 0 {
			continue
		}
		s.Metrics[name] = Metric{Dist: sr.dist(ws)}
	}
	ok := a.counts.OK
	if a.islMismatch > 0 {
		s.TokenWarnings = append(s.TokenWarnings, fmt.Sprintf("%d of %d requests: the client's input count differs from the server's usage by more than 10%% (different tokenizers?)", a.islMismatch, ok))
	}
	if a.oslMismatch > 0 {
		s.TokenWarnings = append(s.TokenWarnings, fmt.Sprintf("%d of %d requests: the client's output count differs from the server's usage by more than 10%%", a.oslMismatch, ok))
	}
	if a.short > 0 {
		s.TokenWarnings = append(s.TokenWarnings, fmt.Sprintf("%d of %d requests ended before their max_tokens (the model stopped early: add ignore_eos:true to --extra-inputs for fixed lengths)", a.short, ok))
	}
	if a.ServerCounts && a.noUsage > 0 {
		s.TokenWarnings = append(s.TokenWarnings, fmt.Sprintf("%d of %d requests had no usage from the server: their client counts were used", a.noUsage, ok))
	}
	if a.lag.n > 0 {
		s.Lag = a.lag.dist(0)
		s.Lag.Windows = nil
	}
	rate := func(unit string, total float64, per []float64) Metric {
		r := &Rate{Unit: unit, WindowS: ws}
		if s.DurationS > 0 {
			r.Value = total / s.DurationS
		}
		r.Windows = windowRates(per, ws, float64(a.lastEnd)/1e9)
		return Metric{Rate: r}
	}
	if a.counts.OK > 0 {
		if a.totalOSL > 0 { // (an embeddings run generates no tokens: no token rate, rather than 0)
			s.Metrics[OutputTput] = rate(unit(OutputTput), float64(a.totalOSL), a.winTokens)
		}
		s.Metrics[RequestTput] = rate(unit(RequestTput), float64(a.counts.OK), a.winOK)
		if a.ItemUnit != "" && a.items > 0 {
			s.Metrics[ItemTput] = rate(a.ItemUnit+"/sec", float64(a.items), a.winItems)
		}
		if len(a.SLOs) > 0 {
			s.Metrics[Goodput] = rate(unit(Goodput), float64(a.counts.Good), a.winGood)
		}
	}
	return s
}

func (sr *series) dist(windowS float64) *Dist {
	d := HistDist(sr.unit, sr.hdrUnit, sr.scale, sr.all)
	d.Count, d.WindowS = sr.n, windowS
	d.Avg = sr.mean
	d.Std = 0
	if sr.n > 1 {
		d.Std = math.Sqrt(sr.m2 / float64(sr.n))
	}
	for i := range sr.windows {
		d.Windows = append(d.Windows, sr.window(i))
	}
	return d
}

// HistDist summarises a histogram kept elsewhere (values are hdr units;
// summary = value / scale). Its avg and std are the histogram's, to its
// precision.
func HistDist(unit, hdrUnit string, scale float64, h *hdr.Histogram) *Dist {
	d := &Dist{Unit: unit, HDRUnit: hdrUnit, Scale: scale, Count: h.TotalCount()}
	d.Avg, d.Std = h.Mean()/scale, h.StdDev()/scale
	d.Min = float64(h.Min()) / scale
	d.Max = float64(h.Max()) / scale
	for _, p := range Percentiles {
		*d.field(p.Name) = float64(h.ValueAtQuantile(p.Q)) / scale
	}
	b, _ := h.Encode(hdr.V2CompressedEncodingCookieBase)
	d.HDR = string(b)
	return d
}

// windowRates turns per-window counts into rates. The last window ends at
// the run's last record, not at a window edge; one shorter than half a
// window is folded into the one before (its few events over a sliver of
// time would make a wild rate), so every rate covers at least half a
// window.
func windowRates(per []float64, ws, endS float64) []float64 {
	if len(per) == 0 || ws <= 0 {
		return make([]float64, len(per))
	}
	n := len(per)
	last := endS - float64(n-1)*ws // the last window's span
	counts := append([]float64(nil), per...)
	if n > 1 && last < ws/2 {
		counts[n-2] += counts[n-1]
		counts = counts[:n-1]
		last += ws
		n--
	}
	out := make([]float64, n)
	for i, v := range counts {
		span := ws
		if i == n-1 {
			span = last
		}
		if span > 0 {
			out[i] = v / span
		}
	}
	return out
}
