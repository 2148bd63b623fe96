package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"
)

// RunOptions are a `kube run`'s: the objects' (Options, whose Namespace
// must be set) and what to do with them.
type RunOptions struct {
	Options
	Out      string        // the local folder the results are unpacked into
	Timeout  time.Duration // the whole run: apply, schedule, load, collect
	Poll     time.Duration // how often the pods are looked at (2 s)
	Keep     bool          // leave the objects in the cluster
	Progress io.Writer
	// Kubeconfig and Context find the cluster's credentials, as kubectl
	// finds them ("": $KUBECONFIG, ~/.kube/config, or a pod's service
	// account; the current context).
	Kubeconfig, Context string
}

// A Runner does a `kube run` (internal/kube/kuberun.Runner, which holds
// client-go; the command wires it in, so that what only renders, serves
// results or reads a profile does not link a Kubernetes client). It
// returns the controller's exit code.
type Runner func(ctx context.Context, o RunOptions) (int, error)

// ErrInvalid marks a run whose numbers cannot stand: a pod restarted, or
// a worker failed. Its results, when there are any, are still collected.
var ErrInvalid = errors.New("the run is invalid")

// RunDir is the folder under out that holds the run's run.json (the
// controller writes it under its --artifact-dir).
func RunDir(out string) (string, error) {
	var found string
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "run.json" && (found == "" || len(p) < len(found)) {
			found = p
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if found == "" {
		return "", fmt.Errorf("no run.json in the results (%s)", out)
	}
	return filepath.Dir(found), nil
}
