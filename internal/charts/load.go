// Package charts draws a run's pictures from its artifacts alone: run.json
// (every distribution's HdrHistogram, overall and per window) and
// records.jsonl (every request's timestamps), never from the memory of the
// run. It writes AIPerf's plot names as PNG or SVG (gonum/plot), and a
// report: one self-contained HTML file whose charts are SVG drawn here,
// with nothing fetched when it is viewed.
//
// A series of more requests than a chart can show one by one is drawn as
// buckets of send time, each its median, p99, least and greatest value,
// so that neither the body nor an outlier is lost, and the chart says so;
// a timeline shows the first requests only and says how many of how many.
package charts

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// Req is one profiled request, its times in ns from the run's start.
type Req struct {
	Due, Sent, First, Last, End int64
	OSL                         int32
	Err                         uint8 // 0: it succeeded; else 1 + its index in Run.ErrKinds
	Streaming                   bool
}

// OK says the request succeeded.
func (r *Req) OK() bool { return r.Err == 0 }

// Run is a run folder's artifacts as the charts read them.
type Run struct {
	Dir      string
	Label    string // the folder's name, or the label given
	Run      *result.Run
	Reqs     []Req    // the profiling phase's requests, by send time; nil when records.jsonl is missing
	ErrKinds []string // the error kinds, in order of first sight
	Warmup   int      // warmup records left out
	NoRecord string   // why there are no requests ("" when there are)
}

// maxRecordLine bounds one records.jsonl line (a request of many chunks).
const maxRecordLine = 64 << 20

// Load reads a run folder (or its run.json): run.json, and records.jsonl
// beside it when there is one.
func Load(path string) (*Run, error) {
	dir := path
	if filepath.Base(path) == result.RunFile {
		dir = filepath.Dir(path)
	}
	rr, err := result.Read(filepath.Join(dir, result.RunFile))
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: dir, Label: filepath.Base(dir), Run: rr}
	f, err := os.Open(filepath.Join(dir, result.RecordsFile))
	if err != nil {
		r.NoRecord = fmt.Sprintf("no %s in %s: the charts over time need it", result.RecordsFile, dir)
		return r, nil
	}
	defer f.Close()
	if err := r.readRecords(f, filepath.Join(dir, result.RecordsFile)); err != nil {
		return nil, err
	}
	return r, nil
}

// recLine is the part of a records.jsonl line the charts read.
type recLine struct {
	Warmup    bool    `json:"warmup"`
	Due       int64   `json:"due_ns"`
	Sent      int64   `json:"sent_ns"`
	First     int64   `json:"first_token_ns"`
	Chunks    []int64 `json:"chunks_ns"`
	End       int64   `json:"end_ns"`
	OSL       int     `json:"osl"`
	ServerOSL int     `json:"server_osl"`
	ErrKind   string  `json:"error_kind"`
	Streaming bool    `json:"streaming"`
}

func (r *Run) readRecords(rd io.Reader, name string) error {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64<<10), maxRecordLine)
	kinds := map[string]uint8{}
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var l recLine
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("%s line %d: %v", name, n, err)
		}
		if l.Warmup {
			r.Warmup++
			continue
		}
		q := Req{Due: l.Due, Sent: l.Sent, First: l.First, End: l.End, Last: l.End, OSL: int32(l.OSL), Streaming: l.Streaming}
		if l.ServerOSL > 0 {
			q.OSL = int32(l.ServerOSL)
		}
		if k := len(l.Chunks); k > 0 {
			q.Last = l.Chunks[k-1]
		}
		if l.ErrKind != "" {
			id, ok := kinds[l.ErrKind]
			if !ok {
				if len(r.ErrKinds) >= 254 {
					id = 255 // (more kinds than a run has: the rest share one)
				} else {
					r.ErrKinds = append(r.ErrKinds, l.ErrKind)
					id = uint8(len(r.ErrKinds))
					kinds[l.ErrKind] = id
				}
			}
			q.Err = id
		}
		r.Reqs = append(r.Reqs, q)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s line %d: longer than %d MiB", name, n+1, maxRecordLine>>20)
		}
		return fmt.Errorf("%s: %v", name, err)
	}
	sort.SliceStable(r.Reqs, func(i, j int) bool { return r.Reqs[i].Sent < r.Reqs[j].Sent })
	if len(r.Reqs) == 0 {
		r.NoRecord = fmt.Sprintf("%s has no profiled request", name)
	}
	return nil
}

// ErrKind is the kind of a failed request.
func (r *Run) ErrKind(q *Req) string {
	if q.Err == 0 {
		return ""
	}
	if int(q.Err) > len(r.ErrKinds) {
		return "other"
	}
	return r.ErrKinds[q.Err-1]
}
