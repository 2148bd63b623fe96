package kuberun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/aiperf-action/aiperf-action/internal/kube"
)

// Run applies a run's objects with cs, follows its pods, collects the
// controller's results into o.Out through the API server's pod proxy, and
// deletes the objects (unless o.Keep). It returns the controller's exit
// code. A pod that restarts, or a worker pod that fails, makes the run
// kube.ErrInvalid: nothing restarts silently.
func Run(ctx context.Context, cs kubernetes.Interface, o kube.RunOptions) (int, error) {
	if o.Namespace == "" {
		return 0, errors.New("kube run: no namespace")
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Token == "" {
		o.Token = kube.NewToken()
	}
	objs, err := kube.Render(o.Options)
	if err != nil {
		return 0, err
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Hour
	}
	// The caller's ctx is Ctrl-C: it asks the controller to stop and write
	// what it has, which is then taken as a finished run's results are.
	interrupted := ctx.Done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.Timeout)
	defer cancel()
	ns := o.Namespace
	var made []runtime.Object
	if !o.Keep {
		defer func() {
			if len(made) == 0 {
				return
			}
			// A fresh context: the run's may be spent or cancelled.
			cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
			defer ccancel()
			if err := cleanup(cctx, cs, ns, o.Name, made); err != nil {
				fmt.Fprintf(o.Progress, "kube run: cleaning up: %v (delete what is labelled aiperf-action/run=%s by hand)\n", err, o.Name)
			} else {
				fmt.Fprintf(o.Progress, "kube run: deleted the run's objects\n")
			}
		}()
	}
	for _, obj := range objs {
		if err := create(ctx, cs, ns, obj); err != nil {
			return 0, err
		}
		made = append(made, obj)
	}
	fmt.Fprintf(o.Progress, "kube run: applied %s in namespace %s: a controller and %d worker pods\n", o.Name, ns, o.Workers)

	sel := metav1.ListOptions{LabelSelector: "aiperf-action/run=" + o.Name}
	var invalid []string
	last := ""
	var st kube.Status
	controllerPod := ""
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	for {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil {
			return 0, fmt.Errorf("kube run: listing the run's pods: %v", err)
		}
		summary, ctrl, bad, ctrlEnd, stuck := look(pods.Items)
		for _, b := range bad {
			if !slices.Contains(invalid, b) {
				invalid = append(invalid, b)
				fmt.Fprintf(o.Progress, "kube run: %s\n", b)
			}
		}
		if summary != last {
			fmt.Fprintf(o.Progress, "kube run: %s\n", summary)
			last = summary
		}
		if len(stuck) > 0 {
			return 0, fmt.Errorf("kube run: %s", strings.Join(stuck, "; "))
		}
		if ctrlEnd != "" {
			logTail(ctx, cs, ns, o.Name+"-controller", sel, o.Progress)
			return 0, fmt.Errorf("kube run: the controller pod ended before its results were taken: %s", ctrlEnd)
		}
		if ctrl != "" {
			controllerPod = ctrl
			if s, err := status(ctx, cs, ns, ctrl, o.Token); err == nil && s.State == "done" {
				st = s
				break
			}
		}
		select {
		case <-interrupted:
			interrupted = nil
			if controllerPod == "" {
				return 0, errors.New("kube run: interrupted before the controller ran")
			}
			fmt.Fprintf(o.Progress, "kube run: interrupted: asking the controller to stop and write what it has (at most 2 minutes)\n")
			if _, err := cs.CoreV1().Pods(ns).ProxyGet("http", controllerPod, strconv.Itoa(kube.ResultsPort), "/stop", map[string]string{"token": o.Token}).DoRaw(ctx); err != nil {
				return 0, fmt.Errorf("kube run: interrupted, and the controller could not be asked to stop: %v", err)
			}
			var stopCancel context.CancelFunc
			ctx, stopCancel = context.WithTimeout(ctx, 2*time.Minute)
			defer stopCancel()
		case <-ctx.Done():
			return 0, fmt.Errorf("kube run: %v waiting for the run (--timeout %v); pods: %s", ctx.Err(), o.Timeout, last)
		case <-tick.C:
		}
	}
	fmt.Fprintf(o.Progress, "kube run: the controller is done (exit %d); taking its results\n", st.Exit)
	if st.Exit != 0 {
		logTail(ctx, cs, ns, o.Name+"-controller", sel, o.Progress)
	}
	rc, err := cs.CoreV1().Pods(ns).ProxyGet("http", controllerPod, strconv.Itoa(kube.ResultsPort), "/results.tar.gz", map[string]string{"token": o.Token}).Stream(ctx)
	if err != nil {
		return st.Exit, fmt.Errorf("kube run: taking the results from pod %s: %v", controllerPod, err)
	}
	n, err := kube.ExtractResults(rc, o.Out)
	rc.Close()
	if err != nil {
		return st.Exit, fmt.Errorf("kube run: %v", err)
	}
	fmt.Fprintf(o.Progress, "kube run: %d files in %s\n", n, o.Out)
	if b, err := cs.CoreV1().Pods(ns).ProxyGet("http", controllerPod, strconv.Itoa(kube.ResultsPort), "/done", map[string]string{"token": o.Token}).DoRaw(ctx); err != nil {
		fmt.Fprintf(o.Progress, "kube run: telling the controller to go: %v %s\n", err, b)
	}
	// A restart seen only at the end still counts.
	if pods, err := cs.CoreV1().Pods(ns).List(ctx, sel); err == nil {
		_, _, bad, _, _ := look(pods.Items)
		for _, b := range bad {
			if !slices.Contains(invalid, b) {
				invalid = append(invalid, b)
			}
		}
	}
	if len(invalid) > 0 {
		return st.Exit, fmt.Errorf("%w: %s", kube.ErrInvalid, strings.Join(invalid, "; "))
	}
	return st.Exit, nil
}

