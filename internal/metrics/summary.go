// Package metrics turns records into AIPerf's metrics.
//
// Every distribution is kept in an HdrHistogram (3 significant figures),
// overall and per time window, so percentiles can be recomputed from
// run.json alone and the gate can bootstrap over windows. Definitions follow
// AIPerf:
//
//	time_to_first_token   first content chunk − sent
//	time_to_second_token  second content chunk − first content chunk
//	request_latency       last content chunk − sent (end of body when not streaming)
//	inter_token_latency   (request_latency − TTFT) / (OSL − 1)
//	inter_chunk_latency   every gap between consecutive content chunks
//	output_token_throughput_per_user  1 / inter_token_latency
//	output_token_throughput           Σ OSL / benchmark duration
//	request_throughput                successful requests / benchmark duration
//	goodput                           requests meeting every --goodput SLO / duration
//
// The benchmark duration runs from the first request sent to the last one
// ended. Warmup records are counted but never enter a metric.
package metrics

import (
	"encoding/json"
	"fmt"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Metric names, AIPerf's tags.
const (
	TTFT           = "time_to_first_token"
	TTST           = "time_to_second_token"
	ITL            = "inter_token_latency"
	ICL            = "inter_chunk_latency"
	RequestLatency = "request_latency"
	ISL            = "input_sequence_length"
	OSL            = "output_sequence_length"
	PerUser        = "output_token_throughput_per_user"
	// Latency from the due time rather than the send time (open loops):
	// the wait for a concurrency slot and any scheduling delay are
	// included, so coordinated omission shows.
	TTFTFromDue           = "time_to_first_token_from_due"
	RequestLatencyFromDue = "request_latency_from_due"
	// TTFTFromWrite counts from the request's last byte written, leaving
	// out the wait for a connection and its dial, which TTFT (from the
	// send, as every peer defines it) includes; ConnSetup is that wait
	// and dial, for the requests that dialled a new connection.
	TTFTFromWrite = "time_to_first_token_from_write"
	// TTFO is AIPerf's time to first output token: the first answer token
	// after any reasoning (TTFT counts the first token of any kind);
	// ReasoningTokens is each request's reasoning token count.
	TTFO            = "time_to_first_output_token"
	ReasoningTokens = "reasoning_token_count"
	ConnSetup       = "connection_setup"
	OutputTput      = "output_token_throughput"
	RequestTput     = "request_throughput"
	ItemTput        = "item_throughput" // a non-token endpoint's items (inputs, passages, images) a second
	Goodput         = "goodput"
)

// Percentiles reported for every distribution.
var Percentiles = []struct {
	Name string
	Q    float64
}{{"p1", 1}, {"p5", 5}, {"p10", 10}, {"p25", 25}, {"p50", 50}, {"p75", 75}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}}

// Dist summarises one distribution metric. Summary fields are in Unit; the
// histograms record HDRUnit (integers): a summary value is an HDR value
// divided by Scale.
type Dist struct {
	Unit    string   `json:"unit"`
	Count   int64    `json:"count"`
	Avg     float64  `json:"avg"`
	Min     float64  `json:"min"`
	Max     float64  `json:"max"`
	Std     float64  `json:"std"`
	P1      float64  `json:"p1"`
	P5      float64  `json:"p5"`
	P10     float64  `json:"p10"`
	P25     float64  `json:"p25"`
	P50     float64  `json:"p50"`
	P75     float64  `json:"p75"`
	P90     float64  `json:"p90"`
	P95     float64  `json:"p95"`
	P99     float64  `json:"p99"`
	P999    float64  `json:"p999"`
	HDR     string   `json:"hdr"`
	HDRUnit string   `json:"hdr_unit"`
	Scale   float64  `json:"scale"`
	WindowS float64  `json:"window_s"`
	Windows []string `json:"windows"`
}

// Rate summarises one throughput metric: its value over the whole benchmark
// and per window.
type Rate struct {
	Unit    string    `json:"unit"`
	Value   float64   `json:"value"`
	WindowS float64   `json:"window_s"`
	Windows []float64 `json:"windows"`
}

// Metric is either a Dist or a Rate; in JSON it is the one that is set.
type Metric struct {
	Dist *Dist
	Rate *Rate
}

