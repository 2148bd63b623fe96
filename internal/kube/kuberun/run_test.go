package kuberun_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiperf-action/aiperf-action/internal/cli"
	"github.com/aiperf-action/aiperf-action/internal/fixture"
	"github.com/aiperf-action/aiperf-action/internal/kube"
	"github.com/aiperf-action/aiperf-action/internal/kube/kuberun"
	"github.com/aiperf-action/aiperf-action/internal/kube/kubetest"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// podEnv makes this test binary a pod's aiperf-action.
const podEnv = "AIPERF_KUBETEST_POD"

func TestMain(m *testing.M) {
	if os.Getenv(podEnv) != "" {
		os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// kubeRun runs a profile through kube.Run on the stand-in cluster.
func kubeRun(t *testing.T, c *kubetest.Cluster, name string, workers int, profile ...string) (string, int, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	var log strings.Builder
	o := kube.RunOptions{Options: kube.Options{Name: name, Namespace: c.NS, Image: "aiperf-action:test", Workers: workers, Profile: profile},
		Out: out, Timeout: 2 * time.Minute, Poll: 50 * time.Millisecond, Progress: &log}
	if err := kube.ReadProfile(&o.Options); err != nil {
		t.Fatal(err)
	}
	code, err := kuberun.Run(context.Background(), c.Clientset, o)
	t.Logf("kube run log:\n%s", log.String())
	return out, code, err
}

// `kube run` end to end on a stand-in cluster: the objects applied with
// client-go, the Jobs' pods run (the controller and two workers joining
// it by the Service's name with the token from the Secret and the index
// from the Job), the results taken through the pod proxy, the objects
// deleted.
func TestKubeRun(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, 200*time.Microsecond
	url := fixture.Serve(t, sim.New(cfg))
	c := kubetest.Start(t, "bench", os.Args[0], []string{podEnv + "=1"})
	out, code, err := kubeRun(t, c, "r1", 2, "-m", "sim", "-u", url, "--endpoint-type", "chat", "--streaming",
		"--request-count", "40", "--concurrency", "4", "--random-seed", "7", "--osl", "8")
	if err != nil || code != 0 {
		t.Fatalf("kube run: exit %d, %v\ncontroller:\n%s", code, err, c.Log("r1-controller-0"))
	}
	r, err := result.Read(findRun(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if r.Counts.Requests != 40 || r.Counts.OK != 40 || r.ToolHealth.Workers != 2 || len(r.ToolHealth.Clocks) != 2 ||
		r.ToolHealth.Records[0]+r.ToolHealth.Records[1] != 40 || r.ToolHealth.Records[0] == 0 || r.ToolHealth.Records[1] == 0 {
		t.Errorf("run.json: %d requests, %d ok, %d workers, records %v, clocks %d", r.Counts.Requests, r.Counts.OK, r.ToolHealth.Workers,
			r.ToolHealth.Records, len(r.ToolHealth.Clocks))
	}
	// Cleaned up: nothing of the run is left.
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: "aiperf-action/run=r1"}
	jobs, _ := c.Clientset.BatchV1().Jobs("bench").List(ctx, sel)
	pods, _ := c.Clientset.CoreV1().Pods("bench").List(ctx, sel)
	secrets, _ := c.Clientset.CoreV1().Secrets("bench").List(ctx, sel)
	if len(jobs.Items)+len(pods.Items)+len(secrets.Items) != 0 {
		t.Errorf("left behind: %d jobs, %d pods, %d secrets", len(jobs.Items), len(pods.Items), len(secrets.Items))
	}
}

// A worker pod whose container restarted makes the run invalid, said by
// name, though the controller's results are still taken; a name already
// in use is refused before anything is made.
func TestKubeRunRestartInvalidates(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, 200*time.Microsecond
	url := fixture.Serve(t, sim.New(cfg))
	c := kubetest.Start(t, "bench", os.Args[0], []string{podEnv + "=1"})
	c.Restart = func(p *corev1.Pod) bool { return p.Name == "r2-workers-1" }
	out, code, err := kubeRun(t, c, "r2", 2, "-m", "sim", "-u", url, "--endpoint-type", "chat",
		"--request-count", "20", "--concurrency", "2", "--random-seed", "7", "--osl", "8")
	if !errors.Is(err, kube.ErrInvalid) || !strings.Contains(err.Error(), "pod r2-workers-1 restarted") {
		t.Fatalf("exit %d, %v; want the run invalid, naming the restarted pod", code, err)
	}
	if _, err := os.Stat(findRun(t, out)); err != nil {
		t.Errorf("the results were not taken: %v", err)
	}

	// Another run of that name is there: refused, nothing made.
	ctx := context.Background()
	c.Clientset.CoreV1().Services("bench").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "r3", Namespace: "bench"}}, metav1.CreateOptions{})
	if _, _, err := kubeRun(t, c, "r3", 1, "-m", "sim", "-u", url, "--request-count", "2"); err == nil || !strings.Contains(err.Error(), "service/r3 is already in namespace bench") {
		t.Errorf("a name in use: %v", err)
	}
	if _, err := c.Clientset.CoreV1().Services("bench").Get(ctx, "r3", metav1.GetOptions{}); err != nil {
		t.Errorf("the other run's Service was deleted: %v", err)
	}
}

