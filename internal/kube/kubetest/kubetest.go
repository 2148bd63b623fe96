// Package kubetest stands in for what a cluster does with a run's
// objects, around client-go's fake clientset (a registry component that
// keeps the objects as the API server would): it is the Job controller
// (a pod per completion, the index in its annotation) and the kubelet
// (each pod's container run as a local process from its spec: its args
// with $(VAR) expanded, env from values, Secrets and the pod's fields,
// its emptyDir a temporary folder; its phase, exit code and restarts
// written back to the pod's status). Pod networking is loopback: the
// controller's ports are mapped to free ones and the Service's name to
// 127.0.0.1, and the API server's pod proxy reaches the results port.
package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/aiperf-action/aiperf-action/internal/kube"
)

// Cluster is the stand-in: Clientset is what `kube run` is given.
type Cluster struct {
	Clientset kubernetes.Interface
	NS        string
	// Restart, when set, is asked of each pod once it runs: true reports
	// one restart of its container (as a kubelet would after a crash).
	Restart func(pod *corev1.Pod) bool
	// Waiting, when set, is asked of each pod before it runs: a reason
	// (ImagePullBackOff, say) leaves its container waiting for that reason
	// instead of running it.
	Waiting func(pod *corev1.Pod) string

	bin, dir string
	env      []string
	prefix   []string // run each container under this (ip netns exec NS)
	podIP    string   // every pod's address; "" is loopback with ports mapped
	// ports are each run's controller ports here (by its run label):
	// control (records on the next) and results, as a pod has its own IP.
	ports    map[string][2]int
	podPorts map[string]int // a pod's results port here, for the proxy
	mu       sync.Mutex
	jobs     map[string]bool
	pods     map[string]*exec.Cmd
	logs     map[string]*bytes.Buffer
	exited   map[string]bool
	ctx      context.Context
}

// Start runs the stand-in on client-go's fake clientset until the test
// ends, the pods on loopback. Containers run bin with env added to this
// process's.
func Start(t testing.TB, ns, bin string, env []string) *Cluster {
	t.Helper()
	fc := fake.NewClientset()
	c := newCluster(t, fc, ns, bin, env)
	fc.PrependProxyReactor("pods", func(a k8stesting.Action) (bool, restclient.ResponseWrapper, error) {
		p := a.(k8stesting.ProxyGetAction)
		if p.GetPort() != strconv.Itoa(kube.ResultsPort) {
			return true, nil, fmt.Errorf("pod %s has no port %s", p.GetName(), p.GetPort())
		}
		q := url.Values{}
		for k, v := range p.GetParams() {
			q.Set(k, v)
		}
		c.mu.Lock()
		port := c.podPorts[p.GetName()]
		c.mu.Unlock()
		if port == 0 {
			return true, nil, fmt.Errorf("pod %s is not running", p.GetName())
		}
		return true, proxied(fmt.Sprintf("http://127.0.0.1:%d%s?%s", port, p.GetPath(), q.Encode())), nil
	})
	c.start(t)
	return c
}

// StartOn runs the stand-in against a real API server (cs): it makes the
// Jobs' pods there and writes their status back, and runs each pod's
// container under prefix (ip netns exec NS: the pods' network namespace,
// where podIP is their address and the ports are the spec's); the API
// server's own pod proxy reaches them at podIP.
func StartOn(t testing.TB, cs kubernetes.Interface, ns, bin string, env, prefix []string, podIP string) *Cluster {
	t.Helper()
	c := newCluster(t, cs, ns, bin, env)
	c.prefix, c.podIP = prefix, podIP
	c.start(t)
	return c
}

func newCluster(t testing.TB, cs kubernetes.Interface, ns, bin string, env []string) *Cluster {
	return &Cluster{Clientset: cs, NS: ns, bin: bin, env: env, dir: t.TempDir(),
		jobs: map[string]bool{}, pods: map[string]*exec.Cmd{}, logs: map[string]*bytes.Buffer{}, exited: map[string]bool{},
		ports: map[string][2]int{}, podPorts: map[string]int{}}
}

func (c *Cluster) start(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	c.ctx = ctx
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				c.step(t)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cmd := range c.pods {
			if cmd.Process != nil {
				cmd.Process.Kill()
			}
		}
	})
}

// Log is what a pod's container wrote.
func (c *Cluster) Log(pod string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.logs[pod]; b != nil {
		return b.String()
	}
	return ""
}

// AllLogs is every pod's output, by name.
func (c *Cluster) AllLogs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for name, l := range c.logs {
		fmt.Fprintf(&b, "--- pod %s:\n%s\n", name, l.String())
	}
	return b.String()
}

