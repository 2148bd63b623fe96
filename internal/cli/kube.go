package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/kube"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

const kubeUsage = "aiperf-action kube: want `kube render --name N --image I --workers W [--namespace NS] [--out FILE] -- <profile flags>` or `kube run --name N --image I --workers W [--namespace NS] [--kubeconfig F] [--context C] [--timeout D] [--keep] [--output-artifact-dir DIR] -- <profile flags>`"

// runKube is `aiperf-action kube render` (the manifests of a run across
// hosts on Kubernetes, internal/kube) and `kube run` (applied with the
// caller's kubeconfig or the pod's service account, followed, the
// results taken, the objects deleted), from the profile's own flags
// after the kube flags.
func runKube(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "render" && args[0] != "run") {
		fmt.Fprintln(stderr, kubeUsage)
		return ExitError
	}
	verb := args[0]
	name := "aiperf-action kube " + verb
	fs := pflag.NewFlagSet("kube "+verb, pflag.ContinueOnError)
	var o kube.RunOptions
	var out, kubeconfig, kubeContext string
	fs.StringVar(&o.Name, "name", "aiperf", "the run's name: the objects' prefix and label")
	fs.StringVar(&o.Namespace, "namespace", "", "the namespace (default: the kubeconfig context's, as kubectl's)")
	fs.StringVar(&o.Image, "image", "", "an image whose entrypoint is aiperf-action, of this version")
	fs.IntVar(&o.Workers, "workers", 0, "worker pods, one worker each, spread over the nodes")
	if verb == "render" {
		fs.StringVar(&out, "out", "", "write the manifests here (default: standard output)")
	} else {
		fs.StringVar(&kubeconfig, "kubeconfig", "", "the kubeconfig (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account when run in a cluster)")
		fs.StringVar(&kubeContext, "context", "", "the kubeconfig context (default: its current one)")
		fs.DurationVar(&o.Timeout, "timeout", time.Hour, "the whole run: pods scheduled, the load, the results taken")
		fs.BoolVar(&o.Keep, "keep", false, "leave the run's objects in the cluster (default: deleted at the end, whatever happened)")
		fs.StringVar(&out, "output-artifact-dir", "", "unpack the controller's results here (default: artifacts/kube-NAME)")
	}
	kubeArgs, profileArgs := args[1:], []string(nil)
	for i, a := range kubeArgs {
		if a == "--" {
			kubeArgs, profileArgs = kubeArgs[:i], kubeArgs[i+1:]
			break
		}
	}
	if code, ok := parseFlags(fs, kubeArgs, stdout, stderr); !ok {
		return code
	}
	o.Profile = profileArgs
	if err := o.Check(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitError
	}
	if err := kube.ReadProfile(&o.Options); err != nil {
		fmt.Fprintf(stderr, "%s: the profile: %v\n", name, err)
		return ExitError
	}
	if verb == "run" {
		return kubeRun(ctx, o, out, kubeconfig, kubeContext, stderr)
	}
	objs, err := kube.Render(o.Options)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitError
	}
	y, err := kube.YAML(objs)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitError
	}
	if out == "" {
		stdout.Write(y)
		return ExitOK
	}
	if err := result.WriteFileAtomic(out, y); err != nil {
		fmt.Fprintf(stderr, "%s: --out: %v\n", name, err)
		return ExitError
	}
	fmt.Fprintf(stderr, "%s: %s: apply with kubectl apply -f %s, or let `aiperf-action kube run` apply, follow and collect it; the results are in the controller pod's /results\n", name, out, out)
	return ExitOK
}

// KubeRunner does `kube run` and the gate's workers.kubernetes runs:
// kuberun.Runner, set by the command's main, so that the packages and
// tests that import this one do not link a Kubernetes client.
var KubeRunner kube.Runner

// kubeRun is `kube run` through KubeRunner; its exit code is the
// controller's, or ExitError when the run could not be made or is
// invalid.
func kubeRun(ctx context.Context, o kube.RunOptions, out, kubeconfig, kubeContext string, stderr io.Writer) int {
	if KubeRunner == nil {
		fmt.Fprintln(stderr, "aiperf-action kube run: this build has no Kubernetes client (kube render writes the objects)")
		return ExitError
	}
	if kubeconfig != "" {
		if _, err := os.Stat(kubeconfig); err != nil {
			fmt.Fprintf(stderr, "aiperf-action kube run: --kubeconfig: %v\n", err)
			return ExitError
		}
	}
	o.Kubeconfig, o.Context = kubeconfig, kubeContext
	o.Out = out
	if o.Out == "" {
		o.Out = filepath.Join("artifacts", "kube-"+o.Name)
	}
	o.Progress = stderr
	code, err := KubeRunner(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action kube run: %v\n", err)
		if errors.Is(err, kube.ErrInvalid) || code == 0 {
			return ExitError
		}
	}
	return code
}
