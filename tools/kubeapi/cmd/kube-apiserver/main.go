// Command kube-apiserver is upstream Kubernetes' API server, built from
// the module proxy (k8s.io/kubernetes at the release go.mod names) for the
// test of `kube run` against a real API server (internal/kube,
// TestKubeRunOnARealAPIServer). It is not part of aiperf-action.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
