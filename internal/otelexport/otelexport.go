// Package otelexport streams a run's requests to an OpenTelemetry
// collector as they complete, as AIPerf's --otel-url does: OTLP/HTTP
// metrics named by the OpenTelemetry GenAI semantic conventions
// (gen_ai.client.operation.duration, gen_ai.client.token.usage,
// gen_ai.client.operation.time_to_first_chunk and
// gen_ai.client.operation.time_per_output_chunk, in seconds and tokens,
// one point of each a request),
// through the OpenTelemetry Go SDK and its OTLP/HTTP exporter.
//
// The export is a view for dashboards, never the measurement: run.json is
// made from the records alone, a collector that is down or slow changes
// nothing in it, and what the export managed (exports sent and failed) is
// said in run.json's tool_health.otel.
package otelexport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/aiperf-action/aiperf-action/internal/record"
)

// DefaultPort is OTLP/HTTP's.
const DefaultPort = "4318"

// The metric names (OpenTelemetry GenAI semantic conventions, client side).
const (
	MetricDuration     = "gen_ai.client.operation.duration"
	MetricTokens       = "gen_ai.client.token.usage"
	MetricFirstChunk   = "gen_ai.client.operation.time_to_first_chunk"
	MetricPerChunk     = "gen_ai.client.operation.time_per_output_chunk"
	instrumentationLib = "github.com/aiperf-action/aiperf-action"
)

// The conventions' recommended bucket boundaries.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	firstBuckets    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	chunkBuckets    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
)

// Endpoint reads --otel-url as AIPerf takes it: host, host:port or a full
// URL (http or https); the port defaults to OTLP/HTTP's 4318 and the path
// to /v1/metrics (a base path is kept, /v1/metrics added to it).
func Endpoint(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("no address")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q: want http or https (OTLP/HTTP)", s)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("%q: no host", s)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), DefaultPort)
	} else if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%q: bad port", s)
	}
	if !strings.HasSuffix(u.Path, "/v1/metrics") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/metrics"
	}
	return u.String(), nil
}

// Headers reads --otel-headers items, "Name:Value" (AIPerf's --header
// form) or "Name=Value" (OTEL_EXPORTER_OTLP_HEADERS's).
func Headers(items []string) (map[string]string, error) {
	h := map[string]string{}
	for _, it := range items {
		for _, part := range strings.Split(it, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			i := strings.IndexAny(part, ":=")
			if i <= 0 {
				return nil, fmt.Errorf("%q: want Name:Value or Name=Value", part)
			}
			h[strings.TrimSpace(part[:i])] = strings.TrimSpace(part[i+1:])
		}
	}
	return h, nil
}

// Operation is gen_ai.operation.name for an endpoint type.
func Operation(endpointType string) string {
	switch endpointType {
	case "chat", "messages", "responses", "chat_embeddings":
		return "chat"
	case "completions":
		return "text_completion"
	case "embeddings":
		return "embeddings"
	}
	return endpointType
}

// Provider is gen_ai.provider.name when --gen-ai-provider is not given,
// inferred from the server's host as AIPerf infers it.
func Provider(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return "unknown"
	}
	h := strings.ToLower(u.Hostname())
	for _, p := range []struct{ suffix, name string }{
		{"openai.com", "openai"}, {"anthropic.com", "anthropic"}, {"openai.azure.com", "azure.ai.openai"},
		{"googleapis.com", "gcp.gen_ai"}, {"mistral.ai", "mistral_ai"}, {"groq.com", "groq"}, {"deepseek.com", "deepseek"},
		{"x.ai", "x_ai"}, {"cohere.com", "cohere"}, {"amazonaws.com", "aws.bedrock"},
	} {
		if h == p.suffix || strings.HasSuffix(h, "."+p.suffix) {
			return p.name
		}
	}
	return "unknown"
}

