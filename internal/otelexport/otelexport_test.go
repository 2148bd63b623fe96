package otelexport

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/otelexport/oteltest"
	"github.com/aiperf-action/aiperf-action/internal/record"
)

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"localhost":                        "http://localhost:4318/v1/metrics",
		"localhost:4319":                   "http://localhost:4319/v1/metrics",
		"http://127.0.0.1:4318":            "http://127.0.0.1:4318/v1/metrics",
		"https://otel.internal/base/":      "https://otel.internal:4318/base/v1/metrics",
		"http://[::1]:9000/v1/metrics":     "http://[::1]:9000/v1/metrics",
		"collector.monitoring.svc.cluster": "http://collector.monitoring.svc.cluster:4318/v1/metrics",
	} {
		got, err := Endpoint(in)
		if err != nil || got != want {
			t.Errorf("Endpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "grpc://x:4317", "http://:4318", "x:99999"} {
		if got, err := Endpoint(in); err == nil {
			t.Errorf("Endpoint(%q) = %q, want an error", in, got)
		}
	}
	h, err := Headers([]string{"Authorization:Bearer a=b", "x-team=perf,x-env=ci"})
	if err != nil || h["Authorization"] != "Bearer a=b" || h["x-team"] != "perf" || h["x-env"] != "ci" {
		t.Errorf("Headers: %v %v", h, err)
	}
	if _, err := Headers([]string{"novalue"}); err == nil {
		t.Error("a header with no value")
	}
	if Provider("https://api.openai.com/v1") != "openai" || Provider("http://127.0.0.1:8000") != "unknown" {
		t.Error("Provider")
	}
}

// Every request recorded arrives at the collector in the GenAI metrics:
// counts and sums equal to the records', input and output tokens apart,
// errors by error.type, warmup left out, the headers sent.
func TestExportToACollector(t *testing.T) {
	rc := oteltest.New()
	defer rc.Close()
	ep, _ := Endpoint(rc.URL)
	e, err := Start(context.Background(), Options{URL: ep, Headers: map[string]string{"Authorization": "Bearer s3cret"}, Provider: "vllm", Model: "m",
		Operation: "chat", Target: "http://127.0.0.1:8000", Interval: 50 * time.Millisecond, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var wantDur, wantFirst, wantGaps float64
	var gaps, inTok, outTok int
	const n = 200
	for i := 0; i < n; i++ {
		sent := int64(i) * 1e6
		r := &record.Record{Sent: sent, Streaming: true, FirstToken: sent + 20e6 + int64(i)*1e4, ISL: 100 + i, OSL: 10, End: sent + 100e6}
		for c := 0; c < 10; c++ {
			r.Chunks = append(r.Chunks, r.FirstToken+int64(c)*8e6)
		}
		if i%50 == 7 {
			r.ServerOSL = 12
		}
		e.Record(r)
		wantDur += 0.1
		wantFirst += float64(r.FirstToken-sent) / 1e9
		gaps++
		wantGaps += 9 * 0.008 / float64(r.OSL-1)
		inTok += r.ISL
		outTok += max(r.OSL, r.ServerOSL)
		if i%40 == 0 { // (a mid-run pause: more than one export)
			time.Sleep(60 * time.Millisecond)
		}
	}
	e.Record(&record.Record{Warmup: true, Sent: 1, End: 2e9, ISL: 5, OSL: 5})
	e.Record(&record.Record{Sent: 1e6, End: 31e6, ErrKind: record.ErrTimeout})
	e.Record(&record.Record{Sent: 1e6, End: 6e6, ErrKind: record.ErrConnRefused})
	rep := e.Stop(context.Background())
	if rep.Records != n+2 || rep.Failed != 0 || rep.Exports < 2 || len(rep.Headers) != 1 || rep.Headers[0] != "Authorization" {
		t.Errorf("report %+v", rep)
	}
	ok := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "vllm", "gen_ai.request.model": "m", "server.address": "127.0.0.1", "server.port": "8000"}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-6*math.Max(1, want) {
			t.Errorf("%s: sum %g, want %g", name, got, want)
		}
	}
	if c, s := rc.Total(MetricDuration, ok); c != n+2 {
		t.Errorf("%s: %d points, want %d (the two errors included)", MetricDuration, c, n+2)
	} else {
		near(MetricDuration, s, wantDur+0.035)
	}
	if c, _ := rc.Total(MetricDuration, map[string]string{"error.type": record.ErrTimeout}); c != 1 {
		t.Errorf("timeout: %d", c)
	}
	c, s := rc.Total(MetricFirstChunk, ok)
	if c != n {
		t.Errorf("%s: %d points", MetricFirstChunk, c)
	}
	near(MetricFirstChunk, s, wantFirst)
	c, s = rc.Total(MetricPerChunk, ok)
	if int(c) != gaps {
		t.Errorf("%s: %d points, want %d", MetricPerChunk, c, gaps)
	}
	near(MetricPerChunk, s, wantGaps)
	c, s = rc.Total(MetricTokens, map[string]string{"gen_ai.token.type": "input"})
	if c != n || int(s) != inTok {
		t.Errorf("input tokens: %d points, sum %g; want %d, %d", c, s, n, inTok)
	}
	c, s = rc.Total(MetricTokens, map[string]string{"gen_ai.token.type": "output"})
	if c != n || int(s) != outTok {
		t.Errorf("output tokens: %d points, sum %g; want %d, %d", c, s, n, outTok)
	}
	for _, se := range rc.Series() {
		if se.Metric == MetricDuration && (se.Unit != "s" || len(se.Bounds) != len(durationBuckets)) {
			t.Errorf("%s: unit %q, bounds %v", se.Metric, se.Unit, se.Bounds)
		}
	}
	if r := rc.Resource(); r["service.name"] != "aiperf-action" || r["service.version"] != "test" {
		t.Errorf("resource %v", r)
	}
	_, hs := rc.Requests()
	if len(hs) == 0 || hs[0].Get("Authorization") != "Bearer s3cret" || hs[0].Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("headers %v", hs)
	}
}

