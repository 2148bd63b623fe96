package cli

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/servermetrics"
	"github.com/aiperf-action/aiperf-action/internal/sysstat"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// profileFlags binds AIPerf-named flags into p.
func profileFlags(fs *pflag.FlagSet, p *config.Profile) {
	fs.StringVarP(&p.Model, "model", "m", p.Model, "model name to put in requests (required)")
	fs.StringVarP(&p.URL, "url", "u", p.URL, "server URL, e.g. http://127.0.0.1:8000")
	fs.StringVar(&p.Endpoint, "endpoint", p.Endpoint, "custom endpoint path (default from --endpoint-type)")
	fs.StringVar(&p.EndpointType, "endpoint-type", p.EndpointType, "chat | completions")
	fs.BoolVar(&p.Streaming, "streaming", p.Streaming, "stream responses (SSE)")
	fs.IntVar(&p.Concurrency, "concurrency", p.Concurrency, "requests in flight (closed loop), split across workers")
	fs.IntVar(&p.RequestCount, "request-count", p.RequestCount, "requests to send")
	fs.IntVar(&p.ISLMean, "synthetic-input-tokens-mean", p.ISLMean, "mean input length in tokens")
	fs.IntVar(&p.ISLMean, "isl", p.ISLMean, "alias of --synthetic-input-tokens-mean")
	fs.Float64Var(&p.ISLStddev, "synthetic-input-tokens-stddev", p.ISLStddev, "input length standard deviation")
	fs.IntVar(&p.OSLMean, "output-tokens-mean", p.OSLMean, "mean requested output tokens (max_tokens); 0 leaves it unset")
	fs.IntVar(&p.OSLMean, "osl", p.OSLMean, "alias of --output-tokens-mean")
	fs.Float64Var(&p.OSLStddev, "output-tokens-stddev", p.OSLStddev, "requested output tokens standard deviation")
	fs.StringArrayVar(&p.ExtraInputs, "extra-inputs", p.ExtraInputs, "key:value added to every request body; JSON values kept as JSON (repeatable)")
	fs.StringArrayVarP(&p.Headers, "header", "H", p.Headers, "\"Name: value\" HTTP header (repeatable)")
	fs.StringVar(&p.APIKey, "api-key", p.APIKey, "bearer token for the Authorization header")
	fs.Uint64Var(&p.Seed, "random-seed", p.Seed, "root seed for everything random (default: drawn and printed)")
	fs.Float64Var(&p.RequestTimeoutSeconds, "request-timeout-seconds", p.RequestTimeoutSeconds, "per-request timeout")
	fs.StringVar(&p.ArtifactDir, "artifact-dir", p.ArtifactDir, "folder for run.json and the other artifacts (default artifacts/<model>-<type>-c<concurrency>)")
	fs.StringVar(&p.Goodput, "goodput", p.Goodput, "SLOs \"metric:value ...\" (ms, or tokens/sec/user)")
	fs.IntVar(&p.Workers, "workers", p.Workers, "worker processes (default: one per 512 concurrent streams, at most one per CPU but one)")
	fs.Float64Var(&p.MaxErrorRate, "max-error-rate", p.MaxErrorRate, "percent of failed requests above which the run fails (exit 2)")
	fs.Float64Var(&p.SliceDuration, "slice-duration", p.SliceDuration, "seconds per metrics window in run.json")

	fs.Float64Var(&p.RequestRate, "request-rate", p.RequestRate, "open loop: requests per second (with --concurrency, the concurrency is a ceiling)")
	fs.StringVar(&p.ArrivalPattern, "arrival-pattern", p.ArrivalPattern, "constant | poisson | gamma")
	fs.Float64Var(&p.ArrivalSmoothness, "arrival-smoothness", p.ArrivalSmoothness, "gamma shape k: 1 is Poisson, <1 burstier, >1 smoother (vLLM's --burstiness)")
	fs.Float64Var(&p.BenchmarkDuration, "benchmark-duration", p.BenchmarkDuration, "seconds to send for, instead of --request-count")
	fs.Float64Var(&p.GracePeriod, "benchmark-grace-period", p.GracePeriod, "seconds to wait for in-flight requests after --benchmark-duration; the rest are cancelled")
	fs.IntVar(&p.WarmupRequestCount, "warmup-request-count", p.WarmupRequestCount, "warmup requests before profiling (kept in records.jsonl, left out of metrics)")
	fs.Float64Var(&p.WarmupDuration, "warmup-duration", p.WarmupDuration, "seconds of warmup before profiling")
	fs.IntVar(&p.WarmupConcurrency, "warmup-concurrency", p.WarmupConcurrency, "warmup concurrency (default --concurrency)")
	fs.Float64Var(&p.WarmupRequestRate, "warmup-request-rate", p.WarmupRequestRate, "warmup request rate (default --request-rate)")
	fs.Float64Var(&p.RateRampDuration, "request-rate-ramp-duration", p.RateRampDuration, "seconds over which the rate rises linearly from 0 to --request-rate")
	fs.Float64Var(&p.ConcurrencyRampDuration, "concurrency-ramp-duration", p.ConcurrencyRampDuration, "seconds over which the concurrency rises linearly from 1 to --concurrency")
	fs.Float64Var(&p.CancellationRate, "request-cancellation-rate", p.CancellationRate, "percent of requests to cancel")
	fs.Float64Var(&p.CancellationDelay, "request-cancellation-delay", p.CancellationDelay, "seconds after sending that a cancelled request is cancelled")
	fs.StringVar(&p.InputFile, "input-file", p.InputFile, "JSONL prompts: {\"text\"|\"input_length\", \"output_length\", \"timestamp\" (ms)}")
	fs.BoolVar(&p.FixedSchedule, "fixed-schedule", p.FixedSchedule, "send at the --input-file timestamps")
	fs.BoolVar(&p.FixedScheduleAutoOffset, "fixed-schedule-auto-offset", p.FixedScheduleAutoOffset, "shift the schedule so its first timestamp is 0")
	fs.IntVar(&p.FixedScheduleStartOffset, "fixed-schedule-start-offset", p.FixedScheduleStartOffset, "ms: skip requests timestamped before this")
	fs.IntVar(&p.FixedScheduleEndOffset, "fixed-schedule-end-offset", p.FixedScheduleEndOffset, "ms: skip requests timestamped after this")
	fs.IntVar(&p.NumDatasetEntries, "num-dataset-entries", p.NumDatasetEntries, "prompts cycled by a --benchmark-duration closed loop")
	fs.BoolVar(&p.UseServerTokenCount, "use-server-token-count", p.UseServerTokenCount, "take ISL/OSL from the server's usage (adds stream_options.include_usage to streams)")
	fs.StringArrayVar(&p.ServerMetrics, "server-metrics", p.ServerMetrics, "Prometheus /metrics URL to scrape during the run (repeatable; default <url>/metrics when it answers)")
	fs.BoolVar(&p.NoServerMetrics, "no-server-metrics", p.NoServerMetrics, "don't scrape the server's /metrics")
}

