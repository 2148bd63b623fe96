package kube

import (
	"bytes"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// The manifests, read back by apimachinery's own strict YAML decoder (an
// unknown or duplicate field is an error, as the API server's field
// validation makes it) into k8s.io/api's types: five objects that say
// what a run across hosts needs, and nothing silently restarted.
func TestRenderDecodesStrictly(t *testing.T) {
	objs, err := Render(Options{Name: "bench", Namespace: "perf", Image: "ghcr.io/acme/aiperf-action:1.2.3", Workers: 20, Streams: 100000,
		Profile: []string{"-m", "llama", "-u", "http://vllm.perf.svc:8000", "--streaming", "--concurrency", "100000", "--request-count", "500000"}, ProfileJSON: []byte(`{"model":"llama"}`)})
	if err != nil {
		t.Fatal(err)
	}
	y, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dec := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
	var got []runtime.Object
	for _, doc := range bytes.Split(y, []byte("\n---\n")) {
		o, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("strict decode: %v\n%s", err, doc)
		}
		got = append(got, o)
	}
	if _, _, err := dec.Decode([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nstringDatum: {}\n"), nil, nil); err == nil {
		t.Fatal("the decoder took an unknown field: it is not strict")
	}
	if len(got) != 5 {
		t.Fatalf("%d objects", len(got))
	}
	secret, cm, svc, ctrl, workers := got[0].(*corev1.Secret), got[1].(*corev1.ConfigMap), got[2].(*corev1.Service), got[3].(*batchv1.Job), got[4].(*batchv1.Job)
	if len(secret.StringData["token"]) != 32 || secret.Namespace != "perf" || cm.Data["profile.json"] != `{"model":"llama"}` || !strings.Contains(cm.Data["args.json"], `"100000"`) {
		t.Errorf("secret %+v, configmap %+v", secret.StringData, cm.Data)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 2 || svc.Spec.Ports[1].Port != RecordsPort || svc.Spec.Selector["aiperf-action/role"] != "controller" {
		t.Errorf("service %+v", svc.Spec)
	}
	c := ctrl.Spec.Template.Spec
	if *ctrl.Spec.BackoffLimit != 0 || c.RestartPolicy != corev1.RestartPolicyNever || !strings.Contains(strings.Join(c.Containers[0].Args, " "), "--worker-listen 0.0.0.0:5555 --workers 20 --artifact-dir /results") ||
		c.Containers[0].Env[0].ValueFrom.SecretKeyRef.Name != "bench-token" {
		t.Errorf("controller %+v", c.Containers[0])
	}
	w := workers.Spec
	wc := w.Template.Spec.Containers[0]
	if *w.CompletionMode != batchv1.IndexedCompletion || *w.Completions != 20 || *w.Parallelism != 20 || *w.BackoffLimit != 0 || w.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("workers' job %+v", w)
	}
	if strings.Join(wc.Args, " ") != "worker --join tcp://bench.perf.svc:5555 --index $(JOB_COMPLETION_INDEX) --of 20" ||
		wc.Env[1].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("worker %+v", wc)
	}
	// 5000 streams a pod: 1.5 × (51 MiB + 5000 × 65 KiB) = 553 MiB.
	if m := wc.Resources.Requests.Memory().Value() >> 20; m != 553 {
		t.Errorf("a worker's memory request %d MiB, want 553", m)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Name: "Bad_Name", Image: "i", Workers: 1}, "--name"},
		{Options{Name: "ok", Workers: 1}, "--image"},
		{Options{Name: "ok", Image: "i", Workers: 0}, "--workers 0"},
		{Options{Name: "ok", Image: "i", Workers: 1, Profile: []string{"--api-key", "sk-x"}}, "a credential would be written"},
		{Options{Name: "ok", Image: "i", Workers: 1, Profile: []string{"--workers=3"}}, "--workers: kube render sets it"},
	} {
		if _, err := Render(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
