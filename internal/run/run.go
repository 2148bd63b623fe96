// Package run is one load profile as a library call: plan it, check the
// target, start the workers, gather and check every record, and write the
// run folder. The profile command, the gate and calibrate all drive a run
// through Profile and get it back in memory; none of them reads run.json
// back from disk.
//
// A run that sent its load but failed as a whole (too many errors, lost
// records, a dead worker, Ctrl-C) still returns its Result, with an *Error
// that carries the exit code: a failed run is data too.
package run

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/otelexport"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/gputelemetry"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/servermetrics"
	"github.com/aiperf-action/aiperf-action/internal/sysstat"
	"github.com/aiperf-action/aiperf-action/internal/testbed"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// Options are how a run meets the outside world.
type Options struct {
	Cmdline     string                        // the command line, recorded in AIPerf's export
	WorkerExe   string                        // binary started as the workers (default WorkerBin())
	Stderr      io.Writer                     // the workers' output (default os.Stderr)
	Logf        func(format string, a ...any) // notices before the load starts (a drawn seed); nil: none
	Progress    Progress                      // nil: none
	KeepRecords bool                          // keep every record in Result.Records (calibrate joins them with the server's truth)
	Job         string                        // the CI job the run belongs to, recorded in run.json
	Scenario    string                        // run.json's scenario (default: the artifact folder's name)
	Environment *testbed.Environment          // what the run is measured on, recorded in run.json (nil: not recorded)
	// WorkerArgs are extra arguments for worker id (the tests give a
	// worker a skewed clock: --clock-skew); nil: none.
	WorkerArgs func(id int) []string
}

// A Progress hears of a run as it goes: Start with the number of requests
// planned, Record for each record as it arrives (from one goroutine), and
// Stop once the workers are done.
type Progress interface {
	Start(total int)
	Record(ok bool)
	Stop()
}

// Result is one finished run: run.json as written, the metrics summary it
// was made from, and the folder holding the artifacts.
type Result struct {
	Run     *result.Run
	JSON    []byte // run.json's bytes, as written (what a baseline stores)
	Summary *metrics.Summary
	Dir     string
	Records []record.Record // with Options.KeepRecords, every record, warmup included
}

