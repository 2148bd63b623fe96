package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/kube"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// runKube is `aiperf-action kube render`: the manifests of a run across
// hosts on Kubernetes (internal/kube), from the profile's own flags after
// the kube flags.
func runKube(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "render" {
		fmt.Fprintln(stderr, "aiperf-action kube: want `kube render --name N --image I --workers W [--namespace NS] [--out FILE] -- <profile flags>`")
		return ExitError
	}
	fs := pflag.NewFlagSet("kube render", pflag.ContinueOnError)
	var o kube.Options
	var out string
	fs.StringVar(&o.Name, "name", "aiperf", "the run's name: the objects' prefix and label")
	fs.StringVar(&o.Namespace, "namespace", "", "the namespace (default: the one kubectl applies to)")
	fs.StringVar(&o.Image, "image", "", "an image whose entrypoint is aiperf-action, of this version")
	fs.IntVar(&o.Workers, "workers", 0, "worker pods, one worker each, spread over the nodes")
	fs.StringVar(&out, "out", "", "write the manifests here (default: standard output)")
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
		fmt.Fprintf(stderr, "aiperf-action kube render: %v\n", err)
		return ExitError
	}
	if err := kube.ReadProfile(&o); err != nil {
		fmt.Fprintf(stderr, "aiperf-action kube render: the profile: %v\n", err)
		return ExitError
	}
	objs, err := kube.Render(o)
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action kube render: %v\n", err)
		return ExitError
	}
	y, err := kube.YAML(objs)
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action kube render: %v\n", err)
		return ExitError
	}
	if out == "" {
		stdout.Write(y)
		return ExitOK
	}
	if err := result.WriteFileAtomic(out, y); err != nil {
		fmt.Fprintf(stderr, "aiperf-action kube render: --out: %v\n", err)
		return ExitError
	}
	fmt.Fprintf(stderr, "aiperf-action kube render: %s: apply with kubectl apply -f %s; the results are in the controller pod's /results\n", out, out)
	return ExitOK
}
