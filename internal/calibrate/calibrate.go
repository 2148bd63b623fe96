// Package calibrate measures the tester against the simulator's own record
// of what it wrote: per concurrency step, the error in TTFT and ITL and the
// achieved rate, and the load up to which this runner can be trusted. The
// simulator runs in its own process, as a real server would.
package calibrate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/proc"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// Config is one calibration's settings.
type Config struct {
	URL string
	// Against is a truth server that reports its own timings at /stats
	// (TruthStats): the steps load it and compare percentiles with its
	// own, instead of joining each request with serve's record of it.
	Against        string
	TTFT, ITL      time.Duration
	OSL, ISL       int
	Steps          string
	MaxConcurrency int
	Duration       float64
	Ramp           float64 // seconds; the concurrency ramp before the measured window
	Workers        int
	ArtifactDir    string
	Bounds         Bounds
	// EndpointType is the streaming type the steps use (default chat):
	// serve answers each in its wire format, so each framing's reader is
	// measured against the same truth.
	EndpointType string
	// Tokenizer is the profile's --tokenizer (a tokens-in type needs one).
	Tokenizer string
	// The template type's request template, response field and path.
	RequestTemplate, PayloadTemplate, ResponseField, Endpoint string
}

// Save writes cal as JSON to path, atomically.
func (cal *Calibration) Save(path string) error { return result.WriteJSON(path, cal) }

// Bounds are how far the tester may be from the server's truth before it is
// the limit.
type Bounds struct {
	TTFTP50Ms float64 `json:"ttft_p50_ms"`
	TTFTP99Ms float64 `json:"ttft_p99_ms"`
	ITLP99Ms  float64 `json:"itl_p99_ms"`
	MinRate   float64 `json:"min_rate_pct"`
}

