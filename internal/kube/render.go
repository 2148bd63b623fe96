// Package kube renders a multi-host run as Kubernetes objects: the
// controller as a Job behind a headless Service, the workers as an
// Indexed Job whose pods join it by address (worker --join, the index
// from the Job's completion index), the run's worker token as a Secret,
// and the profile as a ConfigMap. Every object is a k8s.io/api type, so
// what is written is what the API server decodes.
package kube

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Ports the controller listens on: control, and records on the next.
const (
	ControlPort = 5555
	RecordsPort = ControlPort + 1
)

// TokenEnv is the worker token's variable (controller.TokenEnv).
const TokenEnv = "AIPERF_ACTION_WORKER_TOKEN"

// Memory a worker needs (TestScaleFigures, on a 2-core machine: 51 MiB and
// 65 KiB a stream), with half again as headroom.
const (
	workerBaseMiB      = 51
	workerPerStreamKiB = 65
	headroom           = 1.5
)

// Options are a rendered run's.
type Options struct {
	Name      string   // the run's name: the objects' prefix and label
	Namespace string   // "": the kubeconfig's (none written)
	Image     string   // an image whose entrypoint is aiperf-action
	Workers   int      // worker pods, one worker each
	Streams   int      // the profile's concurrency (0: open loop), to size the workers
	Profile   []string // the profile's flags, as given to aiperf-action profile
	// ProfileJSON is the resolved profile, kept in the ConfigMap for the
	// record (what the plan is built from).
	ProfileJSON []byte
	// FromJSON runs the controller from ProfileJSON (mounted from the
	// ConfigMap, `profile --profile-json`) instead of Profile's flags: the
	// gate's way, whose profiles are built, not typed.
	FromJSON bool
	Token    string // "": drawn
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$`)

// Check says every problem with o at once, each naming its flag.
func (o Options) Check() error {
	var bad []error
	if !dnsLabel.MatchString(o.Name) {
		bad = append(bad, fmt.Errorf("--name %q: a DNS label of at most 42 characters (lowercase letters, digits, '-')", o.Name))
	}
	if o.Namespace != "" && !dnsLabel.MatchString(o.Namespace) {
		bad = append(bad, fmt.Errorf("--namespace %q: a DNS label", o.Namespace))
	}
	if o.Image == "" {
		bad = append(bad, errors.New("--image: the image to run (its entrypoint aiperf-action)"))
	}
	if o.Workers < 1 || o.Workers > 10000 {
		bad = append(bad, fmt.Errorf("--workers %d: 1 to 10000 worker pods", o.Workers))
	}
	for _, f := range o.Profile {
		name, _, _ := strings.Cut(f, "=")
		switch name {
		case "--worker-listen", "--workers", "--artifact-dir", "--output-artifact-dir":
			bad = append(bad, fmt.Errorf("%s: kube render sets it (the controller listens on %d and %d, the workers are --workers pods, the results go to /results)", name, ControlPort, RecordsPort))
		case "--api-key", "-H", "--header", "--otel-headers":
			bad = append(bad, fmt.Errorf("%s: a credential would be written into the Job's spec, which anyone who can read Jobs reads; kube render does not take credentials yet", name))
		}
	}
	return errors.Join(bad...)
}

// Render is the run's objects, in the order to apply them.
func Render(o Options) ([]runtime.Object, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.Token == "" {
		o.Token = NewToken()
	}
	labels := func(role string) map[string]string {
		return map[string]string{"app.kubernetes.io/name": "aiperf-action", "aiperf-action/run": o.Name, "aiperf-action/role": role}
	}
	meta := func(name, role string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels(role)}
	}
	never := int32(0)
	one := int32(1)
	tokenEnv := corev1.EnvVar{Name: TokenEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: o.Name + "-token"}, Key: "token"}}}

	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta(o.Name+"-token", "token"),
		Type: corev1.SecretTypeOpaque, StringData: map[string]string{"token": o.Token}}
	args, _ := json.Marshal(o.Profile)
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(o.Name+"-profile", "profile"),
		Data: map[string]string{"args.json": string(args), "profile.json": string(o.ProfileJSON)}}
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta(o.Name, "controller"),
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels("controller"), PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "control", Port: ControlPort}, {Name: "records", Port: RecordsPort}}}}

	ctrlArgs := append([]string{"profile"}, o.Profile...)
	mounts := []corev1.VolumeMount{{Name: "results", MountPath: "/results"}}
	volumes := []corev1.Volume{{Name: "results", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if o.FromJSON {
		ctrlArgs = []string{"profile", "--profile-json", "/config/profile.json"}
		mounts = append(mounts, corev1.VolumeMount{Name: "profile", MountPath: "/config", ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "profile", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: o.Name + "-profile"}}}})
	}
	ctrlArgs = append(ctrlArgs, "--worker-listen", "0.0.0.0:"+strconv.Itoa(ControlPort), "--workers", strconv.Itoa(o.Workers), "--artifact-dir", "/results")
	controller := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta(o.Name+"-controller", "controller"),
		Spec: batchv1.JobSpec{BackoffLimit: &never, Completions: &one, Parallelism: &one,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("controller")}, Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "controller", Image: o.Image, Args: ctrlArgs,
					// The results stay served after the run for kube run (ServeWhile).
					Env: []corev1.EnvVar{tokenEnv, {Name: ServeResultsEnv, Value: "0.0.0.0:" + strconv.Itoa(ResultsPort)}, {Name: ResultsDirEnv, Value: "/results"}},
					Ports: []corev1.ContainerPort{{Name: "control", ContainerPort: ControlPort}, {Name: "records", ContainerPort: RecordsPort},
						{Name: "results", ContainerPort: ResultsPort}},
					Resources:    requests(2, 512),
					VolumeMounts: mounts}},
				Volumes: volumes,
			}}}}

	per := 0
	if o.Streams > 0 {
		per = (o.Streams + o.Workers - 1) / o.Workers
	}
	mem := int(math.Ceil(headroom * (workerBaseMiB + float64(per*workerPerStreamKiB)/1024)))
	workers := int32(o.Workers)
	indexed := batchv1.IndexedCompletion
	join := fmt.Sprintf("tcp://%s:%d", o.Name, ControlPort)
	if o.Namespace != "" {
		join = fmt.Sprintf("tcp://%s.%s.svc:%d", o.Name, o.Namespace, ControlPort)
	}
	workerJob := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta(o.Name+"-workers", "worker"),
		Spec: batchv1.JobSpec{
			// A worker that fails is not replaced (a restarted worker would
			// rejoin a run that has already failed it): the Job fails.
			BackoffLimit: &never, Completions: &workers, Parallelism: &workers, CompletionMode: &indexed,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("worker")}, Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
					WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: labels("worker")}}},
				Containers: []corev1.Container{{Name: "worker", Image: o.Image,
					Args: []string{"worker", "--join", join, "--index", "$(JOB_COMPLETION_INDEX)", "--of", strconv.Itoa(o.Workers)},
					Env: []corev1.EnvVar{tokenEnv, {Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
						FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}},
					Resources: requests(1, mem)}},
			}}}}
	return []runtime.Object{secret, cm, svc, controller, workerJob}, nil
}

// NewToken is a fresh run token.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requests is cpu cores and mem MiB, requested and as the memory limit.
func requests(cpu, mem int) corev1.ResourceRequirements {
	m := resource.MustParse(strconv.Itoa(mem) + "Mi")
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(strconv.Itoa(cpu)), corev1.ResourceMemory: m},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: m},
	}
}

// YAML is the objects as one multi-document YAML stream.
func YAML(objs []runtime.Object) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}