// A collector that refuses every export is counted, never fatal; one that
// is not there is found before the run.
func TestCollectorFailures(t *testing.T) {
	rc := oteltest.New()
	rc.SetStatus(http.StatusBadRequest) // (not retried: the exporter gives up at once)
	defer rc.Close()
	ep, _ := Endpoint(rc.URL)
	e, err := Start(context.Background(), Options{URL: ep, Operation: "chat", Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Record(&record.Record{Sent: 1, End: 1e6, ISL: 1, OSL: 1})
	rep := e.Stop(context.Background())
	if rep.Failed == 0 || rep.Exports != 0 || rep.LastError == "" {
		t.Errorf("report %+v", rep)
	}
	// (Port 1 on loopback: nothing listens there. A closed test server's
	// port can be taken again by another package's test meanwhile.)
	ep2, _ := Endpoint("127.0.0.1:1")
	if err := Reachable(context.Background(), ep2); err == nil {
		t.Error("a closed collector is reachable")
	}
	if err := Reachable(context.Background(), ep); err != nil {
		t.Error(err)
	}
}

// The cost of a streamed request of 128 chunks on the controller's record
// path.
func BenchmarkRecord(b *testing.B) {
	rc := oteltest.New()
	defer rc.Close()
	ep, _ := Endpoint(rc.URL)
	e, err := Start(context.Background(), Options{URL: ep, Operation: "chat", Model: "m", Provider: "vllm", Target: "http://127.0.0.1:8000"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Stop(context.Background())
	r := &record.Record{Sent: 1, Streaming: true, FirstToken: 20e6, ISL: 512, OSL: 128, End: 1e9}
	for c := 0; c < 128; c++ {
		r.Chunks = append(r.Chunks, r.FirstToken+int64(c)*7e6)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Record(r)
	}
}