// DefaultWorkers picks the worker count: one per 512 concurrent streams
// (or, for an open loop without a ceiling, per 512 requests/s), at least
// one, and at most one per CPU but one, leaving a core for everything else.
// Measured with calibrate on a 2-core machine shared with the simulator,
// one worker process beat two at 512 and at 2048 streams: extra processes
// only add contention when the cores are already full.
func DefaultWorkers(plan *schedule.Plan) int {
	ph := plan.Profiling()
	streams := ph.Ceiling
	if streams == 0 {
		streams = int(ph.Rate)
	}
	w := (streams + 511) / 512
	return max(1, min(w, runtime.NumCPU()-1))
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// SafeName makes s usable as one path element.
func SafeName(s string) string { return unsafeName.ReplaceAllString(s, "_") }

// DefaultDir is the artifact folder of p when --artifact-dir is not given.
func DefaultDir(p *config.Profile) string {
	return filepath.Join("artifacts", SafeName(fmt.Sprintf("%s-%s-c%d", p.Model, p.EndpointType, p.Concurrency)))
}

// Profile runs p and writes its artifacts. On a run that sent load, the
// Result is returned even when the run failed; the error then says why and
// carries the exit code (ExitCode). A nil Result means nothing was written.
func Profile(ctx context.Context, p *config.Profile, opt Options) (*Result, error) {
	if strings.TrimSpace(p.Model) == "" && strings.TrimSpace(p.URL) != "" {
		// No -m: the server's first model, as AIPerf takes it.
		h := http.Header{}
		if p.APIKey != "" {
			h.Set("Authorization", "Bearer "+p.APIKey)
		}
		for _, kv := range p.Headers {
			if k, v, ok := strings.Cut(kv, ":"); ok {
				h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		}
		m, err := DiscoverModel(ctx, p.URL, h)
		if err != nil {
			return nil, Failf("invalid flags:\n  -m/--model not given, and the server does not name one: %v", err)
		}
		p.Model = m
		if opt.Logf != nil {
			opt.Logf("model: %s (the first /v1/models lists; give -m to choose)", m)
		}
	}
	parsed, err := p.Resolve()
	if err != nil {
		return nil, Failf("invalid flags:\n  %s", strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	target, targets := parsed.Targets[0], parsed.Targets
	if !p.SeedSet {
		var b [8]byte
		_, _ = crand.Read(b[:])
		p.Seed = binary.LittleEndian.Uint64(b[:]) >> 1
		if opt.Logf != nil {
			opt.Logf("random seed: %d (repeat this run with --random-seed %d)", p.Seed, p.Seed)
		}
	}
	plan, err := schedule.Build(p, p.Seed)
	if err != nil {
		return nil, Failf("build plan: %v", err)
	}
	for _, t := range targets {
		if err := Reachable(ctx, t); err != nil {
			return nil, Failf("-u/--url %s: server not reachable: %v", t, err)
		}
	}
	dir := p.ArtifactDir
	if dir == "" {
		dir = DefaultDir(p)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, Failf("--artifact-dir: %v", err)
	}
	// What the run will write must be writable there, before any load: a
	// folder in the way of a file is found now, not after the run.
	for _, name := range []string{result.RunFile, result.RecordsFile, parsed.Exports.JSON, parsed.Exports.CSV, parsed.Exports.Records, result.InputsFile} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.Mode().IsRegular() {
			return nil, Failf("--artifact-dir %s: %s is not a regular file (a %s): the run could not write it", dir, name, fi.Mode().Type())
		}
	}
	if err := result.WriteAtomicFunc(filepath.Join(dir, result.InputsFile), plan.WriteInputsJSON); err != nil {
		return nil, Failf("write inputs.json: %v", err)
	}
	if err := roomForRecords(dir, p, plan, opt.Logf); err != nil {
		return nil, err
	}
	r := &profileRun{p: p, parsed: parsed, plan: plan, target: target, targets: targets, dir: dir, opt: opt, res: &Result{Dir: dir}, leftovers: leftovers(dir)}
	for _, w := range r.leftovers {
		if opt.Logf != nil {
			opt.Logf("%s", w)
		}
	}
	return r.execute(ctx)
}

// Bytes a record takes in records.jsonl, measured: about 300, and 11 more
// per streamed chunk (its timestamp).
const (
	recordBytes      = 300
	recordChunkBytes = 11
	// and in AIPerf's profile_export.jsonl (--export-level records), about
	// 900 and 14 a chunk (its inter-chunk latencies): 1,810 bytes a line
	// measured at 64 tokens, against records.jsonl's 1,011.
	aiperfRecordBytes      = 900
	aiperfRecordChunkBytes = 14
)

// roomForRecords compares the free space in dir with what records.jsonl
// will take (when the request count and output length are known): a folder
// with less than half of it is refused before any load, since the run
// would fail at its end having sent it all; one with less than all of it
// gets a warning.
func roomForRecords(dir string, p *config.Profile, plan *schedule.Plan, logf func(string, ...any)) error {
	n := 0
	for i := range plan.Phases {
		if plan.Phases[i].Cycle {
			return nil // a duration decides the count
		}
		n += plan.Phases[i].Len()
	}
	per := uint64(recordBytes)
	if p.Streaming {
		per += recordChunkBytes * uint64(max(p.OSLMean, 0))
	}
	if p.ExportLevel != result.ExportSummary {
		per += aiperfRecordBytes
		if p.Streaming {
			per += aiperfRecordChunkBytes * uint64(max(p.OSLMean, 0))
		}
	}
	need := uint64(n) * per
	free, ok := sysstat.FreeBytes(dir)
	if !ok || free >= need {
		return nil
	}
	mb := func(b uint64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
	msg := fmt.Sprintf("--artifact-dir %s has %s free; records.jsonl (and AIPerf's per-request export, unless --export-level summary) will take about %s for %d requests", dir, mb(free), mb(need), n)
	if free < need/2 {
		return Failf("%s: free some space or choose another folder", msg)
	}
	if logf != nil {
		logf("WARNING: %s: the run may fail at its end for want of space", msg)
	}
	return nil
}

// profileRun is one run under way: the profile and its plan, where it
// goes, and the result being filled.
type profileRun struct {
	p       *config.Profile
	parsed  *config.Resolved // what Resolve parsed of p
	plan    *schedule.Plan
	target  string
	targets []string // every --url's (target is the first)
	dir     string
	opt     Options
	res     *Result
	// leftovers: what an earlier run in this folder that never finished
	// (killed) left behind, said in this run's warnings.
	leftovers []string
}

// leftovers names the temp files a killed run left in dir: its records
// are in them, up to where it stopped. They are left in place.
func leftovers(dir string) []string {
	var out []string
	for _, pat := range []string{".*.tmp-*", ".tmp-*"} {
		ms, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, m := range ms {
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() {
				out = append(out, fmt.Sprintf("found %s (%d bytes, %s) left by an earlier run in this folder that did not finish (killed?): left in place", filepath.Base(m), fi.Size(), fi.ModTime().UTC().Format(time.RFC3339)))
			}
		}
	}
	return out
}

// execute runs the plan across the workers and writes the run folder.
func (r *profileRun) execute(ctx context.Context) (*Result, error) {
	plan, dir, res := r.plan, r.dir, r.res
	g, err := r.gather(ctx)
	if err != nil {
		return nil, err
	}
	interrupted := ctx.Err() != nil
	sum := g.agg.Summary()
	run := r.assemble(sum, g, interrupted)
	startEnd := [2]string{"", ""}
	if !g.t0.IsZero() {
		run.StartedAt = g.t0.Add(time.Duration(sum.FirstSent)).UTC().Format(time.RFC3339Nano)
		startEnd = [2]string{run.StartedAt, g.t0.Add(time.Duration(sum.LastEnd)).UTC().Format(time.RFC3339Nano)}
	}
	runErr := g.runErr
	received := sum.Counts.Requests + sum.Counts.Warmup
	if runErr == nil && !interrupted && !durationBound(plan) && received != g.total {
		runErr = fmt.Errorf("planned %d requests, received %d records", g.total, received)
	}
	if runErr != nil {
		run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, "run failed: "+runErr.Error())
	}
	res.Run, res.Summary = run, sum
	if res.JSON, err = writeArtifacts(dir, r.parsed.Exports, run, sum, startEnd, r.opt.Cmdline); err != nil {
		return nil, Failf("write artifacts in %s: %v", dir, err)
	}
	return res, r.verdict(sum, runErr, interrupted, received)
}

// gathered is what the load left: every record in the aggregator (and in
// records.jsonl), and what the workers, the OS and the server said.
type gathered struct {
	agg            *metrics.Aggregator
	total          int // requests planned (cycling pools aside)
	workers        int
	t0             time.Time // the profiling phase's common start
	out            *controller.Outcome
	runErr         error
	steal          *float64
	serverMetrics  map[string]result.ServerMetrics
	scrapeWarnings []string
	gpus           *gputelemetry.During // stopped; summarised once the window is known
	otel           *otelexport.Report   // what --otel-url's export managed
	branches       *branchTally         // a dag_jsonl run's (nil otherwise)
}

// gather sends the plan from the workers and takes in every record.
func (r *profileRun) gather(ctx context.Context) (*gathered, error) {
	p, plan, target, opt := r.p, r.plan, r.target, r.opt
	workers := p.Workers
	if workers == 0 {
		workers = DefaultWorkers(plan)
		if p.WorkersMax > 0 {
			workers = min(workers, p.WorkersMax)
		}
	}
	if len(p.WorkerWeights) > 0 {
		if err := controller.CheckWeights(plan, p.WorkerWeights); err != nil {
			return nil, Failf("%v", err)
		}
	}
	headers := r.parsed.Headers
	shards := controller.Shards(plan, p, wire.ShardSpec{Knobs: ReadKnobs(os.Getenv), URL: target, URLs: manyOf(r.targets), Headers: headers, APIKey: p.APIKey, EndpointType: p.EndpointType,
		RequestTemplate: p.RequestTemplate, PayloadTemplate: p.PayloadTemplate, ResponseField: p.ResponseField, Streaming: p.Streaming, TimeoutNs: int64(p.RequestTimeoutSeconds * float64(time.Second))}, workers)
	slos := r.parsed.SLOs
	g := &gathered{agg: metrics.NewAggregator(time.Duration(p.SliceDuration*float64(time.Second)), slos), workers: len(shards), branches: newBranchTally(plan.Profiling())}
	g.agg.FromDue = plan.Profiling().Open
	g.agg.ServerCounts = p.UseServerTokenCount
	if t, err := endpoint.Lookup(p.EndpointType); err == nil {
		g.agg.ItemUnit = t.Traits.Unit
	}
	rw, err := result.NewRecordWriter(r.dir)
	if err != nil {
		return nil, Failf("write records.jsonl: %v", err)
	}
	var aw *result.AIPerfRecordWriter // AIPerf's profile_export.jsonl, at --export-level records
	if p.ExportLevel != result.ExportSummary {
		if aw, err = result.NewAIPerfRecordWriter(r.dir, r.parsed.Exports.Records, func() time.Time { return g.t0 }); err != nil {
			return nil, Failf("write %s: %v", r.parsed.Exports.Records, err)
		}
	}
	for _, ph := range plan.Phases {
		if !ph.Cycle {
			g.total += ph.Len()
		}
	}
	var scrape *servermetrics.During
	if !p.NoServerMetrics {
		scrape = servermetrics.Start(ctx, p.ServerMetrics, target)
	}
	if gt := r.parsed.GPU; !gt.Off {
		g.gpus = gputelemetry.Start(ctx, gputelemetry.Options{URLs: gt.URLs, Defaults: gt.Defaults, Interval: gt.Interval, Extra: gt.Extra, Asked: p.ShowGPUTelemetry})
	}
	otel := r.startOTel(ctx, g)
	progress := opt.Progress
	if progress == nil {
		progress = noProgress{}
	}
	progress.Start(g.total)
	exe := opt.WorkerExe
	if exe == "" {
		exe = WorkerBin()
	}
	stderr := opt.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	cpu0, cpuErr := sysstat.ReadCPU()
	token, onListen := joinOptions(p.WorkerListen, len(shards), stderr)
	g.out, g.runErr = controller.Run(ctx, controller.Options{
		Listen:     p.WorkerListen,
		Token:      token,
		OnListen:   onListen,
		WorkerArgs: opt.WorkerArgs,
		Exe:        exe,
		Version:    Version,
		Stderr:     stderr,
		OnStart: func(phase int, t time.Time) {
			if phase == len(plan.Phases)-1 {
				g.t0 = t
			}
		},
		OnRecord: func(rec *record.Record) {
			g.agg.Add(rec)
			g.branches.add(rec)
			rw.Write(rec)
			if aw != nil {
				aw.Write(rec)
			}
			otel.Record(rec)
			if opt.KeepRecords {
				r.res.Records = append(r.res.Records, *rec)
			}
			progress.Record(rec.OK())
		},
	}, shards)
	progress.Stop()
	cpu1, cpuErr1 := sysstat.ReadCPU()
	if cpuErr == nil && cpuErr1 == nil {
		steal := sysstat.StealPct(cpu0, cpu1)
		g.steal = &steal
	}
	if scrape != nil {
		g.serverMetrics, g.scrapeWarnings = scrape.Stop()
	}
	if g.gpus != nil {
		g.gpus.Stop()
	}
	if otel != nil {
		rep := otel.Stop(context.WithoutCancel(ctx)) // (Ctrl-C still flushes what was recorded, within the exporter's timeout)
		g.otel = &rep
		if rep.Failed > 0 {
			g.scrapeWarnings = append(g.scrapeWarnings, fmt.Sprintf("--otel-url %s: %d of %d exports failed (last: %s); run.json is whole", rep.URL, rep.Failed, rep.Failed+rep.Exports, rep.LastError))
		}
	}
	closeRecords(rw, g)
	if aw != nil {
		if err := aw.Close(); err != nil {
			g.scrapeWarnings = append(g.scrapeWarnings, fmt.Sprintf("write %s: %v (records.jsonl has every record)", r.parsed.Exports.Records, err))
		}
	}
	return g, nil
}

// closeRecords puts records.jsonl in place; when that fails the run fails
// (its metrics are whole, but the per-request records are not on disk).
func closeRecords(rw *result.RecordWriter, g *gathered) {
	if err := rw.Close(); err != nil && g.runErr == nil {
		g.runErr = fmt.Errorf("write %s: %v (run.json's metrics are whole; the per-request records are lost)", result.RecordsFile, err)
	}
}

// assemble makes run.json's content from the summary and what was gathered.
func (r *profileRun) assemble(sum *metrics.Summary, g *gathered, interrupted bool) *result.Run {
	p, prof := r.p, r.plan.Profiling()
	if g.out != nil && g.out.LostInFlight > 0 {
		sum.Counts = countLost(sum.Counts, g.out.LostInFlight, g.out.Problems)
	}
	run := &result.Run{
		Schema:      result.Schema,
		Tool:        result.Tool{Name: "aiperf-action", Version: Version},
		Scenario:    cmp.Or(r.opt.Scenario, filepath.Base(r.dir)),
		ProfileHash: r.plan.Hash(p),
		Seed:        p.Seed,
		Repeat:      p.Repeat,
		Job:         r.opt.Job,
		PayloadSeed: schedule.PayloadSeed(p, p.Seed),
		DurationS:   sum.DurationS,
		Target:      result.Target{URL: r.target, URLs: manyOf(r.targets), Model: p.Model, Models: manyOf(p.Models()), Selection: modelSelection(p), EndpointType: p.EndpointType, Streaming: p.Streaming},
		Load:        loadOf(p, prof),
		Counts:      sum.Counts,
		Metrics:     sum.Metrics,
		Cancelled:   interrupted,
		ToolHealth: result.ToolHealth{ScheduleLagMs: sum.Lag, Workers: g.workers, Warnings: []string{}, Integrity: []string{},
			SlotWaits: sum.SlotWaits, ConnRetries: sum.ConnRetries, CPUStealPct: g.steal, OTel: g.otel},
		ServerMetrics: g.serverMetrics,
		Environment:   r.opt.Environment,
	}
	run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, r.leftovers...)
	run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, sum.TokenWarnings...)
	run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, g.scrapeWarnings...)
	if g.gpus != nil && !g.t0.IsZero() {
		// The measurement: its first request sent to its last answer.
		w := gputelemetry.Window{Start: g.t0.Add(time.Duration(sum.FirstSent)), End: g.t0.Add(time.Duration(sum.LastEnd))}
		var warns []string
		run.GPUTelemetry, warns = g.gpus.Summary(w, sum.TotalOSL)
		run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, warns...)
	}
	run.ToolHealth.PromptCache = servermetrics.PromptCacheOf(g.serverMetrics)
	g.branches.into(run, r.plan.Profiling())
	if !p.SharesPrefixes() { // (a profile that means its prompts to share prefixes is meant to hit the cache)
		run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, cacheWarning(run.ToolHealth.PromptCache)...)
	}
	if prof.Open {
		run.ToolHealth.RequestedRate = prof.Rate
		run.ToolHealth.PlannedRate = sum.PlannedRate()
		run.ToolHealth.AchievedRate = sum.AchievedRate()
	}
	if g.out != nil { // what the workers used is known once they exited
		workerHealth(&run.ToolHealth, g.out, sum)
	}
	return run
}

