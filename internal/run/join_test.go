package run_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

var joinLine = regexp.MustCompile(`--join (tcp://\S+) `)

// joinRun runs p with --worker-listen on loopback and starts its workers
// as a user would on other hosts: `worker --join ADDR --index i --of N`
// with the token in the environment; each worker's extra arguments are
// extra(i). kill, when set, is called with the workers' processes once
// they have all started.
func joinRun(t *testing.T, p config.Profile, token string, extra func(i int) []string, kill func([]*exec.Cmd)) (*run.Result, error, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(controller.TokenEnv, token)
	pr, pw := io.Pipe()
	var log strings.Builder
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := joinLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	var cmds []*exec.Cmd
	go func() {
		a := <-addr
		for i := 0; i < p.Workers; i++ {
			args := append([]string{"worker", "--join", a, "--index", fmt.Sprint(i), "--of", fmt.Sprint(p.Workers)}, extra(i)...)
			c := exec.Command(self, args...)
			c.Env = append(os.Environ(), controller.RoleEnv+"=worker")
			c.Stderr = os.Stderr
			if err := c.Start(); err != nil {
				t.Error(err)
				return
			}
			cmds = append(cmds, c)
		}
		if kill != nil {
			kill(cmds)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := run.Profile(ctx, &p, run.Options{Stderr: pw})
	pw.Close()
	for _, c := range cmds {
		c.Process.Kill()
		c.Wait()
	}
	return res, err, log.String()
}

func joinProfile(t *testing.T, url, name string) config.Profile {
	p := config.DefaultProfile
	p.Model, p.URL, p.Streaming = "join", url, true
	p.RequestRate, p.RequestCount, p.RequestCountSet = 50, 90, true
	p.ISLMean, p.OSLMean, p.ExtraInputs = 16, 4, []string{"ignore_eos:true"}
	p.Seed, p.SeedSet, p.Workers = 11, true, 3
	p.ArtifactDir = filepath.Join(t.TempDir(), name)
	return p
}

// Workers that join the controller by address, as on other hosts, one
// weighted twice the others: the plan and its hash are a local run's, the
// first worker sends half of it, every record arrives, each worker's
// clock is measured (one 1 s ahead), and a worker lost mid-run fails the
// run with its requests in flight counted, never a silent partial merge.
func TestWorkersJoinByAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("a lost worker is noticed after 10 s of silence")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 10*time.Millisecond, time.Millisecond
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(sctx, ln, sim.New(cfg)) }()
	defer func() { stop(); <-served }()
	url := "http://" + ln.Addr().String()

	local := joinProfile(t, url, "local")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	lres, err := run.Profile(ctx, &local, run.Options{Stderr: os.Stderr})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	p := joinProfile(t, url, "joined")
	p.WorkerListen, p.WorkerWeights = "127.0.0.1:0", []int{2, 1, 1} // (the first host twice the others' size)
	res, err, log := joinRun(t, p, "tok-e2e-1", func(i int) []string {
		if i == 1 {
			return []string{"--clock-skew=1s"}
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	r := res.Run
	if r.ProfileHash != lres.Run.ProfileHash || r.Counts.Requests != 90 || r.Counts.OK != 90 || len(r.ToolHealth.Integrity) > 0 {
		t.Fatalf("joined: hash %s (local %s), %d requests, %d ok, problems %v", r.ProfileHash, lres.Run.ProfileHash, r.Counts.Requests, r.Counts.OK, r.ToolHealth.Integrity)
	}
	if rb := r.ToolHealth.Records; rb[0] != 45 || rb[1]+rb[2] != 45 {
		t.Errorf("records by worker %v: want 45 from the worker of weight 2 of 4", rb)
	}
	if len(r.ToolHealth.Clocks) != 3 || r.ToolHealth.Clocks[1].OffsetNs < int64(time.Second)-r.ToolHealth.Clocks[1].UncertaintyNs {
		t.Errorf("clocks %+v", r.ToolHealth.Clocks)
	}
	if strings.Contains(log, "tok-e2e-1") {
		t.Error("the controller printed a token the user gave it")
	}

	// A worker killed mid-run.
	slow := joinProfile(t, url, "lost")
	slow.WorkerListen, slow.RequestRate, slow.RequestCount = "127.0.0.1:0", 20, 300
	res, err, log = joinRun(t, slow, "tok-e2e-2", func(int) []string { return nil }, func(cmds []*exec.Cmd) {
		time.Sleep(2 * time.Second)
		cmds[2].Process.Kill()
	})
	if err == nil || !strings.Contains(err.Error(), "worker 2") || !strings.Contains(err.Error(), "stopped answering") {
		t.Fatalf("a lost worker: %v\n%s", err, log)
	}
	if res == nil || res.Run == nil || res.Run.ToolHealth.LostInFlight == 0 && res.Run.Counts.Requests >= 300 {
		t.Errorf("a lost worker's run: %+v", res)
	}
	t.Logf("lost worker: %v", err)
}
