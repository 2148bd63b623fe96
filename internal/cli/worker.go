package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/worker"
)

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	var opt worker.Options
	fs.IntVar(&opt.ID, "id", 0, "worker id")
	fs.StringVar(&opt.Control, "control", "", "controller control endpoint (tcp://host:port)")
	fs.StringVar(&opt.Records, "records", "", "controller records endpoint (tcp://host:port)")
	fs.DurationVar(&opt.ClockSkew, "clock-skew", 0, "tests only: act as a host whose clock is this far ahead of the controller's")
	fs.MarkHidden("clock-skew")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if opt.Control == "" || opt.Records == "" {
		fmt.Fprintln(stderr, "aiperf-action worker: --control and --records are required (workers are started by profile)")
		return ExitError
	}
	opt.Version = Version
	opt.Stderr = stderr
	if err := worker.Run(ctx, opt); err != nil {
		fmt.Fprintf(stderr, "aiperf-action worker %d: %v\n", opt.ID, err)
		return ExitError
	}
	return ExitOK
}
