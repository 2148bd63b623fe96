package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// Artifacts are ordinary files (0644) in ordinary folders, readable by a
// later step running as another user; a folder in the way of one is found
// before any load is sent.
func TestArtifactsAreReadableAndCheckedFirst(t *testing.T) {
	s, url := startSim(t, time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	if res := runCLI(t, time.Minute, quickProfile(url, dir, "--random-seed", "1")...); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fi, _ := e.Info()
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644", e.Name(), fi.Mode().Perm())
		}
	}
	if len(entries) < 5 {
		t.Errorf("%d artifacts", len(entries))
	}
	s.Reset()
	bad := filepath.Join(t.TempDir(), "bad")
	os.MkdirAll(filepath.Join(bad, "run.json"), 0o755)
	res := runCLI(t, time.Minute, quickProfile(url, bad, "--random-seed", "1")...)
	if res.code == 0 || !strings.Contains(res.stderr, "run.json is not a regular file") || len(s.Truths()) != 0 {
		t.Fatalf("run.json a folder: exit %d, %d requests sent\n%s", res.code, len(s.Truths()), res.stderr)
	}
}

// A concurrency far above the request count uses as many slots as there
// are requests: it took 47–83 s (a goroutine per slot) and now takes as
// long as the 64 requests.
func TestHugeConcurrencyFewRequests(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	res := runCLI(t, time.Minute, quickProfile(url, dir, "--random-seed", "1", "--concurrency", "100000000", "--request-count", "64")...)
	took := time.Since(start)
	r, err := result.Read(dir)
	if res.code != 0 || err != nil || r.Counts.OK != 64 {
		t.Fatalf("exit %d, %v, counts %+v\n%s", res.code, err, r, res.stderr)
	}
	if took > 20*time.Second { // bound far above the run's own time (well under a second here)
		t.Fatalf("64 requests at concurrency 10^8 took %s", took)
	}
}

// Every planned request ends as a record. Due requests still waiting for a
// concurrency slot when --benchmark-duration ends are counted as cancelled
// (unsent) instead of vanishing, which made the run say records were lost.
func TestPlannedRequestsAllRecorded(t *testing.T) {
	_, url := startSim(t, 300*time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--request-rate", "40", "--concurrency", "1",
		"--benchmark-duration", "0.5", "--benchmark-grace-period", "3", "--isl", "8", "--osl", "2", "--extra-inputs", "ignore_eos:true",
		"--random-seed", "3", "--artifact-dir", dir)
	r, err := result.Read(dir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", res.code, err, res.stderr)
	}
	if strings.Contains(res.stderr, "received") || strings.Contains(strings.Join(r.ToolHealth.Warnings, " "), "records") {
		t.Fatalf("records lost: %s %v", res.stderr, r.ToolHealth.Warnings)
	}
	unsent := r.Counts.CancelledBy["unsent"]
	if unsent < 5 || r.Counts.OK+r.Counts.Errors != r.Counts.Requests || r.Counts.OK > 3 {
		t.Fatalf("counts %+v", r.Counts)
	}
	t.Logf("counts %+v", r.Counts)
}

// A run in a folder where an earlier run was killed says what it found:
// the earlier run's records, in its temp file, are named and left alone.
func TestLeftoversOfAKilledRunAreNamed(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	left := filepath.Join(dir, ".records.jsonl.tmp-123")
	os.WriteFile(left, []byte(`{"index":0}`+"\n"), 0o600)
	if res := runCLI(t, time.Minute, quickProfile(url, dir, "--random-seed", "1")...); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	r, _ := result.Read(dir)
	if !strings.Contains(strings.Join(r.ToolHealth.Warnings, "\n"), "found .records.jsonl.tmp-123 (12 bytes") {
		t.Fatalf("warnings %v", r.ToolHealth.Warnings)
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatal("the leftover was removed")
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if f := strings.Fields(s[i+1:]); i > 0 && len(f) > 1 && f[1] == fmt.Sprint(pid) {
			var c int
			fmt.Sscan(e.Name(), &c)
			out = append(out, c)
		}
	}
	return out
}