// logTail prints the last lines of the controller pod's log.
func logTail(ctx context.Context, cs kubernetes.Interface, ns, prefix string, sel metav1.ListOptions, w io.Writer) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		return
	}
	tail := int64(30)
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, prefix) {
			continue
		}
		b, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
		if err != nil {
			fmt.Fprintf(w, "kube run: pod %s's log: %v\n", p.Name, err)
			continue
		}
		fmt.Fprintf(w, "kube run: the last lines of pod %s's log:\n%s\n", p.Name, strings.TrimRight(string(b), "\n"))
	}
}

// look summarises the run's pods: phases by role, the controller pod
// when it runs, what invalidates the run, and how the controller ended
// if it did.
func look(pods []corev1.Pod) (summary, controller string, bad []string, ctrlEnd string, stuck []string) {
	phases := map[string]map[corev1.PodPhase]int{"controller": {}, "worker": {}}
	for _, p := range pods {
		role := p.Labels["aiperf-action/role"]
		if phases[role] == nil {
			continue
		}
		phases[role][p.Status.Phase]++
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount > 0 {
				bad = append(bad, fmt.Sprintf("pod %s restarted (%d times): a restarted %s would rejoin a run that has already failed it", p.Name, c.RestartCount, role))
			}
			if w := c.State.Waiting; w != nil && cannotStart[w.Reason] {
				stuck = append(stuck, strings.TrimSpace(fmt.Sprintf("pod %s cannot start its container: %s %s", p.Name, w.Reason, w.Message)))
			}
		}
		switch {
		case role == "worker" && p.Status.Phase == corev1.PodFailed:
			bad = append(bad, fmt.Sprintf("worker pod %s failed: %s", p.Name, ended(p)))
		case role == "controller" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil:
			controller = p.Name
		case role == "controller" && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded):
			ctrlEnd = fmt.Sprintf("pod %s %s: %s", p.Name, p.Status.Phase, ended(p))
		}
	}
	part := func(role string) string {
		var s []string
		for _, ph := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
			if n := phases[role][ph]; n > 0 {
				s = append(s, fmt.Sprintf("%d %s", n, strings.ToLower(string(ph))))
			}
		}
		if len(s) == 0 {
			return "none yet"
		}
		return strings.Join(s, ", ")
	}
	return "controller: " + part("controller") + "; workers: " + part("worker"), controller, bad, ctrlEnd, stuck
}

