// Package result reads and writes a run's folder: run.json (the contract
// that compare and baselines read), AIPerf-shaped exports, records.jsonl and
// inputs.json. Every file is written atomically (temp file + rename), so a
// reader never sees half a file and nothing of the user's is clobbered
// half-way.
package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/otelexport"

	"github.com/aiperf-action/aiperf-action/internal/gputelemetry"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/servermetrics"
	"github.com/aiperf-action/aiperf-action/internal/testbed"
)

// Schema is the run.json schema this build writes; readers accept any
// aiperf-action/run/v1 document and reject other majors.
const Schema = "aiperf-action/run/v1"

// Run is run.json.
type Run struct {
	Schema      string `json:"schema"`
	Tool        Tool   `json:"tool"`
	Scenario    string `json:"scenario"`
	ProfileHash string `json:"profile_hash"`
	Seed        uint64 `json:"seed"`
	// The gate's repeat index (0: a lone run) and the seed of its prompts'
	// words: every repeat sends its own prompts (seeds.PayloadSeed).
	Repeat int `json:"repeat,omitempty"`
	// Job names the CI job the run came from (the gate's runs of one job
	// share its machine, server start and noise).
	Job         string                    `json:"job,omitempty"`
	PayloadSeed uint64                    `json:"payload_seed"`
	StartedAt   string                    `json:"started_at"`
	DurationS   float64                   `json:"duration_s"`
	Target      Target                    `json:"target"`
	Load        Load                      `json:"load"`
	Counts      metrics.Counts            `json:"counts"`
	Metrics     map[string]metrics.Metric `json:"metrics"`
	ToolHealth  ToolHealth                `json:"tool_health"`
	// Environment is what the run was measured on (the gate records it):
	// its testbed key and fingerprint.
	Environment *testbed.Environment `json:"environment,omitempty"`
	// ServerMetrics summarises each scraped /metrics endpoint, by URL.
	ServerMetrics map[string]ServerMetrics `json:"server_metrics,omitempty"`
	// GPUTelemetry is each GPU a DCGM exporter reported over the
	// measurement (warmup left out), and its energy per output token.
	GPUTelemetry *GPUTelemetry `json:"gpu_telemetry,omitempty"`
	// BranchStats counts a dag_jsonl run's branches, as AIPerf's.
	BranchStats *BranchStats `json:"branch_stats,omitempty"`
	Cancelled   bool         `json:"was_cancelled"`
	// Accepted, in a stored baseline run, says the regression it records
	// was accepted: the pull request merged as its commit carried the
	// accept label ("#12, labelled perf-regression-accepted").
	Accepted string `json:"accepted,omitempty"`
}

// BranchStats is AIPerf's branch_stats over the measurement: the child
// conversations (every instance but a tree's root) spawned (a turn sent),
// completed (every turn answered), errored, truncated (spawned, some turns
// never sent) and delayed (a delay before the first turn); the joins
// reached (parents suspended), sent (resumed) and never sent (suppressed).
type BranchStats struct {
	ChildrenSpawned              int `json:"children_spawned"`
	ChildrenCompleted            int `json:"children_completed"`
	ChildrenErrored              int `json:"children_errored"`
	ChildrenTruncated            int `json:"children_truncated"`
	ChildrenDelayed              int `json:"children_delayed"`
	ParentsSuspended             int `json:"parents_suspended"`
	ParentsResumed               int `json:"parents_resumed"`
	ParentsFailedDueToChildError int `json:"parents_failed_due_to_child_error"`
	JoinsSuppressed              int `json:"joins_suppressed"`
}

// Tool identifies the binary that made the run.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Target is what was measured.
type Target struct {
	URL          string         `json:"url"`
	URLs         []string       `json:"urls,omitempty"` // with several --url, every one (URL is the first); request i went to URLs[i mod n]
	Model        string         `json:"model"`
	Models       []string       `json:"models,omitempty"` // with several models, every one (Model is the first); ModelSelection assigned them
	Selection    string         `json:"model_selection_strategy,omitempty"`
	EndpointType string         `json:"endpoint_type"`
	Streaming    bool           `json:"streaming"`
	Server       map[string]any `json:"server,omitempty"`
}

// Load is the load profile, as normalized into profile_hash.
type Load struct {
	Concurrency       int      `json:"concurrency"`
	Ceiling           int      `json:"ceiling"` // in-flight limit; 0: none (open loop)
	RequestCount      int      `json:"request_count"`
	RequestRate       float64  `json:"request_rate,omitempty"`
	ArrivalPattern    string   `json:"arrival_pattern,omitempty"`
	ArrivalSmoothness float64  `json:"arrival_smoothness,omitempty"`
	BenchmarkDuration float64  `json:"benchmark_duration_s,omitempty"`
	GracePeriod       float64  `json:"grace_period_s,omitempty"`
	FixedSchedule     bool     `json:"fixed_schedule,omitempty"`
	Warmup            string   `json:"warmup,omitempty"`
	ISLMean           int      `json:"isl_mean"`
	ISLStddev         float64  `json:"isl_stddev"`
	OSLMean           int      `json:"osl_mean"`
	OSLStddev         float64  `json:"osl_stddev"`
	ExtraInputs       []string `json:"extra_inputs,omitempty"`
	Goodput           string   `json:"goodput,omitempty"`
}