// startController runs a 400-request profile as its own process (the
// plain build) and waits until its two workers are up.
func startController(t *testing.T, url, dir string) (*exec.Cmd, []int) {
	t.Helper()
	cmd := exec.Command(plainBin, "profile", "-m", "sim", "-u", url, "--streaming", "--workers", "2", "--concurrency", "4",
		"--request-count", "400", "--isl", "8", "--osl", "20", "--extra-inputs", "ignore_eos:true", "--random-seed", "1", "--artifact-dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var workers []int
	for end := time.Now().Add(20 * time.Second); len(workers) < 2 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		workers = childrenOf(cmd.Process.Pid)
	}
	return cmd, workers
}

// A SIGKILLed controller leaves no worker behind: they die with it
// (PR_SET_PDEATHSIG), within a second here, not after the 10 s of silence
// their heartbeat would wait.
func TestKilledControllerLeavesNoWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	usePlainWorkers(t)
	_, url := startSim(t, 50*time.Millisecond, 20*time.Millisecond)
	cmd, workers := startController(t, url, filepath.Join(t.TempDir(), "run"))
	if len(workers) < 2 {
		cmd.Process.Kill()
		t.Fatalf("workers %v", workers)
	}
	time.Sleep(300 * time.Millisecond) // under way
	cmd.Process.Kill()
	cmd.Wait()
	killed := time.Now()
	for _, w := range workers {
		for {
			if err := syscall.Kill(w, 0); err != nil {
				break
			}
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", w)); strings.Contains(string(b), ") Z ") {
				break // a zombie: dead, waiting for init to reap it
			}
			if time.Since(killed) > 5*time.Second {
				t.Fatalf("worker %d still alive %s after its controller was killed", w, time.Since(killed))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("workers %v gone %s after the controller", workers, time.Since(killed).Round(time.Millisecond))
}

// SIGTERM (as CI sends on a cancelled job) and SIGINT stop the run: the
// workers stop within 2 s, the partial results are written, exit 130.
func TestSignalledControllerStopsAndWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	usePlainWorkers(t)
	_, url := startSim(t, 50*time.Millisecond, 20*time.Millisecond)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		dir := filepath.Join(t.TempDir(), "run")
		cmd, workers := startController(t, url, dir)
		time.Sleep(500 * time.Millisecond)
		cmd.Process.Signal(sig)
		sent := time.Now()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s: still running 10 s later", sig)
		}
		took := time.Since(sent)
		if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
			t.Errorf("%s: exit %d", sig, code)
		}
		r, err := result.Read(dir)
		if err != nil || !r.Cancelled || r.Counts.Requests == 0 {
			t.Errorf("%s: partial run.json %v %+v", sig, err, r)
		}
		for _, w := range workers {
			if err := syscall.Kill(w, 0); err == nil {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", w)); !strings.Contains(string(b), ") Z ") {
					t.Errorf("%s: worker %d still alive after the controller exited", sig, w)
				}
			}
		}
		if took > 2*time.Second {
			t.Errorf("%s: took %s to stop (want under 2 s)", sig, took)
		}
		t.Logf("%s: stopped in %s with %d requests recorded", sig, took.Round(time.Millisecond), r.Counts.Requests)
	}
}

// A worker frozen by SIGSTOP is found by its silence (10 s), named, killed,
// and its requests in flight counted as lost.
func TestStoppedWorkerIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 10 s silence limit")
	}
	srv, url := startSim(t, 100*time.Millisecond, 50*time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	stopped := make(chan int, 1)
	go func() {
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if len(srv.Truths()) >= 2 {
				if pids := childWorkers(t); len(pids) > 0 {
					syscall.Kill(pids[0], syscall.SIGSTOP)
					stopped <- pids[0]
					return
				}
			}
		}
		stopped <- 0
	}()
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--workers", "2", "--concurrency", "4",
		"--request-count", "400", "--isl", "10", "--osl", "10", "--extra-inputs", "ignore_eos:true", "--random-seed", "5", "--artifact-dir", dir)
	pid := <-stopped
	if pid == 0 {
		t.Fatal("found no worker to stop")
	}
	syscall.Kill(pid, syscall.SIGCONT) // (it was killed; this only makes sure)
	r, err := result.Read(dir)
	if res.code != ExitError || !strings.Contains(res.stderr, "stopped answering") || !strings.Contains(res.stderr, fmt.Sprint(pid)) || err != nil {
		t.Fatalf("exit %d: %v\n%s", res.code, err, res.stderr)
	}
	// Its requests in flight (how many is known up to its last report, 20
	// ms old: it may have been stopped with none unreported) are in
	// run.json's counts by number, as failed with their own kind;
	// TestWorkerKilledMidRun sees some each time.
	lost := r.ToolHealth.LostInFlight
	if r.Counts.ErrorsByKind["lost_in_flight"] != lost || r.Counts.Requests != r.Counts.OK+r.Counts.Errors ||
		(lost > 0 && (!strings.Contains(r.Counts.ErrorExamples["lost_in_flight"], "never recorded: worker ") || !strings.Contains(res.stdout, "lost_in_flight"))) {
		t.Errorf("lost in flight %d; counts %+v; console:\n%s", lost, r.Counts, res.stdout)
	}
	t.Logf("stderr: %s; lost in flight %d", strings.TrimSpace(res.stderr), lost)
}

