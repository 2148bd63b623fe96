package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/worker"
)

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	var opt worker.Options
	var join string
	fs.IntVar(&opt.ID, "id", 0, "worker id")
	fs.StringVar(&opt.Control, "control", "", "controller control endpoint (tcp://host:port)")
	fs.StringVar(&opt.Records, "records", "", "controller records endpoint (tcp://host:port)")
	fs.StringVar(&join, "join", "", "join a controller on another host: its --worker-listen address (tcp://host:port); the run's token in $"+controller.TokenEnv)
	fs.IntVar(&opt.ID, "index", 0, "with --join: this worker's index, 0 to --of − 1")
	fs.IntVar(&opt.Of, "of", 0, "with --join: how many workers the run has (the controller's --workers)")
	fs.DurationVar(&opt.ClockSkew, "clock-skew", 0, "tests only: act as a host whose clock is this far ahead of the controller's")
	fs.MarkHidden("clock-skew")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if join != "" {
		ctrl, recs, err := controller.JoinAddrs(join)
		if err != nil {
			fmt.Fprintf(stderr, "aiperf-action worker: --join %s: %v\n", join, err)
			return ExitError
		}
		opt.Control, opt.Records = ctrl, recs
		opt.Token = os.Getenv(controller.TokenEnv)
		switch {
		case opt.Token == "":
			fmt.Fprintf(stderr, "aiperf-action worker: --join needs the run's worker token in $%s (the controller prints it, or takes yours)\n", controller.TokenEnv)
			return ExitError
		case opt.Of < 1 || opt.ID < 0 || opt.ID >= opt.Of:
			fmt.Fprintf(stderr, "aiperf-action worker: --index %d --of %d: want 0 ≤ index < of\n", opt.ID, opt.Of)
			return ExitError
		}
	}
	if opt.Control == "" || opt.Records == "" {
		fmt.Fprintln(stderr, "aiperf-action worker: --join, or --control and --records, is required (local workers are started by profile)")
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