// ToolHealth is how the tester itself did.
type ToolHealth struct {
	ScheduleLagMs *metrics.Dist      `json:"schedule_lag_ms,omitempty"`
	RequestedRate float64            `json:"requested_rate,omitempty"` // --request-rate
	PlannedRate   float64            `json:"planned_rate,omitempty"`   // the plan's own rate over what was sent
	AchievedRate  float64            `json:"achieved_rate,omitempty"`  // the rate requests were actually sent at
	SlotWaits     int                `json:"slot_waits"`               // due requests that waited for a concurrency slot
	CPUStealPct   *float64           `json:"cpu_steal_pct,omitempty"`  // CPU time the hypervisor took from this machine during the run
	ClientCPU     []WorkerCPU        `json:"client_cpu,omitempty"`     // per worker process, from the OS
	GCPauseMs     float64            `json:"gc_pause_ms"`              // total GC pause across workers
	ConnRetries   int                `json:"conn_retries"`             // requests resent after the server closed a kept-alive connection
	Stamps        *Stamps            `json:"stamps,omitempty"`         // how response reads were timed
	PromptCache   *PromptCache       `json:"prompt_cache,omitempty"`   // the server's prefix-cache hits over the run, where its /metrics count them
	OTel          *otelexport.Report `json:"otel,omitempty"`           // what --otel-url's export to a collector managed
	Workers       int                `json:"workers"`
	WorkerPIDs    map[int]int        `json:"worker_pids,omitempty"`
	LostInFlight  int                `json:"lost_in_flight,omitempty"` // requests that workers which died had sent and never recorded
	Records       map[int]uint64     `json:"records_by_worker"`
	// Clocks are the workers' clocks against the controller's, each
	// measured before its shard (wire.ClockOffset): the phases' start
	// instants were sent to each in its own clock.
	Clocks    []WorkerClock `json:"clocks,omitempty"`
	Integrity []string      `json:"integrity_problems"`
	Warnings  []string      `json:"warnings"`
}

// Stamps is how the workers timed what they read. The event loop stamps a
// read with the kernel's receive time, so the loop's own delay in getting
// to a socket (ReadDelayMs) stays out of the latencies; net/http's reads
// take the receive time of the newest data their connection read (between
// the data's arrival and the read), where the connection keeps one.
type Stamps struct {
	Source string `json:"source"` // "kernel", "read" or "mixed" (record.Stamps.Source)
	record.Stamps
	ReadDelayMs *metrics.Dist `json:"read_delay_ms,omitempty"` // kernel receive → read return, over kernel-stamped reads
}

// PromptCache is how many of a run's prompt tokens the server served from
// its prefix cache (servermetrics.PromptCacheOf).
type PromptCache = servermetrics.PromptCache

// WorkerClock is one worker's clock offset to the controller's: its clock
// minus the controller's, within ± uncertainty, from the least round trip of
// its samples.
type WorkerClock struct {
	Worker        int   `json:"worker"`
	OffsetNs      int64 `json:"offset_ns"`
	UncertaintyNs int64 `json:"uncertainty_ns"`
	RTTNs         int64 `json:"rtt_ns"`
	Samples       int   `json:"samples"`
}

// WorkerCPU is one worker process's CPU use: user + system seconds over its
// life, and that as a share of one core (Util 1 = one core busy throughout).
type WorkerCPU struct {
	Worker      int     `json:"worker"`
	CPUSeconds  float64 `json:"cpu_s"`
	WallSeconds float64 `json:"wall_s"`
	Util        float64 `json:"util"`
	// MaxRSSMB is the process's peak resident memory, from the OS (0 where
	// it does not say).
	MaxRSSMB float64 `json:"max_rss_mb,omitempty"`
}

// FileMode is every artifact's mode: an ordinary file, readable by a later
// step that runs as another user (an upload, a container action as root).
const FileMode = 0o644