// DefaultWorkers picks the worker count: one per 512 concurrent streams
// (or, for an open loop without a ceiling, per 512 requests/s), at least
// one, and at most one per CPU but one, leaving a core for everything else.
// Measured with calibrate on a 2-core machine shared with the simulator,
// one worker process beat two at 512 and at 2048 streams: extra processes
// only add contention when the cores are already full.
func DefaultWorkers(p *config.Profile) int {
	streams := p.Ceiling()
	if streams == 0 {
		streams = int(p.RequestRate)
	}
	w := (streams + 511) / 512
	return max(1, min(w, runtime.NumCPU()-1))
}

func runProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
	p := config.DefaultProfile
	profileFlags(fs, &p)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	p.SeedSet = fs.Changed("random-seed")
	p.ConcurrencySet = fs.Changed("concurrency")
	p.RequestCountSet = fs.Changed("request-count")
	return profile(ctx, &p, "aiperf-action profile "+strings.Join(args, " "), stdout, stderr)
}

// WorkerBinEnv names a binary to start as the worker processes instead of
// this one (it must be the same version). Tests built with -race use it to
// time requests from an uninstrumented build.
const WorkerBinEnv = "AIPERF_ACTION_WORKER_BIN"

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// profile runs p and writes its artifacts; it returns the exit code.
func profile(ctx context.Context, p *config.Profile, cmdline string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "aiperf-action profile: "+format+"\n", a...)
		return ExitError
	}
	if err := p.Validate(); err != nil {
		return fail("invalid flags:\n  %s", strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	target, _ := p.TargetURL()
	if !p.SeedSet {
		var b [8]byte
		_, _ = crand.Read(b[:])
		p.Seed = binary.LittleEndian.Uint64(b[:]) >> 1
		fmt.Fprintf(stdout, "random seed: %d (repeat this run with --random-seed %d)\n", p.Seed, p.Seed)
	}
	plan, err := schedule.Build(p, p.Seed)
	if err != nil {
		return fail("build plan: %v", err)
	}
	if err := reachable(ctx, target); err != nil {
		return fail("-u/--url %s: server not reachable: %v", target, err)
	}
	dir := p.ArtifactDir
	if dir == "" {
		dir = filepath.Join("artifacts", unsafeName.ReplaceAllString(fmt.Sprintf("%s-%s-c%d", p.Model, p.EndpointType, p.Concurrency), "_"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("--artifact-dir: %v", err)
	}
	inputs, err := plan.InputsJSON()
	if err != nil {
		return fail("render inputs.json: %v", err)
	}
	if err := result.WriteFileAtomic(filepath.Join(dir, result.InputsFile), inputs); err != nil {
		return fail("write inputs.json: %v", err)
	}

	workers := p.Workers
	if workers == 0 {
		workers = DefaultWorkers(p)
	}
	shards := makeShards(p, plan, target, workers)
	prof := plan.Profiling()
	slos, _ := config.ParseGoodput(p.Goodput)
	headers, _ := config.ParseHeaders(p.Headers)
	for _, s := range shards {
		s.Headers = headers
	}
	agg := metrics.NewAggregator(time.Duration(p.SliceDuration*float64(time.Second)), slos)
	agg.FromDue = prof.Open
	agg.ServerCounts = p.UseServerTokenCount
	rw, err := result.NewRecordWriter(dir)
	if err != nil {
		return fail("write records.jsonl: %v", err)
	}
	var done, failed atomic.Int64
	total := 0
	for _, ph := range plan.Phases {
		if !ph.Cycle {
			total += len(ph.Entries)
		}
	}
	stopScrape := scrapeServerMetrics(ctx, p, target)
	stopProgress := progress(stdout, total, &done, &failed)
	var t0 time.Time
	cpu0, cpuErr := sysstat.ReadCPU()
	out, runErr := controller.Run(ctx, controller.Options{
		Exe:     os.Getenv(WorkerBinEnv),
		Version: Version,
		Stderr:  stderr,
		OnStart: func(phase int, t time.Time) {
			if phase == len(plan.Phases)-1 {
				t0 = t
			}
		},
		OnRecord: func(r *record.Record) {
			agg.Add(r)
			rw.Write(r)
			done.Add(1)
			if !r.OK() {
				failed.Add(1)
			}
		},
	}, shards)
	stopProgress()
	cpu1, cpuErr1 := sysstat.ReadCPU()
	serverMetrics, scrapeWarnings := stopScrape()
	if err := rw.Close(); err != nil {
		fmt.Fprintf(stderr, "aiperf-action profile: write records.jsonl: %v\n", err)
	}
	interrupted := ctx.Err() != nil

	sum := agg.Summary()
	run := &result.Run{
		Schema:      result.Schema,
		Tool:        result.Tool{Name: "aiperf-action", Version: Version},
		Scenario:    filepath.Base(dir),
		ProfileHash: plan.Hash(p),
		Seed:        p.Seed,
		DurationS:   sum.DurationS,
		Target:      result.Target{URL: target, Model: p.Model, EndpointType: p.EndpointType, Streaming: p.Streaming},
		Load:        loadOf(p, prof),
		Counts:      sum.Counts,
		Metrics:     sum.Metrics,
		Cancelled:   interrupted,
		ToolHealth: result.ToolHealth{ScheduleLagMs: sum.Lag, Workers: len(shards), Warnings: []string{}, Integrity: []string{},
			SlotWaits: sum.SlotWaits, ConnRetries: sum.ConnRetries},
		ServerMetrics: serverMetrics,
	}
	run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, sum.TokenWarnings...)
	run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, scrapeWarnings...)
	if cpuErr == nil && cpuErr1 == nil {
		steal := sysstat.StealPct(cpu0, cpu1)
		run.ToolHealth.CPUStealPct = &steal
	}
	if prof.Open {
		run.ToolHealth.RequestedRate = prof.Rate
		run.ToolHealth.PlannedRate = sum.PlannedRate()
		run.ToolHealth.AchievedRate = sum.AchievedRate()
	}
	if out != nil { // what the workers used is known once they exited
		workerHealth(&run.ToolHealth, out, sum)
	}
	startEnd := [2]string{"", ""}
	if !t0.IsZero() {
		run.StartedAt = t0.Add(time.Duration(sum.FirstSent)).UTC().Format(time.RFC3339Nano)
		startEnd = [2]string{run.StartedAt, t0.Add(time.Duration(sum.LastEnd)).UTC().Format(time.RFC3339Nano)}
	}
	received := sum.Counts.Requests + sum.Counts.Warmup
	if runErr == nil && !interrupted && !anyCycle(plan) && received != total {
		runErr = fmt.Errorf("planned %d requests, received %d records", total, received)
	}
	if runErr != nil {
		run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, "run failed: "+runErr.Error())
	}
	if err := writeArtifacts(dir, run, sum, startEnd, cmdline); err != nil {
		return fail("write artifacts in %s: %v", dir, err)
	}
	report.Console(stdout, run, sum.ErrorMsgs)
	fmt.Fprintf(stdout, "Artifacts: %s\n", dir)

	switch {
	case interrupted:
		fmt.Fprintf(stderr, "aiperf-action profile: interrupted; partial results (%d requests) written to %s\n", received, dir)
		return ExitInterrupted
	case runErr != nil:
		return fail("run failed: %v", runErr)
	case sum.Counts.OK == 0:
		return fail("every request failed (%s)", kinds(sum.Counts.ErrorsByKind))
	case float64(sum.Counts.FailedNotCancelled()) > p.MaxErrorRate/100*float64(sum.Counts.Requests):
		n := sum.Counts.FailedNotCancelled()
		return fail("%d of %d requests failed (%.1f%% > --max-error-rate %g%%; cancellations not counted): %s", n, sum.Counts.Requests,
			100*float64(n)/float64(sum.Counts.Requests), p.MaxErrorRate, kinds(sum.Counts.ErrorsByKind))
	}
	return ExitOK
}

