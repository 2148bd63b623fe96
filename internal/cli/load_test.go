package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sysstat"
)

// Poisson at 50 requests/s for 10 s against serve. The plan for seed 2 has
// 503 arrivals (its own rate 50.26/s: a Poisson count over 10 s varies by
// ±4.5%, so the seed fixes which sample of the process this is); the test
// holds the sending to that plan and to 50/s, and schedule lag p99 under
// 1 ms.
//
// On a shared VM the host can stall this machine's CPUs for 5–20 ms
// (measured here: 0.3–31% steal while the load ran), or run them slower
// without any steal to show for it, and no tester can undo either. So each
// attempt runs a control beside the load: a witness (sysstat.Witness) in
// this process that waits for a due time every 20 ms the way the worker's
// scheduler does and records how late it got there. A lag miss is the
// tester's fault when the machine was quiet by both measures: under 0.5%
// steal and a witness p99 under 0.5 ms. Poisson arrivals see time
// averages, so at s% steal about s% of the requests fall due while their
// worker's CPU is stolen, and the ones just after wait for the backlog:
// the p99 belongs to the hypervisor well before s reaches 1. Steal is per
// CPU, so the witness, on another core, can miss it. A disturbed attempt
// is repeated (three in all); if every one was disturbed, the lag bound is
// skipped with the figures. (Measured here: 0.3% steal gave lag p99
// 0.42 ms, 2.2% gave 1.25 ms, 3.2% on CI gave 3.5 ms, 0.9% steal on a busy
// minute 1.5 ms, and on CI 0.8% steal with a witness p99 of 0.11 ms gave
// 1.42 ms, which a 1% bound blamed on the tester.)
//
// A p99 over 503 requests is the fifth-latest of them, so one burst of
// scheduling delay the witness did not sample can carry it: on CI, 0.0%
// steal and a witness p99 of 0.355 ms gave 1.256 ms once, where reruns of
// the same commit here gave 0.31–0.56 ms. A miss on a quiet machine is
// therefore run again, and two quiet misses fail the test: a tester whose
// lag really exceeds 1 ms misses on every attempt, quiet or not.
const (
	maxCleanStealPct  = 0.5
	maxCleanWitnessMs = 0.5
	maxCleanMisses    = 2
)

func TestPoissonRateEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s of load")
	}
	// The server and the workers run from a plain build in their own
	// processes: under -race, instrumented ones would share the two cores
	// with the timing being measured.
	url := startPlainSim(t, "--ttft", "20ms", "--itl", "5ms")
	var disturbed, cleanMisses []string
	for attempt := 1; attempt <= 3; attempt++ {
		dir := filepath.Join(t.TempDir(), "run")
		wit := sysstat.StartWitness(20 * time.Millisecond)
		res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--request-rate", "50",
			"--arrival-pattern", "poisson", "--benchmark-duration", "10", "--isl", "32", "--osl", "16",
			"--extra-inputs", "ignore_eos:true", "--random-seed", "2", "--artifact-dir", dir)
		witP99 := ms(wit.Stop(0.99))
		if res.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		run, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		th := run.ToolHealth
		steal := -1.0
		if th.CPUStealPct != nil {
			steal = *th.CPUStealPct
		}
		t.Logf("attempt %d: requested %.2f, planned %.2f, achieved %.2f req/s; schedule lag p50 %.3f ms, p99 %.3f ms; %d requests; CPU steal %.1f%%, witness p99 %.3f ms",
			attempt, th.RequestedRate, th.PlannedRate, th.AchievedRate, th.ScheduleLagMs.P50, th.ScheduleLagMs.P99, run.Counts.Requests, steal, witP99)
		if run.Counts.Requests != 503 || run.Counts.Errors != 0 {
			t.Fatalf("counts %+v, want 503 requests and no errors", run.Counts)
		}
		if d := th.AchievedRate/50 - 1; d < -0.05 || d > 0.05 {
			t.Fatalf("achieved rate %.2f not within 5%% of 50", th.AchievedRate)
		}
		if d := th.AchievedRate/th.PlannedRate - 1; d < -0.02 || d > 0.02 {
			t.Fatalf("achieved rate %.2f not within 2%% of the plan's %.2f", th.AchievedRate, th.PlannedRate)
		}
		if _, ok := run.Metrics[metrics.TTFTFromDue]; !ok {
			t.Fatal("open loop without time_to_first_token_from_due")
		}
		if th.ScheduleLagMs.P99 < 1 {
			return
		}
		miss := fmt.Sprintf("p99 %.3f ms with %.1f%% steal and witness p99 %.3f ms", th.ScheduleLagMs.P99, steal, witP99)
		if steal >= 0 && steal < maxCleanStealPct && witP99 < maxCleanWitnessMs {
			cleanMisses = append(cleanMisses, miss)
			if len(cleanMisses) == maxCleanMisses {
				t.Fatalf("schedule lag p99 want < 1 ms; %d attempts missed it on a quiet machine (CPU steal under %.1f%%, witness p99 under %.1f ms: the tester is at fault): %s",
					maxCleanMisses, maxCleanStealPct, maxCleanWitnessMs, strings.Join(cleanMisses, "; "))
			}
			continue
		}
		disturbed = append(disturbed, miss)
	}
	t.Skipf("no attempt met the lag bound and too few ran on a quiet machine to blame the tester (disturbed: %s; quiet misses: %s): the lag bound was not checked",
		strings.Join(disturbed, "; "), strings.Join(cleanMisses, "; "))
}