// WriteFileAtomic writes data to path through a temp file in the same folder
// and a rename, as an ordinary file (FileMode).
func WriteFileAtomic(path string, data []byte) error {
	return WriteAtomicFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomicFunc is WriteFileAtomic for content that write streams into
// the temp file.
func WriteAtomicFunc(path string, write func(w io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(FileMode)
	if err == nil {
		err = write(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// WriteJSON writes v as indented JSON, atomically.
func WriteJSON(path string, v any) error {
	b, err := Encode(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFileAtomic(path, b)
}

// Encode is v as WriteJSON writes it: indented, with a final newline.
func Encode(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Read reads and checks a run.json. path may be the file or its folder.
func Read(path string) (*Run, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "run.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// schemaMajor is the schemas Parse reads: this one's major version, v1,
// and any v1.N (a minor version only adds fields).
var schemaMajor = regexp.MustCompile(`^aiperf-action/run/v1(\.[0-9]+)?$`)

// Parse checks and decodes a run.json's bytes; name is used in errors.
func Parse(b []byte, path string) (*Run, error) {
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a valid run.json: %w", path, err)
	}
	if r.Schema == "" {
		return nil, fmt.Errorf("%s: no \"schema\" field; not an aiperf-action run.json", path)
	}
	if !schemaMajor.MatchString(r.Schema) {
		return nil, fmt.Errorf("%s: schema %q is not supported (want %s)", path, r.Schema, Schema)
	}
	if r.Metrics == nil {
		return nil, errors.New(path + ": no metrics")
	}
	if err := r.checkCounts(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// checkCounts refuses counts no run can have: a gate would otherwise judge
// an error rate from them.
func (r *Run) checkCounts() error {
	c := r.Counts
	for _, f := range []struct {
		name string
		v    int
	}{{"requests", c.Requests}, {"ok", c.OK}, {"errors", c.Errors}, {"good", c.Good}, {"warmup", c.Warmup}, {"cancelled", c.Cancelled}} {
		if f.v < 0 {
			return fmt.Errorf("counts.%s is %d: a count cannot be negative", f.name, f.v)
		}
	}
	for k, v := range c.ErrorsByKind {
		if v < 0 {
			return fmt.Errorf("counts.errors_by_kind.%s is %d: a count cannot be negative", k, v)
		}
	}
	if c.OK+c.Errors != c.Requests {
		return fmt.Errorf("counts: ok %d + errors %d is not requests %d", c.OK, c.Errors, c.Requests)
	}
	if c.Requests > 0 && !(r.DurationS > 0) {
		return fmt.Errorf("duration_s is %v for %d requests: want a positive duration", r.DurationS, c.Requests)
	}
	return nil
}

// ServerMetrics is one scraped endpoint over the run.
type ServerMetrics = servermetrics.Endpoint

// GPUTelemetry is the DCGM exporters' GPUs over the measurement.
type GPUTelemetry = gputelemetry.Telemetry

// Loaded is a run.json with the path it came from.
type Loaded struct {
	Path string
	Run  *Run
}

// ReadAll reads the runs at path: a run.json file, a run folder (holding
// run.json), or a folder of run folders. Every problem names its path.
func ReadAll(path string) ([]Loaded, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		r, err := Read(path)
		if err != nil {
			return nil, err
		}
		return []Loaded{{path, r}}, nil
	}
	if _, err := os.Stat(filepath.Join(path, RunFile)); err == nil {
		r, err := Read(filepath.Join(path, RunFile))
		if err != nil {
			return nil, err
		}
		return []Loaded{{path, r}}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []Loaded
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(path, e.Name(), RunFile)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		r, err := Read(p)
		if err != nil {
			return nil, err
		}
		out = append(out, Loaded{filepath.Join(path, e.Name()), r})
	}
	if len(out) == 0 {
		return readStored(path)
	}
	return out, nil
}

// readStored reads a baseline folder as the gate writes it,
// <root>/<scenario>/<profile>/<time>-<commit>-r<i>.json, from its root or
// from a scenario's or a profile's folder: its runs, oldest first, when
// they are of one profile.
func readStored(path string) ([]Loaded, error) {
	byDir := map[string][]string{}
	var dirs []string
	err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(path, p); d.IsDir() && strings.Count(rel, string(filepath.Separator)) >= 2 {
			return filepath.SkipDir // deeper than <scenario>/<profile>
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") {
			dir := filepath.Dir(p)
			if byDir[dir] == nil {
				dirs = append(dirs, dir)
			}
			byDir[dir] = append(byDir[dir], p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case len(dirs) == 0:
		return nil, fmt.Errorf("%s: no run.json in it or in its subfolders, and no baseline runs", path)
	case len(dirs) > 1:
		sort.Strings(dirs)
		return nil, fmt.Errorf("%s holds the baseline runs of %d scenarios or profiles: name one of %s", path, len(dirs), strings.Join(dirs, ", "))
	}
	files := byDir[dirs[0]]
	sort.Strings(files) // the names start with the time they were stored
	var out []Loaded
	for _, f := range files {
		r, err := Read(f)
		if err != nil {
			return nil, err
		}
		out = append(out, Loaded{f, r})
	}
	return out, nil
}