// Step is one concurrency's measurement.
type Step struct {
	Concurrency  int     `json:"concurrency"`
	Workers      int     `json:"workers"`
	Requests     int     `json:"requests"`
	IdealRate    float64 `json:"ideal_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	RatePct      float64 `json:"rate_pct"`
	TTFTP50ErrMs float64 `json:"ttft_p50_err_ms"`
	TTFTP99ErrMs float64 `json:"ttft_p99_err_ms"`
	ITLP99ErrMs  float64 `json:"itl_p99_err_ms"`
	// The phases: TTFT from the request's write against the server's
	// truth (no dial in it), and the requests of the measured window that
	// dialled a connection, with their set-up time.
	TTFTWriteP50ErrMs float64   `json:"ttft_from_write_p50_err_ms"`
	TTFTWriteP99ErrMs float64   `json:"ttft_from_write_p99_err_ms"`
	Dials             int       `json:"dials"`
	ConnSetupP50Ms    float64   `json:"connection_setup_p50_ms,omitempty"`
	ConnSetupP99Ms    float64   `json:"connection_setup_p99_ms,omitempty"`
	LagP99Ms          float64   `json:"schedule_lag_p99_ms"`
	ReadDelayP99      float64   `json:"read_delay_p99_ms"` // how late the loop read what the kernel had received (kept out of the timings)
	Stamps            string    `json:"timestamps"`        // kernel, read or mixed (see run.json tool_health.stamps)
	ClientCPU         []float64 `json:"client_cpu_util"`   // per worker process, share of one core
	ChunksPerSec      float64   `json:"chunks_per_s"`
	CPUUsPerChunk     float64   `json:"cpu_us_per_chunk"`
	StealPct          float64   `json:"cpu_steal_pct"`
	Errors            int       `json:"errors"`
	Pass              bool      `json:"within_bounds"`
	Why               []string  `json:"outside_bounds,omitempty"`

	chunks, windowChunks int // every chunk of the step, and those within the measured window
}

// Calibration is calibrate's output.
type Calibration struct {
	TTFTMs       float64 `json:"ttft_ms"`
	ITLMs        float64 `json:"itl_ms"`
	OSL          int     `json:"osl"`
	DurationS    float64 `json:"step_duration_s"`
	RampS        float64 `json:"ramp_s"`
	Bounds       Bounds  `json:"bounds"`
	Steps        []Step  `json:"steps"`
	TrustedUpTo  int     `json:"trusted_up_to"` // highest concurrency within bounds (0: none)
	EndpointType string  `json:"endpoint_type"`
	// Truth is what the errors are measured against: serve's record of
	// each request, or a truth server's own percentiles (--against).
	Truth   string `json:"truth"`
	Against string `json:"against,omitempty"`
}

// Check checks every setting at once and returns the concurrency steps.
func (f *Config) Check() ([]int, error) {
	var errs []error
	var steps []int
	for _, s := range strings.Split(f.Steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("--steps %q: want positive integers separated by commas", f.Steps))
			break
		}
		steps = append(steps, n)
	}
	if !sort.IntsAreSorted(steps) {
		errs = append(errs, fmt.Errorf("--steps %q: must increase", f.Steps))
	}
	if f.TTFT <= 0 || f.ITL <= 0 {
		errs = append(errs, errors.New("--ttft and --itl must be positive"))
	}
	if f.OSL < 2 || f.ISL < 1 {
		errs = append(errs, errors.New("--osl must be at least 2 and --isl at least 1"))
	}
	if !(f.Duration > 0) {
		errs = append(errs, fmt.Errorf("--duration %g: must be positive", f.Duration))
	}
	if f.Against != "" && f.URL != "" {
		errs = append(errs, fmt.Errorf("--against %s and --url %s: give one (--url is an exact-mode serve, --against any truth server with /stats)", f.Against, f.URL))
	}
	if f.Against != "" && !strings.HasPrefix(f.Against, "http://") && !strings.HasPrefix(f.Against, "https://") {
		errs = append(errs, fmt.Errorf("--against %q: want the server's base URL, http://host:port", f.Against))
	}
	if f.Workers < 0 {
		errs = append(errs, fmt.Errorf("--workers %d: must not be negative", f.Workers))
	}
	if f.Ramp < 0 {
		errs = append(errs, fmt.Errorf("--ramp %g: must not be negative", f.Ramp))
	}
	if f.EndpointType != "" {
		switch k, err := endpoint.Make(f.EndpointType, f.RequestTemplate, f.PayloadTemplate, f.ResponseField); {
		case err != nil:
			errs = append(errs, fmt.Errorf("--endpoint-type: %v", err))
		case f.EndpointType == endpoint.TypeRaw:
			errs = append(errs, fmt.Errorf("--endpoint-type raw posts an input file's payloads: calibrate makes its own requests (measure the type the payloads are for)"))
		case f.EndpointType == endpoint.TypeTemplate && f.Endpoint == "":
			errs = append(errs, fmt.Errorf("--endpoint-type template needs --endpoint, the path serve answers the template's body at"))
		default:
			if endpoint.TraitsOf(k).NonToken() {
				errs = append(errs, fmt.Errorf("--endpoint-type %s: not a streaming type; calibrate measures streams", f.EndpointType))
			}
			if endpoint.TraitsOf(k).TokenIn && f.Tokenizer == "" {
				errs = append(errs, fmt.Errorf("--endpoint-type %s sends token ids: it needs --tokenizer (a tokenizer.json)", f.EndpointType))
			}
		}
	}
	return steps, errors.Join(errs...)
}

// startServe runs `serve` from this binary as its own process and returns
// its URL and a teardown.
func startServe(ctx context.Context, ttft, itl time.Duration, maxLen int) (string, func(), error) {
	exe := run.WorkerBin()
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", nil, err
		}
	}
	cmd := exec.Command(exe, "serve", "--port", "0", "--ttft", ttft.String(), "--itl", itl.String(), "--max-output", strconv.Itoa(max(maxLen, 256)))
	cmd.Env = append(os.Environ(), controller.RoleEnv+"=serve")
	proc.Child(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start the simulator: %w", err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	url, err := proc.ReadyLine(out, "http://", 10*time.Second)
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("the simulator did not start: %w", err)
	}
	return url, stop, nil
}

// Run calibrates: each step of steps (then doubling while within the
// bounds, up to MaxConcurrency) against an exact-mode simulator, its own
// unless URL names one. Progress lines go to log. A step that could not be
// measured ends the calibration with the steps so far and an error.
func Run(ctx context.Context, f *Config, steps []int, log io.Writer) (*Calibration, error) {
	url := f.URL
	ideal := f.TTFT + time.Duration(f.OSL-1)*f.ITL
	truth := "serve's record of each request"
	if f.Against != "" {
		s, err := fetchStats(ctx, f.Against, "")
		if err != nil {
			return nil, err
		}
		if s.CfgTTFT != nil && s.CfgITL != nil && *s.CfgTTFT > 0 && *s.CfgITL > 0 {
			f.TTFT, f.ITL = time.Duration(*s.CfgTTFT*1e6), time.Duration(*s.CfgITL*1e6)
			ideal = f.TTFT + time.Duration(f.OSL-1)*f.ITL
		}
		url, truth = f.Against, f.Against+"/stats (the server's own percentiles)"
	}
	if url == "" {
		u, stop, err := startServe(ctx, f.TTFT, f.ITL, f.OSL)
		if err != nil {
			return nil, err
		}
		defer stop()
		url = u
	}
	root := f.ArtifactDir
	if root == "" {
		tmp, err := os.MkdirTemp("", "aiperf-calibrate-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		root = tmp
	}
	cal := &Calibration{TTFTMs: ms(f.TTFT), ITLMs: ms(f.ITL), OSL: f.OSL, DurationS: f.Duration, RampS: f.Ramp, Bounds: f.Bounds, EndpointType: cmp.Or(f.EndpointType, config.EndpointChat), Truth: truth, Against: f.Against}
	for i := 0; i < len(steps) || (len(cal.Steps) > 0 && cal.Steps[len(cal.Steps)-1].Pass); i++ {
		c := 0
		if i < len(steps) {
			c = steps[i]
		} else {
			c = cal.Steps[len(cal.Steps)-1].Concurrency * 2
		}
		if c > f.MaxConcurrency {
			break
		}
		fmt.Fprintf(log, "calibrate: concurrency %d for %gs ...\n", c, f.Duration)
		dir := filepath.Join(root, fmt.Sprintf("c%d", c))
		var st *Step
		var err error
		if f.Against != "" {
			st, err = stepAgainst(ctx, f, url, c, dir, ideal)
		} else {
			st, err = step(ctx, f, url, c, dir)
		}
		if err != nil {
			return cal, fmt.Errorf("concurrency %d: %w", c, err)
		}
		cal.Steps = append(cal.Steps, *st)
		if st.Pass && c > cal.TrustedUpTo {
			cal.TrustedUpTo = c
		}
	}
	return cal, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// percentile is the empirical p-quantile (nearest rank) of xs.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func step(ctx context.Context, f *Config, url string, c int, dir string) (*Step, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, url+"/sim/truth", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		return nil, fmt.Errorf("reset the server's truth (is --url an exact-mode `aiperf-action serve`?): %w", err)
	} else {
		resp.Body.Close()
	}
	p := profileFor(f, url, c, dir)
	// The streams start over the ramp and the window after it is measured:
	// what is compared is the steady state, not 512 connections dialled in
	// the same millisecond and kept in lockstep ever after by a server whose
	// every request takes exactly as long.
	p.BenchmarkDuration, p.GracePeriod = f.Ramp+f.Duration, 0
	if c > 1 {
		p.ConcurrencyRampDuration = f.Ramp
	}
	from, to := int64(f.Ramp*1e9), int64((f.Ramp+f.Duration)*1e9)
	res, err := run.Profile(ctx, p, run.Options{Cmdline: "aiperf-action calibrate", Stderr: io.Discard, KeepRecords: true})
	if res == nil {
		return nil, fmt.Errorf("the profile run failed (exit %d): %v", run.ExitCode(err), err)
	}
	rr := res.Run
	var recs []record.Record
	for _, r := range res.Records {
		if !r.Warmup {
			recs = append(recs, r)
		}
	}
	truth, err := fetchTruth(ctx, url)
	if err != nil {
		return nil, err
	}
	st := &Step{Concurrency: c, Workers: rr.ToolHealth.Workers, Errors: rr.Counts.Errors - rr.Counts.Cancelled}
	reqDur := f.TTFT + time.Duration(f.OSL-1)*f.ITL
	st.IdealRate = float64(c) / reqDur.Seconds()
	if err := st.join(recs, truth, from, to); err != nil {
		return nil, err
	}
	st.health(&rr.ToolHealth, f.Duration)
	st.check(f.Bounds)
	return st, nil
}

// join holds each request measured in the window [from, to) against what
// the server wrote for it: the TTFT and ITL errors, the achieved rate, and
// the chunks counted.
func (st *Step) join(recs []record.Record, truth map[string]sim.Truth, from, to int64) error {
	var measTTFT, measITL, trueTTFT, trueITL, writeTTFT, writeTrue, setup []float64
	var done int
	firstEnd, lastEnd := int64(math.MaxInt64), int64(0)
	st.chunks, st.windowChunks = 0, 0
	for _, r := range recs {
		st.chunks += len(r.Chunks)
		for _, t := range r.Chunks {
			if t >= from && t < to {
				st.windowChunks++
			}
		}
		if !r.OK() {
			continue
		}
		if r.End >= from && r.End < to {
			done++
			firstEnd, lastEnd = min(firstEnd, r.End), max(lastEnd, r.End)
		}
		if r.Sent < from {
			continue
		}
		st.Requests++
		m := metrics.RecordMetrics(&r)
		t, ok := truth[r.SessionID]
		if !ok || t.Aborted || len(t.Gaps) == 0 {
			continue
		}
		if v, ok := m[metrics.ConnSetup]; ok {
			setup = append(setup, v)
		}
		measTTFT = append(measTTFT, m[metrics.TTFT])
		measITL = append(measITL, m[metrics.ITL])
		trueTTFT = append(trueTTFT, float64(t.FirstToken)/1e6)
		if v, ok := m[metrics.TTFTFromWrite]; ok {
			writeTTFT = append(writeTTFT, v)
			writeTrue = append(writeTrue, float64(t.FirstToken)/1e6)
		}
		var sum int64
		for _, g := range t.Gaps {
			sum += g
		}
		trueITL = append(trueITL, float64(sum)/float64(len(t.Gaps))/1e6)
	}
	if len(measTTFT) == 0 {
		return errors.New("no request finished within the step; raise --duration")
	}
	// A closed loop completes requests as fast as it turns them around: the
	// rate is that of the completions within the measured window, from the
	// first to the last (a count over the whole window would be off by up
	// to one request in either direction, which matters at concurrency 1).
	if done > 1 {
		st.AchievedRate = float64(done-1) / (float64(lastEnd-firstEnd) / 1e9)
	}
	st.RatePct = 100 * st.AchievedRate / st.IdealRate
	st.TTFTP50ErrMs = percentile(measTTFT, 0.5) - percentile(trueTTFT, 0.5)
	st.TTFTP99ErrMs = percentile(measTTFT, 0.99) - percentile(trueTTFT, 0.99)
	st.ITLP99ErrMs = percentile(measITL, 0.99) - percentile(trueITL, 0.99)
	if len(writeTTFT) > 0 {
		st.TTFTWriteP50ErrMs = percentile(writeTTFT, 0.5) - percentile(writeTrue, 0.5)
		st.TTFTWriteP99ErrMs = percentile(writeTTFT, 0.99) - percentile(writeTrue, 0.99)
	}
	if st.Dials = len(setup); st.Dials > 0 {
		st.ConnSetupP50Ms, st.ConnSetupP99Ms = percentile(setup, 0.5), percentile(setup, 0.99)
	}
	return nil
}

// health takes the tester's own figures from the run: schedule lag, read
// delay, CPU per process and per chunk, steal.
func (st *Step) health(th *result.ToolHealth, durationS float64) {
	if l := th.ScheduleLagMs; l != nil {
		st.LagP99Ms = l.P99
	}
	if sp := th.Stamps; sp != nil {
		st.Stamps = sp.Source
		if sp.ReadDelayMs != nil {
			st.ReadDelayP99 = sp.ReadDelayMs.P99
		}
	}
	var cpu float64
	for _, w := range th.ClientCPU {
		st.ClientCPU = append(st.ClientCPU, w.Util)
		cpu += w.CPUSeconds
	}
	st.ChunksPerSec = float64(st.windowChunks) / durationS
	if st.chunks > 0 {
		st.CPUUsPerChunk = cpu * 1e6 / float64(st.chunks)
	}
	if th.CPUStealPct != nil {
		st.StealPct = *th.CPUStealPct
	}
}

// check holds the step to the bounds.
func (st *Step) check(b Bounds) {
	check := func(ok bool, format string, a ...any) {
		if !ok {
			st.Why = append(st.Why, fmt.Sprintf(format, a...))
		}
	}
	check(st.TTFTP50ErrMs <= b.TTFTP50Ms, "TTFT p50 error %.2f ms > %g", st.TTFTP50ErrMs, b.TTFTP50Ms)
	check(st.TTFTP99ErrMs <= b.TTFTP99Ms, "TTFT p99 error %.2f ms > %g", st.TTFTP99ErrMs, b.TTFTP99Ms)
	check(st.ITLP99ErrMs <= b.ITLP99Ms, "ITL p99 error %.2f ms > %g", st.ITLP99ErrMs, b.ITLP99Ms)
	check(st.RatePct >= b.MinRate, "rate %.1f%% < %g%%", st.RatePct, b.MinRate)
	check(st.Errors == 0, "%d errors", st.Errors)
	st.Pass = len(st.Why) == 0
}

func fetchTruth(ctx context.Context, url string) (map[string]sim.Truth, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/sim/truth?settle=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the server's truth: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Truths []sim.Truth `json:"truths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("read the server's truth: %w", err)
	}
	out := make(map[string]sim.Truth, len(body.Truths))
	for _, t := range body.Truths {
		out[t.ID] = t
	}
	return out, nil
}
