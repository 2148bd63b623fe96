package gate

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/kube"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// onKube reports whether the gate's runs go to Kubernetes.
func (g *gate) onKube() bool { return g.cfg.Workers != nil && g.cfg.Workers.Kubernetes != nil }

var notLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// kubeName is a run's objects' name: the scenario's, the repeat and a
// random suffix, a DNS label of at most 42 characters.
func kubeName(scenario string, i int) string {
	s := strings.Trim(notLabel.ReplaceAllString(strings.ToLower(scenario), "-"), "-")
	if len(s) > 20 {
		s = strings.TrimRight(s[:20], "-")
	}
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("gate-%s-%d-%s", cmp.Or(s, "run"), i, hex.EncodeToString(b[:]))
}

// runKube runs profile p as a kube run (a controller pod and the
// config's worker pods) and reads its run.json back, recorded as the
// gate's own runs are (job, scenario, environment). A run the cluster
// made invalid (a pod restarted, a worker lost) stops the gate.
func (g *gate) runKube(ctx context.Context, p *config.Profile, scenario string, i int) (*run.Result, error) {
	k := g.cfg.Workers.Kubernetes
	if g.opt.Kube == nil {
		return nil, errors.New("workers.kubernetes: this build of aiperf-action has no Kubernetes client")
	}
	o := kube.RunOptions{Options: kube.Options{Name: kubeName(scenario, i), Namespace: k.Namespace, Image: k.Image, Workers: k.Workers},
		Out: p.ArtifactDir, Timeout: cmp.Or(k.Timeout, 30*time.Minute), Progress: g.opt.Stderr, Kubeconfig: k.Kubeconfig, Context: k.Context}
	if err := kube.FromProfile(&o.Options, p); err != nil {
		return nil, fmt.Errorf("scenario %q: %v", scenario, err)
	}
	g.logf("aiperf-action gate: scenario %s run %d on Kubernetes: %s in namespace %s, %d worker pods of %s", scenario, i, o.Name, cmp.Or(k.Namespace, "(the kubeconfig's)"), k.Workers, k.Image)
	code, err := g.opt.Kube(ctx, o)
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}
	if errors.Is(err, kube.ErrInvalid) {
		return nil, fmt.Errorf("scenario %q run %d: %v", scenario, i, err)
	}
	dir, derr := kube.RunDir(o.Out)
	if derr != nil {
		if err == nil {
			err = derr
		}
		return nil, fmt.Errorf("scenario %q run %d on Kubernetes wrote no results (exit %d): %v", scenario, i, code, err)
	}
	r, rerr := result.Read(dir)
	if rerr != nil {
		return nil, fmt.Errorf("scenario %q run %d on Kubernetes: %v", scenario, i, rerr)
	}
	r.Job, r.Scenario, r.Environment = g.job, scenario, g.fp
	b, rerr := result.Encode(r)
	if rerr == nil {
		rerr = result.WriteFileAtomic(filepath.Join(dir, "run.json"), b)
	}
	if rerr != nil {
		return nil, fmt.Errorf("scenario %q run %d: run.json: %v", scenario, i, rerr)
	}
	if err != nil {
		fmt.Fprintf(g.opt.Stderr, "aiperf-action gate: scenario %s run %d on Kubernetes: %v\n", scenario, i, err)
	}
	return &run.Result{Run: r, JSON: b, Dir: dir}, nil
}
