package cli

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
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
	fs.IntVar(&p.Workers, "workers", p.Workers, "worker processes (default: one per 128 concurrent streams, at most one per CPU)")
	fs.Float64Var(&p.MaxErrorRate, "max-error-rate", p.MaxErrorRate, "percent of failed requests above which the run fails (exit 2)")
	fs.Float64Var(&p.SliceDuration, "slice-duration", p.SliceDuration, "seconds per metrics window in run.json")
}

// DefaultWorkers picks the worker count: one per 128 concurrent streams, at
// most one per CPU, at least one, never more than the concurrency.
func DefaultWorkers(concurrency int) int {
	w := (concurrency + 127) / 128
	return max(1, min(w, runtime.NumCPU(), concurrency))
}

func runProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
	p := config.DefaultProfile
	profileFlags(fs, &p)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	p.SeedSet = fs.Changed("random-seed")
	return profile(ctx, &p, "aiperf-action profile "+strings.Join(args, " "), stdout, stderr)
}

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
		workers = DefaultWorkers(p.Concurrency)
	}
	shards := makeShards(p, plan, target, workers)
	slos, _ := config.ParseGoodput(p.Goodput)
	headers, _ := config.ParseHeaders(p.Headers)
	for _, s := range shards {
		s.Headers = headers
	}
	agg := metrics.NewAggregator(time.Duration(p.SliceDuration*float64(time.Second)), slos)
	rw, err := result.NewRecordWriter(dir)
	if err != nil {
		return fail("write records.jsonl: %v", err)
	}
	var done, failed atomic.Int64
	stopProgress := progress(stdout, p.RequestCount, &done, &failed)
	var t0 time.Time
	out, runErr := controller.Run(ctx, controller.Options{
		Version: Version,
		Stderr:  stderr,
		OnStart: func(t time.Time) { t0 = t },
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
		Load: result.Load{Concurrency: p.Concurrency, RequestCount: p.RequestCount, ISLMean: p.ISLMean, ISLStddev: p.ISLStddev,
			OSLMean: p.OSLMean, OSLStddev: p.OSLStddev, ExtraInputs: p.ExtraInputs, Goodput: p.Goodput},
		Counts:     sum.Counts,
		Metrics:    sum.Metrics,
		Cancelled:  interrupted,
		ToolHealth: result.ToolHealth{ScheduleLagMs: sum.Lag, Workers: len(shards), Warnings: []string{}, Integrity: []string{}},
	}
	if out != nil {
		run.ToolHealth.WorkerPIDs = out.WorkerPID
		run.ToolHealth.Records = out.Received
		run.ToolHealth.Integrity = append(run.ToolHealth.Integrity, out.Problems...)
	}
	startEnd := [2]string{"", ""}
	if !t0.IsZero() {
		run.StartedAt = t0.Add(time.Duration(sum.FirstSent)).UTC().Format(time.RFC3339Nano)
		startEnd = [2]string{run.StartedAt, t0.Add(time.Duration(sum.LastEnd)).UTC().Format(time.RFC3339Nano)}
	}
	received := sum.Counts.Requests + sum.Counts.Warmup
	if runErr == nil && !interrupted && received != p.RequestCount {
		runErr = fmt.Errorf("planned %d requests, received %d records", p.RequestCount, received)
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
	case float64(sum.Counts.Errors) > p.MaxErrorRate/100*float64(sum.Counts.Requests):
		return fail("%d of %d requests failed (%.1f%% > --max-error-rate %g%%): %s", sum.Counts.Errors, sum.Counts.Requests,
			100*float64(sum.Counts.Errors)/float64(sum.Counts.Requests), p.MaxErrorRate, kinds(sum.Counts.ErrorsByKind))
	}
	return ExitOK
}

func kinds(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, v))
	}
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

// makeShards splits the plan across workers: concurrency split evenly, and
// requests interleaved in proportion to each worker's concurrency.
func makeShards(p *config.Profile, plan *schedule.Plan, target string, workers int) []*wire.ShardSpec {
	conc := controller.Split(p.Concurrency, workers)
	shards := make([]*wire.ShardSpec, len(conc))
	for i, c := range conc {
		shards[i] = &wire.ShardSpec{URL: target, APIKey: p.APIKey, EndpointType: p.EndpointType, Streaming: p.Streaming,
			TimeoutNs: int64(p.RequestTimeoutSeconds * float64(time.Second)), Concurrency: c}
	}
	for i, w := range controller.Assign(len(plan.Entries), conc) {
		shards[w].Entries = append(shards[w].Entries, plan.Entries[i])
	}
	return shards
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
