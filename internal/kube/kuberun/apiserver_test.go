package kuberun_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/aiperf-action/aiperf-action/internal/kube"
	"github.com/aiperf-action/aiperf-action/internal/kube/kuberun"
	"github.com/aiperf-action/aiperf-action/internal/kube/kubetest"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// A real kube-apiserver and etcd, built from the module proxy
// (k8s.io/kubernetes and go.etcd.io/etcd/server/v3 at one release, in
// tools/kubeapi; .ci/run builds them and names them here).
const (
	apiserverEnv   = "AIPERF_KUBE_APISERVER"
	etcdEnv        = "AIPERF_ETCD"
	requireKubeAPI = "AIPERF_REQUIRE_KUBEAPI"
)

// The addresses of the test's network namespace: the API server, etcd
// and the pods live inside it at podIP (a pod's address must not be
// loopback: the API server's pod proxy refuses those), the simulator in
// this namespace at hostIP, across a veth the test makes.
const (
	hostIP = "10.97.0.1"
	podIP  = "10.97.0.2"
)

// `kube run` against a real API server: the objects pass its validation
// and admission, the run's pods (made from the Jobs and run by the
// kubetest stand-in, as there is no kubelet) are followed through it, the
// results come back through its own pod proxy, and the objects it made are
// deleted from it.
func TestKubeRunOnARealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and a kube-apiserver (about 10 s)")
	}
	skip := func(why string) {
		t.Helper()
		if os.Getenv(requireKubeAPI) != "" {
			t.Fatalf("%s (and %s is set)", why, requireKubeAPI)
		}
		t.Skip(why)
	}
	apiserverBin, etcdBin := os.Getenv(apiserverEnv), os.Getenv(etcdEnv)
	if apiserverBin == "" || etcdBin == "" {
		skip(fmt.Sprintf("%s and %s name a kube-apiserver and an etcd (.ci/kubeapi builds them from tools/kubeapi)", apiserverEnv, etcdEnv))
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		skip("the pods' network namespace needs Linux and root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skip("no ip command (iproute2)")
	}
	ns := netns(t, skip)
	inNS := []string{"ip", "netns", "exec", ns}
	dir := t.TempDir()
	start := func(name string, args ...string) {
		log, _ := os.Create(filepath.Join(dir, name+".log"))
		cmd := exec.Command(inNS[0], append(inNS[1:], args...)...)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			log.Close()
			if t.Failed() {
				b, _ := os.ReadFile(log.Name())
				t.Logf("%s's log (last 3000 bytes):\n%s", name, tail(b, 3000))
			}
		})
	}
	start("etcd", etcdBin, "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", "http://127.0.0.1:2379",
		"--advertise-client-urls", "http://127.0.0.1:2379", "--listen-peer-urls", "http://127.0.0.1:2380", "--log-level", "error")

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
	const token = "kubetest-admin-token"
	os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+`,admin,admin,"system:masters"`+"\n"), 0o600)
	start("kube-apiserver", apiserverBin, "--etcd-servers", "http://127.0.0.1:2379", "--bind-address", podIP, "--advertise-address", podIP,
		"--secure-port", "6443", "--cert-dir", filepath.Join(dir, "certs"), "--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "RBAC", "--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"), "--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/24", "--disable-admission-plugins", "ServiceAccount")

	cfg := &rest.Config{Host: "https://" + net.JoinHostPort(podIP, "6443"), BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	ready := func() error {
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz %s", resp.Status)
		}
		return nil
	}
	deadline := time.Now().Add(2 * time.Minute)
	for err := ready(); err != nil; err = ready() {
		if time.Now().After(deadline) {
			t.Fatalf("the API server was not ready in 2 minutes: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	// The client as `kube run` makes it: from a kubeconfig, as kubectl reads
	// one (its context's namespace the default).
	kc := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %s}
contexts:
- name: test
  context: {cluster: test, user: admin, namespace: bench}
current-context: test
`, cfg.Host, token)), 0o600)
	cs, defaultNS, err := kuberun.Client(kc, "")
	if err != nil || defaultNS != "bench" {
		t.Fatalf("kube.Client: %v, namespace %q", err, defaultNS)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v, _ := cs.Discovery().ServerVersion()
	t.Logf("kube-apiserver %v ready", v)

	// The simulator, in this namespace, where the pods reach it.
	l, err := net.Listen("tcp", net.JoinHostPort(hostIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	cfgSim := sim.DefaultConfig
	cfgSim.TTFT, cfgSim.ITL = 2*time.Millisecond, 200*time.Microsecond
	srv := httptest.NewUnstartedServer(sim.New(cfgSim))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	c := kubetest.StartOn(t, cs, "bench", os.Args[0], []string{podEnv + "=1"}, inNS, podIP)
	out, code, err := kubeRun(t, c, "real1", 2, "-m", "sim", "-u", srv.URL, "--endpoint-type", "chat", "--streaming",
		"--request-count", "40", "--concurrency", "4", "--random-seed", "7", "--osl", "8")
	if err != nil || code != 0 {
		t.Fatalf("kube run: exit %d, %v\n%s", code, err, c.AllLogs())
	}
	r, err := result.Read(findRun(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if r.Counts.OK != 40 || r.ToolHealth.Workers != 2 || len(r.ToolHealth.Clocks) != 2 {
		t.Errorf("run.json: %d ok, %d workers, %d clocks", r.Counts.OK, r.ToolHealth.Workers, len(r.ToolHealth.Clocks))
	}
	// What kube run made is gone (pods, with no kubelet to confirm their
	// end, may stay marked for deletion).
	sel := metav1.ListOptions{LabelSelector: "aiperf-action/run=real1"}
	jobs, _ := cs.BatchV1().Jobs("bench").List(ctx, sel)
	secrets, _ := cs.CoreV1().Secrets("bench").List(ctx, sel)
	cms, _ := cs.CoreV1().ConfigMaps("bench").List(ctx, sel)
	svcs, _ := cs.CoreV1().Services("bench").List(ctx, sel)
	pods, _ := cs.CoreV1().Pods("bench").List(ctx, sel)
	live := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live++
		}
	}
	if n := len(jobs.Items) + len(secrets.Items) + len(cms.Items) + len(svcs.Items) + live; n != 0 {
		t.Errorf("left in the API server: %d jobs, %d secrets, %d configmaps, %d services, %d pods not being deleted",
			len(jobs.Items), len(secrets.Items), len(cms.Items), len(svcs.Items), live)
	}

	// A restart, as the API server reports it, makes the next run invalid.
	idle := time.Now()
	for i := 0; i < 100 && !c.Idle(); i++ { // (the pods share the namespace's ports)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the first run's processes ended %v after kube run returned", time.Since(idle).Round(time.Millisecond))
	c.Restart = func(p *corev1.Pod) bool { return strings.HasPrefix(p.Name, "real2-workers-1") }
	_, _, err = kubeRun(t, c, "real2", 2, "-m", "sim", "-u", srv.URL, "--request-count", "10", "--concurrency", "2", "--osl", "4")
	if !errors.Is(err, kube.ErrInvalid) || !strings.Contains(err.Error(), "pod real2-workers-1 restarted") {
		t.Errorf("a restarted worker: %v", err)
	}
}

// netns makes a network namespace with a veth to this one (hostIP here,
// podIP there) and removes it when the test ends.
func netns(t *testing.T, skip func(string)) string {
	t.Helper()
	tag := fmt.Sprintf("ak%d", os.Getpid()%100000)
	ns := tag + "ns"
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	t.Cleanup(func() { ip("netns", "del", ns) })
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", tag + "a", "type", "veth", "peer", "name", tag + "b"},
		{"link", "set", tag + "b", "netns", ns},
		{"addr", "add", hostIP + "/24", "dev", tag + "a"},
		{"link", "set", tag + "a", "up"},
		{"-n", ns, "addr", "add", podIP + "/24", "dev", tag + "b"},
		{"-n", ns, "link", "set", tag + "b", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			skip(err.Error())
		}
	}
	return ns
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
