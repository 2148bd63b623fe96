// Package oteltest is a loopback OTLP/HTTP metrics receiver for tests: it
// speaks the collector's protocol (POST /v1/metrics, a protobuf
// ExportMetricsServiceRequest, decoded with the OpenTelemetry project's own
// generated types, gzip or not) and keeps the newest cumulative value of
// every histogram series it was sent.
package oteltest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// Series is one histogram's newest cumulative point for one attribute set.
type Series struct {
	Metric     string
	Unit       string
	Attributes map[string]string
	Count      uint64
	Sum        float64
	Bounds     []float64
}

// Receiver is the stand-in collector.
type Receiver struct {
	*httptest.Server
	mu       sync.Mutex
	series   map[string]*Series
	requests int
	headers  []http.Header
	resource map[string]string
	status   int // answered to every export when set (SetStatus)
}

// SetStatus makes the receiver answer every export with code (a failing
// collector); 0 is success again.
func (r *Receiver) SetStatus(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = code
}

// New starts a receiver on loopback; Close it when done.
func New() *Receiver {
	r := &Receiver{series: map[string]*Series{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/metrics" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.headers = append(r.headers, req.Header.Clone())
	if r.status != 0 {
		w.WriteHeader(r.status)
		return
	}
	for _, rm := range msg.ResourceMetrics {
		if rm.Resource != nil {
			r.resource = attrs(rm.Resource.Attributes)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				h, ok := m.Data.(*metricpb.Metric_Histogram)
				if !ok {
					continue
				}
				for _, dp := range h.Histogram.DataPoints {
					a := attrs(dp.Attributes)
					k := m.Name + "|" + key(a)
					r.series[k] = &Series{Metric: m.Name, Unit: m.Unit, Attributes: a, Count: dp.Count, Sum: dp.GetSum(), Bounds: dp.ExplicitBounds}
				}
			}
		}
	}
	out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	a := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			a[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			a[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		default:
			a[kv.Key] = kv.Value.String()
		}
	}
	return a
}

func key(a map[string]string) string {
	ks := make([]string, 0, len(a))
	for k, v := range a {
		ks = append(ks, k+"="+v)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// Series is every histogram series received, by metric name then
// attributes.
func (r *Receiver) Series() []Series {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Series, 0, len(r.series))
	for _, s := range r.series {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Metric+"|"+key(out[i].Attributes) < out[j].Metric+"|"+key(out[j].Attributes)
	})
	return out
}

// Total sums count and sum over a metric's series whose attributes include
// every one in match.
func (r *Receiver) Total(metric string, match map[string]string) (count uint64, sum float64) {
	for _, s := range r.Series() {
		if s.Metric != metric {
			continue
		}
		ok := true
		for k, v := range match {
			if s.Attributes[k] != v {
				ok = false
			}
		}
		if ok {
			count += s.Count
			sum += s.Sum
		}
	}
	return count, sum
}

// Requests is how many exports arrived, and the headers of each.
func (r *Receiver) Requests() (int, []http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, append([]http.Header{}, r.headers...)
}

// Resource is the newest export's resource attributes.
func (r *Receiver) Resource() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resource
}
