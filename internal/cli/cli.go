// Package cli is aiperf-action's command line: one binary, one subcommand
// per job, and exit codes that CI can act on.
//
//	0    success
//	1    regression detected (compare, gate)
//	2    usage, config or tool error, or a run that failed (too many errors,
//	     lost records, a dead worker)
//	130  interrupted (partial results were written)
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/run"
)

// Version is the tool version written into every run.
var Version = run.Version

// Exit codes.
const (
	ExitOK          = run.ExitOK
	ExitRegression  = run.ExitRegression
	ExitError       = run.ExitError
	ExitInterrupted = run.ExitInterrupted
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"profile", "run one load profile against a server and write its artifacts", runProfile},
		{"compare", "compare candidate runs with baseline runs; exit 0 pass, 1 regression, 2 error", runCompare},
		{"gate", "the CI gate: run the config's scenarios, compare with baselines, report, comment, refresh", runGate},
		{"calibrate", "measure the tester against the simulator's truth: up to what load can this runner be trusted", runCalibrate},
		{"serve", "run the built-in OpenAI-compatible simulator (exact mode)", runServe},
		{"demo", "start the simulator in process and profile it (no GPU, no network)", runDemo},
		{"worker", "internal: one load-generating worker process, started by profile", runWorker},
		{"version", "print the version", func(_ context.Context, _ []string, out, _ io.Writer) int {
			fmt.Fprintln(out, "aiperf-action", Version)
			return ExitOK
		}},
	}
}

// Run runs the command line args (without the program name).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return ExitError
		}
		return ExitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "aiperf-action: unknown command %q\n\n", args[0])
	usage(stderr)
	return ExitError
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "aiperf-action: LLM inference load tester and CI regression gate")
	fmt.Fprintln(w, "\nUsage: aiperf-action <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'aiperf-action <command> --help' for a command's flags.")
}

// parseFlags parses args into fs, reporting errors the same way everywhere.
// It returns ok=false with the exit code to use when parsing stopped.
func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	if code, ok := parseFlagsArgs(fs, args, stderr); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "aiperf-action %s: unexpected argument %q\n", fs.Name(), strings.Join(fs.Args(), " "))
		return ExitError, false
	}
	return 0, true
}

// parseFlagsArgs is parseFlags that allows positional arguments.
func parseFlagsArgs(fs *pflag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage of aiperf-action %s:\n%s", fs.Name(), fs.FlagUsages())
			return ExitOK, false
		}
		fmt.Fprintf(stderr, "aiperf-action %s: %v\nRun 'aiperf-action %s --help' for the flags.\n", fs.Name(), err, fs.Name())
		return ExitError, false
	}
	return 0, true
}