// verdict is how the run as a whole went.
func (r *profileRun) verdict(sum *metrics.Summary, runErr error, interrupted bool, received int) error {
	p, dir := r.p, r.dir
	switch {
	case interrupted:
		return &Error{Code: ExitInterrupted, Err: fmt.Errorf("interrupted; partial results (%d requests) written to %s", received, dir)}
	case runErr != nil:
		return Failf("run failed: %v", runErr)
	case sum.Counts.OK == 0:
		return Failf("every request failed (%s)", Kinds(sum.Counts.ErrorsByKind))
	case float64(sum.Counts.FailedNotCancelled()) > p.MaxErrorRate/100*float64(sum.Counts.Requests):
		n := sum.Counts.FailedNotCancelled()
		return Failf("%d of %d requests failed (%.1f%% > --max-error-rate %g%%; cancellations not counted): %s", n, sum.Counts.Requests,
			100*float64(n)/float64(sum.Counts.Requests), p.MaxErrorRate, Kinds(sum.Counts.ErrorsByKind))
	}
	return nil
}

type noProgress struct{}

func (noProgress) Start(int)   {}
func (noProgress) Record(bool) {}
func (noProgress) Stop()       {}

// Kinds lists error counts by kind, "kind ×n, ...", sorted.
func Kinds(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, v))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "no error kinds recorded"
	}
	return strings.Join(parts, ", ")
}