// Options say where and what to export.
type Options struct {
	URL       string            // Endpoint's form
	Headers   map[string]string // sent with every export
	Provider  string            // gen_ai.provider.name
	Model     string            // gen_ai.request.model
	Operation string            // gen_ai.operation.name
	Target    string            // the server's URL: server.address and server.port
	// Interval between exports (0: 1 s, so dashboards follow the run).
	Interval time.Duration
	// Resource attributes besides service.name and service.version.
	Resource map[string]string
	Version  string // service.version
}

// Report is what the export managed: run.json's tool_health.otel.
type Report struct {
	URL       string   `json:"url"`
	Headers   []string `json:"headers,omitempty"` // names only: the values may be credentials
	Records   int64    `json:"records"`           // requests recorded into the metrics
	Exports   int64    `json:"exports"`           // OTLP requests the collector accepted
	Failed    int64    `json:"failed"`            // OTLP requests that failed (after the exporter's retries)
	LastError string   `json:"last_error,omitempty"`
}

// Exporter records requests into the GenAI metrics and pushes them.
type Exporter struct {
	mp                      *sdkmetric.MeterProvider
	exp                     *countingExporter
	duration, first, chunks metric.Float64Histogram
	tokens                  metric.Int64Histogram
	okSet                   metric.MeasurementOption
	inSet, outSet           metric.MeasurementOption
	errSets                 sync.Map // error kind → metric.MeasurementOption
	base                    []attribute.KeyValue
	records                 atomic.Int64
	report                  Report
}

// countingExporter counts the OTLP requests that went and failed.
type countingExporter struct {
	sdkmetric.Exporter
	ok, failed atomic.Int64
	mu         sync.Mutex
	last       string
}

func (c *countingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := c.Exporter.Export(ctx, rm)
	if err != nil {
		c.failed.Add(1)
		c.mu.Lock()
		c.last = err.Error()
		c.mu.Unlock()
	} else {
		c.ok.Add(1)
	}
	return err
}

// Reachable dials the collector once: AIPerf warns and runs without the
// export when it is not there; so does the caller.
func Reachable(ctx context.Context, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return err
	}
	return c.Close()
}

// Start builds the exporter and its meter provider; nothing is sent until
// the first interval.
func Start(ctx context.Context, o Options) (*Exporter, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, err
	}
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(o.URL), otlpmetrichttp.WithTimeout(5 * time.Second),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 5 * time.Second})}
	if u.Scheme == "http" {
		opts = append(opts, otlpmetrichttp.WithInsecure())
	}
	if len(o.Headers) > 0 {
		opts = append(opts, otlpmetrichttp.WithHeaders(o.Headers))
	}
	inner, err := otlpmetrichttp.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	ce := &countingExporter{Exporter: inner}
	interval := o.Interval
	if interval <= 0 {
		interval = time.Second
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "aiperf-action"), attribute.String("service.version", o.Version)}
	for k, v := range o.Resource {
		attrs = append(attrs, attribute.String(k, v))
	}
	res := resource.NewSchemaless(attrs...)
	view := func(name string, b []float64) sdkmetric.View {
		return sdkmetric.NewView(sdkmetric.Instrument{Name: name}, sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: b}})
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(ce, sdkmetric.WithInterval(interval))),
		sdkmetric.WithView(view(MetricDuration, durationBuckets), view(MetricTokens, tokenBuckets), view(MetricFirstChunk, firstBuckets), view(MetricPerChunk, chunkBuckets)))
	m := mp.Meter(instrumentationLib, metric.WithInstrumentationVersion(o.Version))
	e := &Exporter{mp: mp, exp: ce, report: Report{URL: o.URL}}
	for k := range o.Headers {
		e.report.Headers = append(e.report.Headers, k)
	}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	e.duration, err = m.Float64Histogram(MetricDuration, metric.WithUnit("s"), metric.WithDescription("GenAI operation duration"))
	add(err)
	e.first, err = m.Float64Histogram(MetricFirstChunk, metric.WithUnit("s"), metric.WithDescription("Time to receive the first chunk of a streamed response"))
	add(err)
	e.chunks, err = m.Float64Histogram(MetricPerChunk, metric.WithUnit("s"), metric.WithDescription("Inter-token latency of a streamed response: time after the first chunk over the output tokens after the first"))
	add(err)
	e.tokens, err = m.Int64Histogram(MetricTokens, metric.WithUnit("{token}"), metric.WithDescription("Number of input and output tokens used"))
	add(err)
	if err := errors.Join(errs...); err != nil {
		mp.Shutdown(ctx)
		return nil, err
	}
	e.base = []attribute.KeyValue{attribute.String("gen_ai.operation.name", o.Operation), attribute.String("gen_ai.provider.name", o.Provider),
		attribute.String("gen_ai.request.model", o.Model)}
	if t, err := url.Parse(o.Target); err == nil && t.Hostname() != "" {
		e.base = append(e.base, attribute.String("server.address", t.Hostname()))
		port := t.Port()
		if port == "" {
			port = map[string]string{"https": "443"}[t.Scheme]
			if port == "" {
				port = "80"
			}
		}
		if n, err := strconv.Atoi(port); err == nil {
			e.base = append(e.base, attribute.Int("server.port", n))
		}
	}
	e.okSet = metric.WithAttributeSet(attribute.NewSet(e.base...))
	e.inSet = metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue{}, e.base...), attribute.String("gen_ai.token.type", "input"))...))
	e.outSet = metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue{}, e.base...), attribute.String("gen_ai.token.type", "output"))...))
	return e, nil
}