func kinds(m map[string]int) string {
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

func writeArtifacts(dir string, run *result.Run, sum *metrics.Summary, startEnd [2]string, cmdline string) error {
	if err := result.WriteJSON(filepath.Join(dir, result.RunFile), run); err != nil {
		return err
	}
	b, err := result.AIPerfJSON(run, sum, startEnd, cmdline)
	if err != nil {
		return err
	}
	if err := result.WriteFileAtomic(filepath.Join(dir, result.ExportJSON), b); err != nil {
		return err
	}
	c, err := result.AIPerfCSV(run)
	if err != nil {
		return err
	}
	return result.WriteFileAtomic(filepath.Join(dir, result.ExportCSV), c)
}

// scrapeServerMetrics starts scraping the server's /metrics endpoints (the
// --server-metrics URLs, or <url>/metrics when it answers) and returns a
// function that stops and summarises them.
func scrapeServerMetrics(ctx context.Context, p *config.Profile, target string) func() (map[string]result.ServerMetrics, []string) {
	none := func() (map[string]result.ServerMetrics, []string) { return nil, nil }
	if p.NoServerMetrics {
		return none
	}
	urls, explicit := p.ServerMetrics, true
	if len(urls) == 0 {
		u, err := url.Parse(target)
		if err != nil {
			return none
		}
		urls, explicit = []string{u.Scheme + "://" + u.Host + "/metrics"}, false
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	var warnings, live []string
	for _, u := range urls {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := servermetrics.Fetch(pctx, hc, u)
		cancel()
		if err != nil {
			if explicit {
				warnings = append(warnings, fmt.Sprintf("--server-metrics %s: %v; not scraped", u, err))
			}
			continue
		}
		live = append(live, u)
	}
	if len(live) == 0 {
		return func() (map[string]result.ServerMetrics, []string) { return nil, warnings }
	}
	sctx, cancel := context.WithCancel(ctx)
	type res struct {
		url      string
		samples  []*servermetrics.Sample
		failures int
	}
	results := make(chan res, len(live))
	for _, u := range live {
		go func() {
			s, f := servermetrics.Scrape(sctx, hc, u, time.Second, 4096)
			results <- res{u, s, f}
		}()
	}
	return func() (map[string]result.ServerMetrics, []string) {
		cancel()
		out := map[string]result.ServerMetrics{}
		for range live {
			r := <-results
			out[r.url] = result.ServerMetrics{Scrapes: len(r.samples), Failures: r.failures, Metrics: servermetrics.Summarize(r.samples)}
			if r.failures > 0 {
				warnings = append(warnings, fmt.Sprintf("server metrics %s: %d of %d scrapes failed", r.url, r.failures, r.failures+len(r.samples)))
			}
		}
		return out, warnings
	}
}

// makeShards splits every phase across workers, the way k6 splits
// executors into segments: a ceiling is divided evenly (so there are never
// more workers than the smallest ceiling), entries are interleaved over the
// plan in proportion to each worker's share, and a cycling pool goes whole
// to every worker, which takes every W-th request of it.
func makeShards(p *config.Profile, plan *schedule.Plan, target string, workers int) []*wire.ShardSpec {
	for _, ph := range plan.Phases {
		if ph.Ceiling > 0 {
			workers = min(workers, ph.Ceiling)
		}
	}
	workers = max(workers, 1)
	shards := make([]*wire.ShardSpec, workers)
	for i := range shards {
		shards[i] = &wire.ShardSpec{URL: target, APIKey: p.APIKey, EndpointType: p.EndpointType, Streaming: p.Streaming,
			TimeoutNs: int64(p.RequestTimeoutSeconds * float64(time.Second))}
	}
	for _, ph := range plan.Phases {
		weights := make([]int, workers)
		for i := range weights {
			weights[i] = 1
		}
		if ph.Ceiling > 0 {
			weights = controller.Split(ph.Ceiling, workers)
		}
		parts := make([]wire.PhaseShard, workers)
		for w := range parts {
			parts[w] = wire.PhaseShard{Phase: ph, Stride: workers, Offset: w}
			parts[w].Entries = nil
			if ph.Ceiling > 0 {
				parts[w].Concurrency = weights[w]
			}
		}
		if ph.Cycle {
			for w := range parts {
				parts[w].Entries = ph.Entries
			}
		} else {
			for i, w := range controller.Assign(len(ph.Entries), weights) {
				parts[w].Entries = append(parts[w].Entries, ph.Entries[i])
			}
		}
		for w := range shards {
			shards[w].Phases = append(shards[w].Phases, parts[w])
		}
	}
	return shards
}

func anyCycle(plan *schedule.Plan) bool {
	for _, ph := range plan.Phases {
		if ph.Cycle {
			return true
		}
	}
	return false
}

func loadOf(p *config.Profile, prof *schedule.Phase) result.Load {
	l := result.Load{Concurrency: p.Concurrency, Ceiling: prof.Ceiling, RequestCount: len(prof.Entries),
		ISLMean: p.ISLMean, ISLStddev: p.ISLStddev, OSLMean: p.OSLMean, OSLStddev: p.OSLStddev,
		ExtraInputs: p.ExtraInputs, Goodput: p.Goodput, BenchmarkDuration: p.BenchmarkDuration, FixedSchedule: p.FixedSchedule}
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

// Tool-health thresholds: beyond them the tester may have shaped the load.
const (
	lagWarnMs     = 1.0
	rateWarnRatio = 0.98
	stealWarnPct  = 5.0 // percent of CPU time taken by the hypervisor
	cpuWarnUtil   = 0.8 // share of a core above which a worker may be the limit
)

// healthWarnings says where the tester itself may have been the limit.
// workerHealth adds what the controller learnt of the workers to th, then
// the warnings that need it.
func workerHealth(th *result.ToolHealth, out *controller.Outcome, sum *metrics.Summary) {
	for _, id := range controller.SortedIDs(out.Received) {
		cpu, wall := out.WorkerCPU[id], out.WorkerWall[id]
		if wall > 0 {
			th.ClientCPU = append(th.ClientCPU, result.WorkerCPU{Worker: id, CPUSeconds: cpu, WallSeconds: wall, Util: cpu / wall})
		}
		th.GCPauseMs += float64(out.WorkerGCPause[id]) / 1e6
	}
	th.Stamps = mergeStamps(out.WorkerStamps)
	th.WorkerPIDs = out.WorkerPID
	th.Records = out.Received
	th.Integrity = append(th.Integrity, out.Problems...)
	th.Warnings = append(th.Warnings, healthWarnings(th, sum)...)
}

func healthWarnings(th *result.ToolHealth, sum *metrics.Summary) []string {
	var w []string
	if l := th.ScheduleLagMs; l != nil && l.P99 > lagWarnMs {
		w = append(w, fmt.Sprintf("schedule lag p99 %.2f ms is above %.0f ms: requests left later than planned", l.P99, lagWarnMs))
	}
	for _, c := range th.ClientCPU {
		if c.Util > cpuWarnUtil {
			w = append(w, fmt.Sprintf("worker %d used %.0f%% of a core: the tester may have been the limit (try more --workers, or check with calibrate)", c.Worker, 100*c.Util))
		}
	}
	if th.CPUStealPct != nil && *th.CPUStealPct > stealWarnPct {
		w = append(w, fmt.Sprintf("the hypervisor stole %.1f%% of this machine's CPU time during the run: timings may be disturbed", *th.CPUStealPct))
	}
	if th.PlannedRate > 0 && th.AchievedRate < rateWarnRatio*th.PlannedRate {
		w = append(w, fmt.Sprintf("achieved rate %.2f req/s is below %.0f%% of the planned %.2f req/s", th.AchievedRate, 100*rateWarnRatio, th.PlannedRate))
	}
	// A chunk read later than the next one arrived carries the next one's
	// receive time (the kernel merges what waits in a socket).
	if st := th.Stamps; st != nil && st.ReadDelayMs != nil && sum != nil {
		if itl, ok := sum.Metrics[metrics.ITL]; ok && itl.Dist != nil && itl.Dist.P50 > 0 && st.ReadDelayMs.P99 > itl.Dist.P50 {
			w = append(w, fmt.Sprintf("read delay p99 %.2f ms is above the inter-token latency p50 %.2f ms: some chunks were read after the next one arrived and carry its time (try more --workers, or check with calibrate)", st.ReadDelayMs.P99, itl.Dist.P50))
		}
	}
	return w
}

// reachable checks, before any load, that something listens at target.
func reachable(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err
		}
		return err
	}
	return c.Close()
}

// progress prints a live progress line when stdout is a terminal.
func progress(stdout io.Writer, total int, done, failed *atomic.Int64) (stop func()) {
	f, ok := stdout.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-quit:
				fmt.Fprintf(f, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(f, "\r\033[Kprofiling: %d/%d requests, %d errors, %.1fs", done.Load(), total, failed.Load(), time.Since(start).Seconds())
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// mergeStamps sums the workers' stamp counts and read delays; nil when no
// worker reported them.
func mergeStamps(by map[int]*wire.Stamps) *result.Stamps {
	if len(by) == 0 {
		return nil
	}
	st := &result.Stamps{}
	var delay *hdr.Histogram
	for _, id := range controller.SortedIDs(by) {
		w := by[id]
		st.KernelReads += w.KernelReads
		st.OtherReads += w.OtherReads
		st.NetHTTP += w.NetHTTP
		st.NetHTTPKernel += w.NetHTTPKernel
		if w.ReadDelay == "" {
			continue
		}
		h, err := hdr.Decode([]byte(w.ReadDelay))
		if err != nil {
			continue // (a worker of this binary encoded it; nothing to show)
		}
		if delay == nil {
			delay = h
		} else {
			delay.Merge(h)
		}
	}
	switch {
	case st.OtherReads == 0 && st.NetHTTP == st.NetHTTPKernel && st.KernelReads+st.NetHTTPKernel > 0:
		st.Source = "kernel"
	case st.KernelReads == 0 && st.NetHTTPKernel == 0:
		st.Source = "read"
	default:
		st.Source = "mixed"
	}
	if delay != nil {
		st.ReadDelayMs = metrics.HistDist("ms", "us", 1000, delay)
	}
	return st
}