// Running reports whether a pod's process has started and not ended.
func (c *Cluster) Running(pod string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cmd := c.pods[pod]
	return cmd != nil && cmd.Process != nil && !c.exited[pod]
}

// Idle reports whether every pod's process has ended.
func (c *Cluster) Idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.pods {
		if !c.exited[name] {
			return false
		}
	}
	return true
}

// Kill ends a pod's process, as a node that goes away does.
func (c *Cluster) Kill(pod string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cmd := c.pods[pod]; cmd != nil && cmd.Process != nil {
		cmd.Process.Kill()
	}
}

// step makes the pods of new Jobs and starts pods not yet started.
func (c *Cluster) step(t testing.TB) {
	ctx := c.ctx
	jobs, err := c.Clientset.BatchV1().Jobs(c.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, j := range jobs.Items {
		if c.jobs[j.Name] {
			continue
		}
		c.jobs[j.Name] = true
		n := 1
		if j.Spec.Completions != nil {
			n = int(*j.Spec.Completions)
		}
		for i := range n {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", j.Name, i), Namespace: c.NS,
				Labels: j.Spec.Template.Labels, Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": strconv.Itoa(i)}},
				Spec: *j.Spec.Template.Spec.DeepCopy(), Status: corev1.PodStatus{Phase: corev1.PodPending}}
			pod.Spec.NodeName = "kubetest" // (scheduled: there is no scheduler)
			if _, err := c.Clientset.CoreV1().Pods(c.NS).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Logf("kubetest: creating pod %s: %v", pod.Name, err)
			}
		}
	}
	pods, err := c.Clientset.CoreV1().Pods(c.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		c.mu.Lock()
		_, started := c.pods[p.Name]
		c.mu.Unlock()
		if started || p.Status.Phase != corev1.PodPending {
			continue
		}
		c.run(t, p)
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// run starts a pod's one container as a process.
func (c *Cluster) run(t testing.TB, p *corev1.Pod) {
	ctx := c.ctx
	ct := p.Spec.Containers[0]
	if c.Waiting != nil {
		if why := c.Waiting(p); why != "" {
			c.mu.Lock()
			c.pods[p.Name] = &exec.Cmd{}
			c.exited[p.Name] = true
			c.mu.Unlock()
			if cur, err := c.Clientset.CoreV1().Pods(c.NS).Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
				cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ct.Name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: why, Message: "stand-in: " + ct.Image}}}}
				c.Clientset.CoreV1().Pods(c.NS).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			}
			return
		}
	}
	run := p.Labels["aiperf-action/run"]
	mapTo := func(s string) string { return mapPodAddr(s, c.podIP) }
	if c.podIP == "" {
		c.mu.Lock()
		ports, ok := c.ports[run]
		if !ok {
			ports = [2]int{freePair(t), freePair(t)}
			c.ports[run] = ports
		}
		c.podPorts[p.Name] = ports[1]
		c.mu.Unlock()
		mapTo = func(s string) string { return mapAddr(s, ports) }
	}
	// A ConfigMap volume holds its keys as files.
	for _, v := range p.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm, err := c.Clientset.CoreV1().ConfigMaps(c.NS).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			t.Logf("kubetest: pod %s: configmap %s: %v", p.Name, v.ConfigMap.Name, err)
			continue
		}
		for _, m := range ct.VolumeMounts {
			if m.Name != v.Name {
				continue
			}
			local := c.mapMounts(p, m.MountPath)
			for k, data := range cm.Data {
				os.WriteFile(local+"/"+k, []byte(data), 0o644)
			}
		}
	}
	vars := map[string]string{}
	var env []string
	for _, e := range ct.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			switch {
			case f.SecretKeyRef != nil:
				s, err := c.Clientset.CoreV1().Secrets(c.NS).Get(ctx, f.SecretKeyRef.Name, metav1.GetOptions{})
				if err != nil {
					t.Logf("kubetest: pod %s: secret %s: %v", p.Name, f.SecretKeyRef.Name, err)
					continue
				}
				v = s.StringData[f.SecretKeyRef.Key]
				if b, ok := s.Data[f.SecretKeyRef.Key]; ok {
					v = string(b)
				}
			case f.FieldRef != nil:
				if k, ok := strings.CutPrefix(f.FieldRef.FieldPath, "metadata.annotations['"); ok {
					v = p.Annotations[strings.TrimSuffix(k, "']")]
				}
			}
		}
		v = mapTo(c.mapMounts(p, v))
		vars[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	var args []string
	for _, a := range ct.Args {
		a = varRef.ReplaceAllStringFunc(a, func(m string) string { return vars[m[2:len(m)-1]] })
		args = append(args, mapTo(c.mapMounts(p, a)))
	}
	argv := append(append(slices.Clone(c.prefix), c.bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), c.env...), env...)
	logs := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = lockedWriter{&c.mu, logs}, lockedWriter{&c.mu, logs}
	c.mu.Lock()
	c.pods[p.Name] = cmd
	c.logs[p.Name] = logs
	err := cmd.Start()
	c.mu.Unlock()
	if err != nil {
		c.setStatus(p.Name, corev1.PodFailed, &corev1.ContainerStateTerminated{ExitCode: 127, Message: err.Error()}, 0)
		return
	}
	restarts := int32(0)
	if c.Restart != nil && c.Restart(p) {
		restarts = 1
	}
	c.setStatus(p.Name, corev1.PodRunning, nil, restarts)
	go func() {
		err := cmd.Wait()
		c.mu.Lock()
		c.exited[p.Name] = true
		c.mu.Unlock()
		code := 0
		if err != nil {
			code = 1
			if x, ok := err.(*exec.ExitError); ok && x.ExitCode() >= 0 {
				code = x.ExitCode()
			} else {
				code = 137
			}
		}
		phase := corev1.PodSucceeded
		if code != 0 {
			phase = corev1.PodFailed
		}
		c.setStatus(p.Name, phase, &corev1.ContainerStateTerminated{ExitCode: int32(code)}, restarts)
	}()
}