// inTmpfs runs the plain binary with args in a mount namespace of its own
// where dir is a fresh tmpfs mounted with opts (a size, or ro), and lists
// dir's files after it: a full or read-only disk without touching the
// machine's. It returns the exit code, stdout and stderr together, and the
// files. It skips where user and mount namespaces aren't allowed.
func inTmpfs(t *testing.T, dir, opts string, args ...string) (code int, output string, files []string) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	if out, err := exec.Command("unshare", "-rm", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -rm: %v %s", err, out)
	}
	usePlainWorkers(t)
	os.MkdirAll(dir, 0o755)
	script := `mount -t tmpfs -o "$1" none "$2" || exit 99; d=$2; shift 2; "$@"; rc=$?; echo; echo "@@files"; ls -A "$d/run" 2>/dev/null; exit $rc`
	cmd := exec.Command("unshare", append([]string{"-rm", "sh", "-c", script, "sh", opts, dir, plainBin}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code == 99 {
		t.Skipf("mount tmpfs: %s", errb.String())
	}
	stdout, list, _ := strings.Cut(out.String(), "@@files\n")
	return code, stdout + errb.String(), strings.Fields(list)
}

// A full, nearly full or read-only artifact disk: refused before any load
// when it can't hold inputs.json or half of what records.jsonl will take;
// a run that fills it anyway fails naming records.jsonl, with run.json
// written and no temp file left behind.
func TestArtifactDiskFullOrReadOnly(t *testing.T) {
	s, url := startSim(t, time.Millisecond, time.Millisecond)
	mnt := filepath.Join(t.TempDir(), "mnt")
	profile := func(n int) []string {
		return []string{"profile", "-m", "sim", "-u", url, "--streaming", "--request-count", strconv.Itoa(n), "--isl", "1", "--osl", "2",
			"--random-seed", "1", "--export-level", "summary", "--artifact-dir", filepath.Join(mnt, "run")} // (records.jsonl alone: the AIPerf export adds to the estimate, roomForRecords)
	}
	for _, c := range []struct {
		opts, want string
		n          int
	}{
		{"size=4k", "write inputs.json", 200},
		{"size=400k", "free some space or choose another folder", 1000},
		{"ro", "read-only file system", 20},
	} {
		s.Reset()
		code, stderr, files := inTmpfs(t, mnt, c.opts, profile(c.n)...)
		if code != ExitError || !strings.Contains(stderr, c.want) || len(s.Truths()) != 0 {
			t.Errorf("%s: exit %d, %d requests sent, files %v\n%s", c.opts, code, len(s.Truths()), files, stderr)
		}
		for _, f := range files {
			if strings.Contains(f, ".tmp") {
				t.Errorf("%s: temp file %s left", c.opts, f)
			}
		}
	}
	// 1 MB: inputs.json fits, and more than half of the records (so the run
	// goes ahead, warned), but not all of them.
	s.Reset()
	code, stderr, files := inTmpfs(t, mnt, "size=1m", profile(1900)...)
	if code != ExitError || !strings.Contains(stderr, "may fail at its end for want of space") || !strings.Contains(stderr, "write records.jsonl") ||
		!strings.Contains(stderr, "no space left on device") || len(s.Truths()) != 1900 {
		t.Fatalf("1 MB: exit %d, %d requests sent\n%s", code, len(s.Truths()), stderr)
	}
	if !slices.Contains(files, "run.json") || slices.ContainsFunc(files, func(f string) bool { return strings.Contains(f, ".tmp") }) {
		t.Errorf("1 MB: files %v", files)
	}
}