// writeArtifacts writes run.json and AIPerf's exports; it returns
// run.json's bytes.
func writeArtifacts(dir string, names result.ExportNames, run *result.Run, sum *metrics.Summary, startEnd [2]string, cmdline string) ([]byte, error) {
	js, err := result.Encode(run)
	if err != nil {
		return nil, err
	}
	if err := result.WriteFileAtomic(filepath.Join(dir, result.RunFile), js); err != nil {
		return nil, err
	}
	b, err := result.AIPerfJSON(run, sum, startEnd, cmdline)
	if err != nil {
		return nil, err
	}
	if err := result.WriteFileAtomic(filepath.Join(dir, names.JSON), b); err != nil {
		return nil, err
	}
	c, err := result.AIPerfCSV(run)
	if err != nil {
		return nil, err
	}
	return js, result.WriteFileAtomic(filepath.Join(dir, names.CSV), c)
}

// durationBound reports whether a phase ends at its duration rather than
// when its entries run out, so that fewer records than entries is no
// loss: a cycling pool, or multi-turn sessions with --benchmark-duration.
func durationBound(plan *schedule.Plan) bool {
	for _, ph := range plan.Phases {
		if ph.Cycle || ph.Sessions && ph.DurationNs > 0 {
			return true
		}
	}
	return false
}