func (e *Exporter) errSet(kind string) metric.MeasurementOption {
	if v, ok := e.errSets.Load(kind); ok {
		return v.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue{}, e.base...), attribute.String("error.type", kind))...))
	e.errSets.Store(kind, o)
	return o
}

// Record adds one completed request: its duration (with error.type when it
// failed), and for a success its token counts (the server's where it sent
// usage) and, when streamed, its first chunk and its inter-token latency
// (last chunk less first token over the output tokens less one, run.json's
// ITL: AIPerf's time_per_output_chunk is its per-request ITL, one point a
// request, not one a chunk).
// Warmup requests are not exported (AIPerf streams the profiling phase).
func (e *Exporter) Record(r *record.Record) {
	if e == nil || r.Warmup || r.ErrKind == record.ErrCancelled && r.CancelCause == record.CancelUnsent {
		return
	}
	ctx := context.Background()
	e.records.Add(1)
	if r.End >= r.Sent {
		d := float64(r.End-r.Sent) / 1e9
		if !r.OK() {
			e.duration.Record(ctx, d, e.errSet(r.ErrKind))
			return
		}
		e.duration.Record(ctx, d, e.okSet)
	} else if !r.OK() {
		return
	}
	in, out := r.ISL, r.OSL
	if r.ServerISL > 0 {
		in = r.ServerISL
	}
	if r.ServerOSL > 0 {
		out = r.ServerOSL
	}
	if in > 0 {
		e.tokens.Record(ctx, int64(in), e.inSet)
	}
	if out > 0 {
		e.tokens.Record(ctx, int64(out), e.outSet)
	}
	if r.Streaming && r.FirstToken != 0 && r.FirstToken >= r.Sent {
		e.first.Record(ctx, float64(r.FirstToken-r.Sent)/1e9, e.okSet)
		if n := len(r.Chunks); n > 0 && r.OSL > 1 && r.Chunks[n-1] > r.FirstToken {
			e.chunks.Record(ctx, float64(r.Chunks[n-1]-r.FirstToken)/1e9/float64(r.OSL-1), e.okSet)
		}
	}
}

// Stop flushes what is left and shuts the exporter down, within ctx (a
// collector that does not answer costs at most its timeout), and says what
// the export managed.
func (e *Exporter) Stop(ctx context.Context) Report {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := e.mp.Shutdown(ctx) // (a final collect and export)
	r := e.report
	r.Records, r.Exports, r.Failed = e.records.Load(), e.exp.ok.Load(), e.exp.failed.Load()
	e.exp.mu.Lock()
	r.LastError = e.exp.last
	e.exp.mu.Unlock()
	if err != nil && r.LastError == "" {
		r.LastError = err.Error()
	}
	return r
}
