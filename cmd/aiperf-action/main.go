// Command aiperf-action is an LLM-inference load tester and CI regression gate.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/aiperf-action/aiperf-action/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