func TestPlanHashSameAcrossWorkers(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	base := t.TempDir()
	hash := func(name string, extra ...string) (string, []byte) {
		dir := filepath.Join(base, name)
		args := append([]string{"profile", "-m", "sim", "-u", url, "--streaming", "--request-rate", "400", "--concurrency", "4",
			"--arrival-pattern", "gamma", "--arrival-smoothness", "0.5", "--request-count", "24", "--isl", "8", "--osl", "3",
			"--warmup-request-count", "4", "--request-cancellation-rate", "20", "--request-cancellation-delay", "0.5",
			"--extra-inputs", "ignore_eos:true", "--artifact-dir", dir}, extra...)
		res := runCLI(t, time.Minute, args...)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", name, res.code, res.stdout, res.stderr)
		}
		run, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := os.ReadFile(filepath.Join(dir, result.InputsFile))
		return run.ProfileHash, in
	}
	h1, in1 := hash("w1", "--random-seed", "11", "--workers", "1")
	h2, in2 := hash("w2", "--random-seed", "11", "--workers", "2")
	h4, in4 := hash("w4", "--random-seed", "11", "--workers", "4")
	if h1 != h2 || h1 != h4 || string(in1) != string(in2) || string(in1) != string(in4) {
		t.Errorf("plan differs across worker counts: %s %s %s", h1, h2, h4)
	}
	if h5, _ := hash("s12", "--random-seed", "12", "--workers", "2"); h5 == h1 {
		t.Error("a different seed gave the same plan hash")
	}
}

// A duration with a grace period: requests still streaming when the grace
// runs out are cancelled and counted, once each; none is lost.
func TestDurationGraceCancelsInFlight(t *testing.T) {
	srv, url := startSim(t, 50*time.Millisecond, 50*time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	// Each request streams 20 tokens: 1.0 s. Four slots finish one request
	// each by ~1.0 s, start a second that would end at ~2.0 s, and are
	// cancelled at 1.6 + 0.2 s.
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--concurrency", "4", "--workers", "2",
		"--benchmark-duration", "1.6", "--benchmark-grace-period", "0.2", "--isl", "8", "--osl", "20",
		"--extra-inputs", "ignore_eos:true", "--random-seed", "4", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, dir)
	seen := map[int]bool{}
	grace := 0
	for _, r := range recs {
		if seen[r.Index] {
			t.Fatalf("request %d recorded twice", r.Index)
		}
		seen[r.Index] = true
		if r.ErrKind == record.ErrCancelled && r.CancelCause == record.CancelGrace {
			grace++
		}
	}
	srv.Settle(5 * time.Second)
	if len(recs) != len(srv.Truths()) {
		t.Errorf("%d records, the server saw %d requests", len(recs), len(srv.Truths()))
	}
	if run.Counts.OK != 4 || grace != 4 || run.Counts.Cancelled != 4 || run.Counts.CancelledBy["grace"] != 4 {
		t.Errorf("counts %+v, %d grace-cancelled records; want 4 ok and 4 cancelled by grace", run.Counts, grace)
	}
	if !strings.Contains(res.stdout, "Cancelled: 4 requests (grace 4)") {
		t.Errorf("console does not show the cancellations:\n%s", res.stdout)
	}
}

