package result

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
)

// File names in a run folder.
const (
	RunFile     = "run.json"
	ExportJSON  = "profile_export_aiperf.json"
	ExportCSV   = "profile_export_aiperf.csv"
	RecordsFile = "records.jsonl"
	InputsFile  = "inputs.json"
)

// aiperfStat is one metric in AIPerf's export shape.
type aiperfStat map[string]any

// AIPerfJSON renders profile_export_aiperf.json in AIPerf's shape: one object
// per metric with unit and statistics, then the benchmark summary.
func AIPerfJSON(r *Run, summary *metrics.Summary, startEnd [2]string, cliCommand string) ([]byte, error) {
	out := map[string]any{}
	for name, m := range r.Metrics {
		if d := m.Dist; d != nil {
			st := aiperfStat{"unit": d.Unit, "avg": d.Avg, "min": d.Min, "max": d.Max, "std": d.Std}
			for _, p := range metrics.Percentiles {
				if p.Name == "p999" {
					continue // AIPerf stops at p99
				}
				v, _ := d.Get(p.Name)
				st[p.Name] = v
			}
			out[name] = st
		} else if m.Rate != nil {
			out[name] = aiperfStat{"unit": m.Rate.Unit, "avg": m.Rate.Value}
		}
	}
	out["benchmark_duration"] = aiperfStat{"unit": "sec", "avg": r.DurationS}
	out["request_count"] = aiperfStat{"unit": "requests", "avg": r.Counts.OK}
	out["total_isl"] = aiperfStat{"unit": "tokens", "avg": summary.TotalISL}
	out["total_osl"] = aiperfStat{"unit": "tokens", "avg": summary.TotalOSL}
	out["error_request_count"] = nullIfZero(r.Counts.Errors, "requests")
	if _, ok := r.Metrics[metrics.Goodput]; ok {
		out["good_request_count"] = aiperfStat{"unit": "requests", "avg": r.Counts.Good}
	} else {
		out["good_request_count"] = nil
	}
	var errs []map[string]any
	kinds := make([]string, 0, len(r.Counts.ErrorsByKind))
	for k := range r.Counts.ErrorsByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		code := 0
		if len(k) > 5 && k[:5] == "http_" {
			code, _ = strconv.Atoi(k[5:])
		}
		errs = append(errs, map[string]any{
			"error_details": map[string]any{"code": code, "type": k, "message": summary.Counts.ErrorExamples[k]},
			"count":         r.Counts.ErrorsByKind[k],
		})
	}
	out["error_summary"] = errs
	if t := r.GPUTelemetry; t != nil {
		out["telemetry_data"] = t.AIPerfExport()
		if t.OutputTokensPerJoule != nil {
			out["output_tokens_per_joule"] = aiperfStat{"unit": "tokens/J", "avg": *t.OutputTokensPerJoule}
		}
	}
	if r.BranchStats != nil {
		out["branch_stats"] = r.BranchStats
	}
	out["was_cancelled"] = r.Cancelled
	out["start_time"], out["end_time"] = startEnd[0], startEnd[1]
	out["input_config"] = map[string]any{
		"endpoint":    map[string]any{"model_names": []string{r.Target.Model}, "type": r.Target.EndpointType, "streaming": r.Target.Streaming, "url": r.Target.URL},
		"input":       map[string]any{"random_seed": r.Seed},
		"loadgen":     map[string]any{"concurrency": r.Load.Concurrency, "request_count": r.Load.RequestCount},
		"cli_command": cliCommand,
	}
	b, err := json.MarshalIndent(out, "", "  ")
	return append(b, '\n'), err
}

func nullIfZero(n int, unit string) any {
	if n == 0 {
		return nil
	}
	return aiperfStat{"unit": unit, "avg": n}
}

// AIPerfCSV renders profile_export_aiperf.csv: distributions, a blank line,
// then single-value metrics.
func AIPerfCSV(r *Run) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"Metric", "avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, name := range metrics.Order {
		m, ok := r.Metrics[name]
		if !ok || m.Dist == nil {
			continue
		}
		d := m.Dist
		w.Write([]string{fmt.Sprintf("%s (%s)", metrics.DisplayName(name), d.Unit), f(d.Avg), f(d.Min), f(d.Max),
			f(d.P1), f(d.P5), f(d.P10), f(d.P25), f(d.P50), f(d.P75), f(d.P90), f(d.P95), f(d.P99), f(d.Std)})
	}
	w.Flush()
	buf.WriteString("\n")
	w = csv.NewWriter(&buf)
	w.Write([]string{"Metric", "Value"})
	for _, name := range metrics.Order {
		m, ok := r.Metrics[name]
		if !ok || m.Rate == nil {
			continue
		}
		w.Write([]string{fmt.Sprintf("%s (%s)", metrics.DisplayName(name), m.Rate.Unit), f(m.Rate.Value)})
	}
	w.Write([]string{"Request Count (requests)", strconv.Itoa(r.Counts.OK)})
	w.Write([]string{"Error Request Count (requests)", strconv.Itoa(r.Counts.Errors)})
	w.Write([]string{"Benchmark Duration (sec)", f(r.DurationS)})
	w.Flush()
	return buf.Bytes(), w.Error()
}

// stream is a file written through a temp file in its folder and renamed
// into place on Close, so an interrupted run still leaves a complete file
// of what arrived, and never half of one under the final name.
type stream struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	err  error
}

func newStream(dir, name string) (*stream, error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(FileMode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &stream{path: filepath.Join(dir, name), f: f, bw: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Close flushes and renames the file into place.
func (w *stream) Close() error {
	if err := w.bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	if w.err != nil {
		os.Remove(w.f.Name())
		return w.err
	}
	return os.Rename(w.f.Name(), w.path)
}

// RecordWriter streams records.jsonl (see stream).
type RecordWriter struct {
	*stream
	enc *json.Encoder
}

// NewRecordWriter starts records.jsonl in dir.
func NewRecordWriter(dir string) (*RecordWriter, error) {
	s, err := newStream(dir, RecordsFile)
	if err != nil {
		return nil, err
	}
	return &RecordWriter{stream: s, enc: json.NewEncoder(s.bw)}, nil
}

// Write appends one record.
func (w *RecordWriter) Write(r *record.Record) {
	if w.err == nil {
		w.err = w.enc.Encode(r)
	}
}

// ReadRecords reads every record of a records.jsonl, warmup included.
func ReadRecords(path string) ([]record.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