func loadOf(p *config.Profile, prof *schedule.Phase) result.Load {
	l := result.Load{Concurrency: p.Concurrency, Ceiling: prof.Ceiling, RequestCount: prof.Len(),
		ISLMean: p.ISLMean, ISLStddev: p.ISLStddev, OSLMean: p.OSLMean, OSLStddev: p.OSLStddev,
		ExtraInputs: p.ExtraInputs, Goodput: p.Goodput, BenchmarkDuration: p.BenchmarkDuration, FixedSchedule: p.Replays()}
	if prof.Cycle {
		l.RequestCount = 0
	}
	if p.BenchmarkDuration > 0 {
		l.GracePeriod = p.GracePeriod
	}
	if p.RequestRate > 0 {
		l.RequestRate, l.ArrivalPattern = p.RequestRate, p.ArrivalPattern
		if p.ArrivalPattern == "gamma" {
			l.ArrivalSmoothness = p.ArrivalSmoothness
		}
	}
	switch {
	case p.WarmupRequestCount > 0:
		l.Warmup = fmt.Sprintf("%d requests", p.WarmupRequestCount)
	case p.WarmupDuration > 0:
		l.Warmup = fmt.Sprintf("%gs", p.WarmupDuration)
	}
	return l
}

// manyOf is urls when there are several, else nil (one server is URL).
func manyOf(urls []string) []string {
	if len(urls) < 2 {
		return nil
	}
	return urls
}

// modelSelection is how several models were assigned ("" with one).
func modelSelection(p *config.Profile) string {
	if len(p.MoreModels) == 0 {
		return ""
	}
	return cmp.Or(p.ModelSelection, config.ModelRoundRobin)
}