// cannotStart are the kubelet's reasons a container waits that no wait
// will mend: the run stops at once, saying which pod and why.
var cannotStart = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "CrashLoopBackOff": true}

// ended is how a pod's containers ended (exit code, reason, message).
func ended(p corev1.Pod) string {
	var s []string
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			s = append(s, strings.TrimSpace(fmt.Sprintf("%s exit %d %s %s", c.Name, t.ExitCode, t.Reason, t.Message)))
		}
	}
	if len(s) == 0 {
		return cmpOr(p.Status.Reason, "no container ended")
	}
	return strings.Join(s, "; ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// status asks the controller's results server, through the pod proxy.
func status(ctx context.Context, cs kubernetes.Interface, ns, pod, token string) (kube.Status, error) {
	b, err := cs.CoreV1().Pods(ns).ProxyGet("http", pod, strconv.Itoa(kube.ResultsPort), "/status", map[string]string{"token": token}).DoRaw(ctx)
	if err != nil {
		return kube.Status{}, err
	}
	var s kube.Status
	if err := json.Unmarshal(b, &s); err != nil {
		return kube.Status{}, fmt.Errorf("the controller's /status: %v", err)
	}
	return s, nil
}

// create makes one rendered object in ns; one that is there already is
// an error naming it (another run of that name).
func create(ctx context.Context, cs kubernetes.Interface, ns string, obj runtime.Object) error {
	var err error
	var what string
	switch x := obj.(type) {
	case *corev1.Secret:
		what = "secret/" + x.Name
		_, err = cs.CoreV1().Secrets(ns).Create(ctx, x, metav1.CreateOptions{})
	case *corev1.ConfigMap:
		what = "configmap/" + x.Name
		_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, x, metav1.CreateOptions{})
	case *corev1.Service:
		what = "service/" + x.Name
		_, err = cs.CoreV1().Services(ns).Create(ctx, x, metav1.CreateOptions{})
	case *batchv1.Job:
		what = "job/" + x.Name
		_, err = cs.BatchV1().Jobs(ns).Create(ctx, x, metav1.CreateOptions{})
	default:
		return fmt.Errorf("kube run: cannot create a %T", obj)
	}
	switch {
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("kube run: %s is already in namespace %s: another run of this --name is there (delete what is labelled aiperf-action/run, or give another --name)", what, ns)
	case err != nil:
		return fmt.Errorf("kube run: creating %s in namespace %s: %v", what, ns, err)
	}
	return nil
}

// cleanup deletes the objects this run made, and its Jobs' pods.
func cleanup(ctx context.Context, cs kubernetes.Interface, ns, name string, made []runtime.Object) error {
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	var errs []error
	keep := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	jobs := false
	for _, obj := range slices.Backward(made) {
		switch x := obj.(type) {
		case *batchv1.Job:
			jobs = true
			keep(cs.BatchV1().Jobs(ns).Delete(ctx, x.Name, del))
		case *corev1.Service:
			keep(cs.CoreV1().Services(ns).Delete(ctx, x.Name, del))
		case *corev1.ConfigMap:
			keep(cs.CoreV1().ConfigMaps(ns).Delete(ctx, x.Name, del))
		case *corev1.Secret:
			keep(cs.CoreV1().Secrets(ns).Delete(ctx, x.Name, del))
		}
	}
	if jobs { // (the Job controller deletes them too; a stand-in may not)
		if l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "aiperf-action/run=" + name}); err == nil {
			for _, x := range l.Items {
				keep(cs.CoreV1().Pods(ns).Delete(ctx, x.Name, del))
			}
		} else {
			keep(err)
		}
	}
	return errors.Join(errs...)
}

// Runner is kube.Runner with client-go: the cluster from o.Kubeconfig and
// o.Context as kubectl finds them, the namespace the context's when o
// gives none.
func Runner(ctx context.Context, o kube.RunOptions) (int, error) {
	cs, ns, err := Client(o.Kubeconfig, o.Context)
	if err != nil {
		return 0, err
	}
	if o.Namespace == "" {
		o.Namespace = ns
	}
	return Run(ctx, cs, o)
}