// mapMounts puts a container path under an emptyDir mount in the pod's
// folder here.
func (c *Cluster) mapMounts(p *corev1.Pod, s string) string {
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		if s == m.MountPath || strings.HasPrefix(s, m.MountPath+"/") {
			local := c.dir + "/" + p.Name + "/" + m.Name
			os.MkdirAll(local, 0o755)
			return local + strings.TrimPrefix(s, m.MountPath)
		}
	}
	return s
}

// mapPodAddr maps the Service's name to the pods' address (the ports are
// the spec's: the pods share a network namespace of their own).
func mapPodAddr(s, podIP string) string {
	ctl := strconv.Itoa(kube.ControlPort)
	if strings.HasPrefix(s, "tcp://") && strings.HasSuffix(s, ":"+ctl) {
		return "tcp://" + net.JoinHostPort(podIP, ctl)
	}
	return s
}

// mapAddr maps a run's controller ports (control, results) and its
// Service's name to loopback.
func mapAddr(s string, ports [2]int) string {
	ctl, res := strconv.Itoa(kube.ControlPort), strconv.Itoa(kube.ResultsPort)
	switch {
	case s == "0.0.0.0:"+ctl:
		return fmt.Sprintf("127.0.0.1:%d", ports[0])
	case s == "0.0.0.0:"+res:
		return fmt.Sprintf("127.0.0.1:%d", ports[1])
	case strings.HasPrefix(s, "tcp://") && strings.HasSuffix(s, ":"+ctl):
		return fmt.Sprintf("tcp://127.0.0.1:%d", ports[0])
	}
	return s
}

// setStatus writes a pod's phase and its container's state.
func (c *Cluster) setStatus(name string, phase corev1.PodPhase, term *corev1.ContainerStateTerminated, restarts int32) {
	for range 20 {
		p, err := c.Clientset.CoreV1().Pods(c.NS).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return // deleted
		}
		st := corev1.ContainerStatus{Name: p.Spec.Containers[0].Name, RestartCount: restarts, Ready: phase == corev1.PodRunning}
		if term != nil {
			st.State.Terminated = term
		} else {
			st.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
		}
		ip := cmpOr(c.podIP, "127.0.0.1")
		p.Status.Phase, p.Status.PodIP, p.Status.PodIPs, p.Status.ContainerStatuses = phase, ip, []corev1.PodIP{{IP: ip}}, []corev1.ContainerStatus{st}
		if _, err := c.Clientset.CoreV1().Pods(c.NS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			return
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// proxied is the API server's pod proxy: a GET of the pod's port.
type proxied string

func (p proxied) Stream(ctx context.Context) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, string(p), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("the pod answered %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return resp.Body, nil
}

func (p proxied) DoRaw(ctx context.Context) ([]byte, error) {
	rc, err := p.Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// freePair is a loopback port whose next port is free too.
func freePair(t testing.TB) int {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			continue
		}
		p := l.Addr().(*net.TCPAddr).Port
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1))
		l.Close()
		if err == nil {
			l2.Close()
			return p
		}
	}
	t.Fatal("kubetest: no two free ports in a row on loopback")
	return 0
}