func TestContradictoryFlagsListEveryProblem(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	res := runCLI(t, 30*time.Second, "profile", "-m", "x", "-u", "127.0.0.1:9", "--fixed-schedule", "--request-rate", "5",
		"--concurrency-ramp-duration", "3", "--request-rate-ramp-duration", "2", "--benchmark-grace-period", "-1", "--artifact-dir", dir)
	if res.code != ExitError {
		t.Fatalf("exit %d", res.code)
	}
	for _, want := range []string{
		"--fixed-schedule with --request-rate",
		"--fixed-schedule needs --input-file",
		"--benchmark-grace-period -1",
		"--concurrency-ramp-duration needs --concurrency above 1",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	res = runCLI(t, 30*time.Second, "profile", "-m", "x", "-u", "127.0.0.1:9", "--request-rate-ramp-duration", "2", "--artifact-dir", dir)
	if res.code != ExitError || !strings.Contains(res.stderr, "--request-rate-ramp-duration needs --request-rate") {
		t.Errorf("ramp without rate: exit %d, %s", res.code, res.stderr)
	}
}

func TestWarmupAndCancellation(t *testing.T) {
	_, url := startSim(t, 20*time.Millisecond, 20*time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--concurrency", "8", "--workers", "2",
		"--request-count", "40", "--warmup-request-count", "6", "--request-cancellation-rate", "30",
		"--request-cancellation-delay", "0.1", "--isl", "8", "--osl", "20", "--extra-inputs", "ignore_eos:true",
		"--random-seed", "8", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	run, _ := result.Read(dir)
	recs := readRecords(t, dir)
	warm, planned := 0, 0
	for _, r := range recs {
		if r.Warmup {
			warm++
			continue
		}
		if r.CancelCause == record.CancelPlanned {
			planned++
			// Cancelled 100 ms after sending, well before the 420 ms stream ends.
			if d := time.Duration(r.End - r.Sent); d < 100*time.Millisecond || d > 300*time.Millisecond {
				t.Errorf("request %d cancelled after %s, want ≈100ms", r.Index, d)
			}
		}
	}
	if warm != 6 || run.Counts.Warmup != 6 || run.Counts.Requests != 40 {
		t.Errorf("warmup %d records, counts %+v", warm, run.Counts)
	}
	if planned < 6 || planned > 20 || run.Counts.CancelledBy["planned"] != planned {
		t.Errorf("%d planned cancellations of 40 at 30%%, counts %+v", planned, run.Counts)
	}
	if run.Metrics[metrics.OSL].Dist.Count != int64(run.Counts.OK) {
		t.Error("warmup or cancelled requests leaked into the metrics")
	}
}

func TestFixedScheduleAndSlotWaits(t *testing.T) {
	_, url := startSim(t, 100*time.Millisecond, time.Millisecond)
	base := t.TempDir()
	trace := filepath.Join(base, "trace.jsonl")
	os.WriteFile(trace, []byte(`{"timestamp": 900, "input_length": 5, "output_length": 2}
{"timestamp": 1000, "text": "hello there", "output_length": 2}
{"timestamp": 1100, "input_length": 7, "output_length": 2}
{"timestamp": 1130, "input_length": 7, "output_length": 2}
{"timestamp": 5000, "input_length": 9, "output_length": 2}
`), 0o644)
	dir := filepath.Join(base, "run")
	// Start at 1000 ms, end at 2000 ms, auto offset: dues 0, 100, 130 ms. One
	// slot and 100 ms requests: the third request waits for the second.
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--concurrency", "1",
		"--input-file", trace, "--fixed-schedule", "--fixed-schedule-auto-offset",
		"--fixed-schedule-start-offset", "1000", "--fixed-schedule-end-offset", "2000",
		"--extra-inputs", "ignore_eos:true", "--random-seed", "1", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	recs := readRecords(t, dir)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	dues := map[int]int64{}
	for _, r := range recs {
		dues[r.Index] = r.Due
	}
	if dues[0] != 0 || dues[1] != int64(100*time.Millisecond) || dues[2] != int64(130*time.Millisecond) {
		t.Errorf("dues %v", dues)
	}
	run, _ := result.Read(dir)
	if run.ToolHealth.SlotWaits < 1 {
		t.Errorf("no slot waits recorded: %+v", run.ToolHealth)
	}
	// Latency from the due time shows the wait that latency from the send hides.
	if fd, ld := run.Metrics[metrics.RequestLatencyFromDue].Dist, run.Metrics[metrics.RequestLatency].Dist; fd.Max <= ld.Max+20 {
		t.Errorf("latency from due max %.1f ms, from send %.1f ms", fd.Max, ld.Max)
	}
}