// Ctrl-C (the caller's context cancelled) asks the controller to stop: it
// writes what it has, marked cancelled, and kube run takes it back as a
// finished run's results, then cleans up.
func TestKubeRunInterrupted(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	url := fixture.Serve(t, sim.New(cfg))
	served := func() int { // (the server's own count of the requests it has had)
		resp, err := http.Get(url + "/sim/truth")
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		var b struct {
			Truths []json.RawMessage `json:"truths"`
		}
		json.NewDecoder(resp.Body).Decode(&b)
		return len(b.Truths)
	}
	c := kubetest.Start(t, "bench", os.Args[0], []string{podEnv + "=1"})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for range 300 { // (bounded: 60 s)
			if served() > 200 { // (the load is under way)
				cancel()
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	out := filepath.Join(t.TempDir(), "results")
	var log strings.Builder
	o := kube.RunOptions{Options: kube.Options{Name: "r6", Namespace: "bench", Image: "i", Workers: 2,
		Profile: []string{"-m", "sim", "-u", url, "--streaming", "--request-count", "5000", "--concurrency", "4", "--osl", "16"}},
		Out: out, Timeout: 2 * time.Minute, Poll: 50 * time.Millisecond, Progress: &log}
	if err := kube.ReadProfile(&o.Options); err != nil {
		t.Fatal(err)
	}
	code, err := kuberun.Run(ctx, c.Clientset, o)
	t.Logf("exit %d, %v\n%s", code, err, log.String())
	r, rerr := result.Read(findRun(t, out))
	if rerr != nil || !r.Cancelled || r.Counts.Requests >= 5000 || r.Counts.OK == 0 || !strings.Contains(log.String(), "interrupted: asking the controller to stop") {
		t.Errorf("run.json: %v; cancelled %v, %d requests, %d ok", rerr, r != nil && r.Cancelled, r.Counts.Requests, r.Counts.OK)
	}
	if pods, _ := c.Clientset.CoreV1().Pods("bench").List(context.Background(), metav1.ListOptions{LabelSelector: "aiperf-action/run=r6"}); len(pods.Items) != 0 {
		t.Errorf("%d pods left", len(pods.Items))
	}
}

// A pod whose image cannot be pulled stops the run at once, naming the pod
// and the kubelet's reason, rather than waiting out --timeout.
func TestKubeRunImageCannotBePulled(t *testing.T) {
	c := kubetest.Start(t, "bench", os.Args[0], []string{podEnv + "=1"})
	c.Waiting = func(p *corev1.Pod) string {
		if strings.HasPrefix(p.Name, "r5-workers-") {
			return "ImagePullBackOff"
		}
		return ""
	}
	start := time.Now()
	_, _, err := kubeRun(t, c, "r5", 2, "-m", "sim", "-u", "http://127.0.0.1:9", "--request-count", "4")
	if err == nil || !strings.Contains(err.Error(), "cannot start its container: ImagePullBackOff") || time.Since(start) > time.Minute {
		t.Errorf("after %v: %v", time.Since(start), err)
	}
}

// A worker pod lost mid-run (its process killed, as when its node goes)
// fails the run: the controller counts its requests in flight and exits
// non-zero, kube run says which pod failed, and the results are taken.
func TestKubeRunWorkerLost(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the controller's 10 s of a worker's silence")
	}
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	url := fixture.Serve(t, sim.New(cfg))
	c := kubetest.Start(t, "bench", os.Args[0], []string{podEnv + "=1"})
	go func() {
		for range 200 { // (bounded: 20 s)
			if c.Running("r4-workers-0") {
				time.Sleep(time.Second)
				c.Kill("r4-workers-0")
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	out, code, err := kubeRun(t, c, "r4", 2, "-m", "sim", "-u", url, "--endpoint-type", "chat", "--streaming",
		"--request-count", "3000", "--concurrency", "8", "--random-seed", "7", "--osl", "16")
	if !errors.Is(err, kube.ErrInvalid) || !strings.Contains(err.Error(), "worker pod r4-workers-0 failed") || code == 0 {
		t.Fatalf("exit %d, %v; want a failed run, invalid, naming the lost pod", code, err)
	}
	r, rerr := result.Read(findRun(t, out))
	if rerr != nil || r.ToolHealth.LostInFlight == 0 && r.Counts.Requests >= 3000 {
		t.Errorf("run.json: %v, %+v", rerr, r)
	}
}

// findRun is the folder under out that holds run.json.
func findRun(t *testing.T, out string) string {
	t.Helper()
	var found string
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "run.json" && found == "" {
			found = filepath.Dir(p)
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no run.json under %s", out)
	}
	return found
}
