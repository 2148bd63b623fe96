package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/internal/record"
)

const msNs = int64(time.Millisecond)

// rec makes a streaming record sent at sent ms whose n content chunks
// arrive at ttft, ttft+itl, ... ms after sending, one token each.
func rec(sent, ttft, itl int64, n int) record.Record {
	r := record.Record{Streaming: true, Sent: sent * msNs, Due: sent * msNs, ISL: 10, OSL: n}
	for k := 0; k < n; k++ {
		r.Chunks = append(r.Chunks, (sent+ttft+int64(k)*itl)*msNs)
	}
	r.FirstToken = r.Chunks[0]
	r.End = r.Chunks[n-1] + msNs
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRecordMetricsDefinitions(t *testing.T) {
	t.Parallel()
	r := rec(100, 20, 5, 11)
	m := RecordMetrics(&r)
	want := map[string]float64{
		TTFT:           20,
		TTST:           5,
		RequestLatency: 20 + 10*5, // to the last content chunk, not to End
		ITL:            5,         // (70 − 20) / (11 − 1)
		PerUser:        200,       // 1 / 5 ms
		OSL:            11,
		ISL:            10,
	}
	for k, v := range want {
		if !near(m[k], v) {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	one := rec(0, 20, 5, 1)
	m = RecordMetrics(&one)
	if _, ok := m[ITL]; ok {
		t.Error("ITL defined for a one-token response")
	}
	if _, ok := m[TTST]; ok {
		t.Error("TTST defined for a one-chunk response")
	}
	ns := record.Record{Sent: 0, End: 50 * msNs, OSL: 4, ISL: 2}
	m = RecordMetrics(&ns)
	if _, ok := m[TTFT]; ok || !near(m[RequestLatency], 50) {
		t.Errorf("non-streaming metrics %v", m)
	}
}

func TestAggregator(t *testing.T) {
	t.Parallel()
	slos, _ := ParseGoodput("time_to_first_token:25")
	a := NewAggregator(time.Second, slos)
	for i := int64(0); i < 10; i++ {
		r := rec(i*200, 20+i, 5, 11) // TTFT 20..29 ms
		a.Add(&r)
	}
	a.Add(&record.Record{Sent: 0, End: msNs, ErrKind: "http_500", ErrMsg: "boom"})
	a.Add(&record.Record{Sent: 0, End: msNs, ErrKind: "http_500", ErrMsg: "boom2"})
	w := rec(0, 1, 1, 3)
	w.Warmup = true
	a.Add(&w)
	s := a.Summary()
	if s.Counts.Requests != 12 || s.Counts.OK != 10 || s.Counts.Errors != 2 || s.Counts.ErrorsByKind["http_500"] != 2 || s.Counts.Warmup != 1 {
		t.Fatalf("counts %+v", s.Counts)
	}
	if s.Counts.ErrorExamples["http_500"] != "boom" {
		t.Errorf("example error %q", s.Counts.ErrorExamples["http_500"])
	}
	if s.Counts.Good != 6 { // TTFT 20..25 meet ≤ 25
		t.Errorf("good %d, want 6", s.Counts.Good)
	}
	ttft := s.Metrics[TTFT].Dist
	if ttft.Count != 10 || !near(ttft.Avg, 24.5) || ttft.Min != 20 || ttft.Max < 29 || ttft.Max > 29.02 {
		t.Errorf("ttft %+v", ttft)
	}
	h, err := ttft.Histogram()
	if err != nil || float64(h.ValueAtQuantile(50))/ttft.Scale != ttft.P50 {
		t.Errorf("hdr p50 mismatch: %v", err)
	}
	// Duration: first sent (0) to last end (1800+29+50+1 ms).
	dur := float64(1800+29+50+1) / 1000
	if !near(s.DurationS, dur) {
		t.Errorf("duration %v want %v", s.DurationS, dur)
	}
	if v := s.Metrics[OutputTput].Rate.Value; !near(v, 110/dur) {
		t.Errorf("output throughput %v want %v", v, 110/dur)
	}
	if v := s.Metrics[Goodput].Rate.Value; !near(v, 6/dur) {
		t.Errorf("goodput %v", v)
	}
	if n := len(s.Metrics[TTFT].Dist.Windows); n != 2 {
		t.Errorf("%d windows, want 2 (records end in [0,1s) and [1s,2s))", n)
	}
	icl := s.Metrics[ICL].Dist
	if icl.Count != 100 || math.Abs(icl.P50-5) > 0.005 { // HdrHistogram: 3 significant figures
		t.Errorf("icl count %d p50 %v", icl.Count, icl.P50)
	}
}

// A closed loop in lockstep ends its requests in bursts, but streams its
// tokens steadily: token throughput per window is steady when tokens count
// where they arrived, and a last sliver of a window is folded into the one
// before instead of making a wild rate of its own.
func TestTokenWindowsCreditArrivals(t *testing.T) {
	t.Parallel()
	const ms = int64(time.Millisecond)
	a := NewAggregator(250*time.Millisecond, nil)
	// 8 streams in lockstep: each request takes 175 ms (32 tokens, one per
	// ~5.5 ms), all 8 end together, 20 rounds: 3.5 s.
	for round := range 20 {
		for s := range 8 {
			sent := int64(round) * 175 * ms
			r := record.Record{Streaming: true, Sent: sent, Due: sent, ISL: 8, OSL: 32, Index: round*8 + s}
			for k := range 32 {
				r.Chunks = append(r.Chunks, sent+int64(k+1)*175*ms/32)
			}
			r.FirstToken, r.End = r.Chunks[0], r.Chunks[31]
			a.Add(&r)
		}
	}
	w := a.Summary().Metrics[OutputTput].Rate.Windows
	if len(w) != 14 {
		t.Fatalf("%d windows over 3.5 s of 250 ms, want 14", len(w))
	}
	lo, hi := w[0], w[0]
	for _, v := range w {
		lo, hi = min(lo, v), max(hi, v)
	}
	// 8 streams × 32 tokens / 175 ms = 1463 tokens/s in every window.
	if lo < 1400 || hi > 1530 {
		t.Errorf("token windows from %.0f to %.0f tokens/s, want all near 1463: %v", lo, hi, w)
	}

	// Counts of 10, 10 and 1 over 2.05 s of 1 s windows: the last 50 ms
	// joins the second window.
	got := windowRates([]float64{10, 10, 1}, 1, 2.05)
	if len(got) != 2 || got[0] != 10 || math.Abs(got[1]-11/1.05) > 1e-9 {
		t.Errorf("folded windows %v, want [10 %.3f]", got, 11/1.05)
	}
	if got := windowRates([]float64{10, 6}, 1, 1.6); len(got) != 2 || math.Abs(got[1]-10) > 1e-9 {
		t.Errorf("a last window of 0.6 s: %v, want it kept at 10/s", got)
	}
}

// A series keeps only its newest windows open, and a window sealed and
// opened again by a late record ends exactly as one kept open throughout:
// the same values in time order and shuffled (records arriving up to all
// the windows late) give the same encodings.
func TestSealedWindowsAreExact(t *testing.T) {
	t.Parallel()
	const windows, per = 40, 50
	type obs struct {
		v float64
		w int
	}
	var in []obs
	for w := 0; w < windows; w++ {
		for k := 0; k < per; k++ {
			in = append(in, obs{float64(1 + (w*per+k*7)%97), w})
		}
	}
	ordered := newSeries("ms", "us", 1000, 1<<30)
	for _, o := range in {
		ordered.add(o.v, o.w)
		if len(ordered.open) > liveWindows+1 {
			t.Fatalf("%d windows open", len(ordered.open))
		}
	}
	shuffled := newSeries("ms", "us", 1000, 1<<30)
	r := rand.New(rand.NewPCG(1, 2))
	for _, i := range r.Perm(len(in)) {
		shuffled.add(in[i].v, in[i].w)
	}
	for w := 0; w < windows; w++ {
		if ordered.window(w) != shuffled.window(w) {
			t.Fatalf("window %d differs", w)
		}
		h, err := hdr.Decode([]byte(ordered.window(w)))
		if err != nil || h.TotalCount() != per {
			t.Fatalf("window %d: %v, %d values", w, err, h.TotalCount())
		}
	}
}
