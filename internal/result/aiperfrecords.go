package result

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
)

// AIPerf's export levels (--export-level): summary writes the aggregate
// files only; records adds the per-request profile_export.jsonl.
const (
	ExportSummary = "summary"
	ExportRecords = "records"
)

// ExportNames are the AIPerf export files of a run folder: the summary
// JSON and CSV and the per-request JSONL, named by AIPerf's
// --profile-export-prefix when one is given.
type ExportNames struct{ JSON, CSV, Records string }

// DefaultExportNames are AIPerf's default names.
var DefaultExportNames = ExportNames{JSON: ExportJSON, CSV: ExportCSV, Records: "profile_export.jsonl"}

// ExportNamesFor is AIPerf's naming for a prefix: P.json, P.csv, P.jsonl,
// a known suffix stripped from P first (as AIPerf strips them). The
// prefix is a file name in the artifact folder, not a path.
func ExportNamesFor(prefix string) (ExportNames, error) {
	if prefix == "" {
		return DefaultExportNames, nil
	}
	if prefix != filepath.Base(prefix) || prefix == "." || prefix == ".." {
		return ExportNames{}, fmt.Errorf("--profile-export-prefix %q: want a file name (the files go in --artifact-dir), not a path", prefix)
	}
	for _, suf := range []string{"_raw.jsonl", ".jsonl", ".json", ".csv"} {
		prefix = strings.TrimSuffix(prefix, suf)
	}
	for _, reserved := range []string{RunFile, RecordsFile, InputsFile} {
		for _, ext := range []string{".json", ".csv", ".jsonl"} {
			if prefix+ext == reserved {
				return ExportNames{}, fmt.Errorf("--profile-export-prefix %q: %s is this tool's own file", prefix, reserved)
			}
		}
	}
	return ExportNames{JSON: prefix + ".json", CSV: prefix + ".csv", Records: prefix + ".jsonl"}, nil
}

// AIPerfRecordWriter streams AIPerf's profile_export.jsonl: one line a
// profiling request, in AIPerf's MetricRecordInfo shape (metadata, metrics
// as {value, unit}, error), into a temp file renamed into place on Close.
// Warmup requests are left out, as AIPerf's file has only its profiling
// phase.
type AIPerfRecordWriter struct {
	*stream
	start func() time.Time // the profiling phase's common start (t0)
	n     int
}

// NewAIPerfRecordWriter starts name in dir; start gives the wall-clock
// instant the records' monotonic times count from.
func NewAIPerfRecordWriter(dir, name string, start func() time.Time) (*AIPerfRecordWriter, error) {
	s, err := newStream(dir, name)
	if err != nil {
		return nil, err
	}
	return &AIPerfRecordWriter{stream: s, start: start}, nil
}

type aiperfValue struct {
	Value any    `json:"value"`
	Unit  string `json:"unit"`
}

type aiperfMeta struct {
	SessionNum         int    `json:"session_num"`
	XRequestID         string `json:"x_request_id"`
	XCorrelationID     string `json:"x_correlation_id"`
	ConversationID     string `json:"conversation_id"`
	TurnIndex          int    `json:"turn_index"`
	RequestStartNs     int64  `json:"request_start_ns"`
	RequestAckNs       *int64 `json:"request_ack_ns"`
	RequestEndNs       int64  `json:"request_end_ns"`
	WorkerID           string `json:"worker_id"`
	RecordProcessorID  string `json:"record_processor_id"`
	BenchmarkPhase     string `json:"benchmark_phase"`
	WasCancelled       bool   `json:"was_cancelled"`
	CancellationTimeNs *int64 `json:"cancellation_time_ns"`
}

type aiperfError struct {
	Code    int    `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

type aiperfRecord struct {
	Metadata aiperfMeta             `json:"metadata"`
	Metrics  map[string]aiperfValue `json:"metrics"`
	Error    *aiperfError           `json:"error"`
}

// Write appends r (a warmup record is skipped).
func (w *AIPerfRecordWriter) Write(r *record.Record) {
	if w.err != nil || r.Warmup {
		return
	}
	b, err := json.Marshal(AIPerfRecord(r, w.start(), w.n))
	w.n++
	if err == nil {
		b = append(b, '\n')
		_, err = w.bw.Write(b)
	}
	w.err = err
}

// AIPerfRecord is r in AIPerf's profile_export.jsonl shape; t0 is its
// phase's wall-clock start, n its place among the phase's records. The
// ids are the plan's (session and index): this tool sends no
// X-Request-ID header.
func AIPerfRecord(r *record.Record, t0 time.Time, n int) any {
	at := func(ns int64) int64 { return t0.Add(time.Duration(ns)).UnixNano() }
	m := aiperfMeta{SessionNum: n, XRequestID: fmt.Sprintf("%s-%d", r.SessionID, r.Turn), XCorrelationID: r.SessionID, ConversationID: r.SessionID,
		TurnIndex: r.Turn, RequestStartNs: at(r.Sent), RequestEndNs: at(r.End), WorkerID: fmt.Sprintf("worker_%d", r.Worker),
		RecordProcessorID: "controller", BenchmarkPhase: "profiling", WasCancelled: r.ErrKind == record.ErrCancelled}
	if r.Streaming && r.FirstByte > 0 {
		v := at(r.FirstByte)
		m.RequestAckNs = &v
	}
	if m.WasCancelled {
		v := at(r.End)
		m.CancellationTimeNs = &v
	}
	out := aiperfRecord{Metadata: m, Metrics: map[string]aiperfValue{}}
	if !r.OK() {
		out.Metrics["error_isl"] = aiperfValue{r.ISL, "tokens"}
		code := r.Status
		if m.WasCancelled {
			code = 499 // AIPerf's code for a cancelled request (its stream may have begun with 200)
		}
		out.Error = &aiperfError{Code: code, Type: r.ErrKind, Message: r.ErrMsg}
		return out
	}
	for name, v := range metrics.RecordMetrics(r) {
		f, ok := metrics.Lookup(name)
		if !ok {
			continue
		}
		out.Metrics[name] = aiperfValue{v, f.Unit}
	}
	out.Metrics["output_token_count"] = aiperfValue{r.OSL - r.ReasoningTokens, "tokens"}
	if r.Streaming && len(r.Chunks) > 1 {
		icl := make([]float64, len(r.Chunks)-1)
		for i := 1; i < len(r.Chunks); i++ {
			icl[i-1] = float64(r.Chunks[i]-r.Chunks[i-1]) / 1e6
		}
		out.Metrics["inter_chunk_latency"] = aiperfValue{icl, "ms"}
	}
	return out
}
