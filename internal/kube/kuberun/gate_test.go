package kuberun_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/fixture"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/kube"
	"github.com/aiperf-action/aiperf-action/internal/kube/kuberun"
	"github.com/aiperf-action/aiperf-action/internal/kube/kubetest"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// The gate with workers.kubernetes: every run (the warmup and each
// repeat) is a kube run on the stand-in cluster (internal/kube/kubetest),
// two worker pods joining a controller pod that runs the gate's own
// profile from the ConfigMap; the runs' run.json come back into the
// results folder, recorded as the gate's (its job and scenario), and are
// stored as the baselines.
func TestGateOnKubernetes(t *testing.T) {
	url := fixture.Serve(t, sim.New(sim.DefaultConfig))
	c := kubetest.Start(t, "perf", os.Args[0], []string{podEnv + "=1"})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "aiperf.yml")
	os.WriteFile(cfg, []byte(`url: `+url+`
model: sim
repeats: 2
max-repeats: 2
seed: 3
warmup: true
workers:
  kubernetes:
    image: ghcr.io/acme/aiperf-action:test
    namespace: perf
    workers: 2
scenarios:
  - name: Tiny_Chat
    streaming: true
    concurrency: 4
    request-count: 24
    isl: 8
    osl: 4
baseline:
  store: folder
  path: `+filepath.Join(dir, "baselines")+`
`), 0o644)
	var out, errb bytes.Buffer
	fs := pflag.NewFlagSet("gate", pflag.ContinueOnError)
	flag := gate.BindInputs(fs)
	if err := fs.Parse([]string{"--config", cfg, "--results-dir", filepath.Join(dir, "r"), "--mode", "refresh"}); err != nil {
		t.Fatal(err)
	}
	code := gate.Main(context.Background(), gate.MainOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb, Flag: flag,
		Render: func(marker string) gate.Renderer { return report.Gate{Marker: marker} },
		Kube:   func(ctx context.Context, o kube.RunOptions) (int, error) { return kuberun.Run(ctx, c.Clientset, o) }})
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s\n%s", code, out.String(), errb.String(), c.AllLogs())
	}
	for _, want := range []string{"no probe from this machine", "scenario warmup run 0 on Kubernetes", "scenario Tiny_Chat run 2 on Kubernetes: gate-tiny-chat-2-"} {
		if !strings.Contains(errb.String()+out.String(), want) {
			t.Errorf("the log lacks %q\n%s", want, errb.String())
		}
	}
	for i := 1; i <= 2; i++ {
		r, err := result.Read(filepath.Join(dir, "r", "Tiny_Chat", "run-"+string(rune('0'+i))))
		if err != nil {
			matches, _ := filepath.Glob(filepath.Join(dir, "r", "*", "*"))
			t.Fatalf("run %d: %v (results: %v)", i, err, matches)
		}
		if r.Counts.OK != 24 || r.ToolHealth.Workers != 2 || len(r.ToolHealth.Clocks) != 2 || r.Scenario != "Tiny_Chat" || r.Job == "" || r.Repeat != i {
			t.Errorf("run %d: %d ok, %d workers, %d clocks, scenario %q, job %q, repeat %d", i, r.Counts.OK, r.ToolHealth.Workers, len(r.ToolHealth.Clocks), r.Scenario, r.Job, r.Repeat)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "baselines", "*")); len(m) == 0 {
		t.Errorf("no baseline stored")
	}
}
