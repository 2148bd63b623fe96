// Command aiperf-action is an LLM-inference load tester and CI regression gate.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/aiperf-action/aiperf-action/internal/cli"
	"github.com/aiperf-action/aiperf-action/internal/kube/kuberun"
)

func main() {
	cli.KubeRunner = kuberun.Runner // (client-go is linked here, not into cli's importers)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