// MarshalJSON writes whichever of Dist and Rate is set.
func (m Metric) MarshalJSON() ([]byte, error) {
	if m.Dist != nil {
		return json.Marshal(m.Dist)
	}
	if m.Rate != nil {
		return json.Marshal(m.Rate)
	}
	return nil, fmt.Errorf("empty metric")
}

// UnmarshalJSON reads a Dist when the object has "hdr", a Rate when it has "value".
func (m *Metric) UnmarshalJSON(b []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if _, ok := probe["hdr"]; ok {
		m.Dist = new(Dist)
		return json.Unmarshal(b, m.Dist)
	}
	if _, ok := probe["value"]; ok {
		m.Rate = new(Rate)
		return json.Unmarshal(b, m.Rate)
	}
	return fmt.Errorf("metric has neither \"hdr\" nor \"value\"")
}

// Histogram decodes the overall histogram of d.
func (d *Dist) Histogram() (*hdr.Histogram, error) {
	return hdr.Decode([]byte(d.HDR))
}

// Get returns the summary field named by a statistic ("avg", "p99", ...).
func (d *Dist) Get(stat string) (float64, bool) {
	if f := d.field(stat); f != nil {
		return *f, true
	}
	return 0, false
}

// field points at the summary field for stat, or is nil.
func (d *Dist) field(stat string) *float64 {
	fields := map[string]*float64{
		"avg": &d.Avg, "min": &d.Min, "max": &d.Max, "std": &d.Std,
		"p1": &d.P1, "p5": &d.P5, "p10": &d.P10, "p25": &d.P25, "p50": &d.P50,
		"p75": &d.P75, "p90": &d.P90, "p95": &d.P95, "p99": &d.P99, "p999": &d.P999,
	}
	return fields[stat]
}

// Counts are the request outcomes of the profiling phase.
type Counts struct {
	Requests     int            `json:"requests"`
	OK           int            `json:"ok"`
	Errors       int            `json:"errors"`
	ErrorsByKind map[string]int `json:"errors_by_kind"`
	// ErrorExamples is one message of each error kind (the first seen),
	// so the console's error table can be rendered from run.json alone.
	ErrorExamples map[string]string `json:"error_examples,omitempty"`
	Good          int               `json:"good,omitempty"` // met every --goodput SLO
	Warmup        int               `json:"warmup,omitempty"`
	// Cancelled requests are also in Errors and ErrorsByKind["cancelled"];
	// CancelledBy splits them by cause (planned, grace, stop).
	Cancelled   int            `json:"cancelled"`
	CancelledBy map[string]int `json:"cancelled_by,omitempty"`
}

// FailedNotCancelled is the number of requests that failed for any reason
// but a cancellation: what --max-error-rate is held against.
func (c Counts) FailedNotCancelled() int { return c.Errors - c.Cancelled }

// Summary is the aggregated result of a run.
type Summary struct {
	Counts    Counts
	Metrics   map[string]Metric
	Lag       *Dist // schedule lag (sent − due), ms: the tool's own health
	DurationS float64
	FirstSent int64 // ns since t0
	LastEnd   int64
	TotalISL  int64
	TotalOSL  int64

	// The send schedule, over profiling requests that were sent.
	Sent      int
	SlotWaits int // requests that were due but waited for a concurrency slot
	// ConnRetries are requests resent on a fresh connection after the
	// server closed a kept-alive one.
	ConnRetries   int
	TokenWarnings []string
	DueSpan       float64
	SentSpan      float64 // seconds from the first send to the last
}

// PlannedRate is the plan's own rate over the requests that were sent:
// (n−1) / (last due − first due), in requests/s. 0 when undefined.
func (s *Summary) PlannedRate() float64 {
	if s.Sent < 2 || s.DueSpan <= 0 {
		return 0
	}
	return float64(s.Sent-1) / s.DueSpan
}

// AchievedRate is the rate the requests were actually sent at:
// (n−1) / (last send − first send).
func (s *Summary) AchievedRate() float64 {
	if s.Sent < 2 || s.SentSpan <= 0 {
		return 0
	}
	return float64(s.Sent-1) / s.SentSpan
}
