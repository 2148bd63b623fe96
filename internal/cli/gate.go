package cli

import (
	"context"
	"io"
	"net/http"
	"os"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/report"
)

// GateOptions inject the outside world into the gate.
type GateOptions struct {
	Getenv     func(string) string
	HTTPClient *http.Client // for the GitHub API (nil: default)
	Stdout     io.Writer
	Stderr     io.Writer
}

func runGate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return Gate(ctx, args, GateOptions{Getenv: os.Getenv, Stdout: stdout, Stderr: stderr})
}

// gatePanicHook, when set (by a test), is called with the token once the
// environment is read.
var gatePanicHook func(token string)

// Gate runs the gate (see package gate) with its action inputs, each also
// accepted as a flag (a flag wins). Exit 0 pass (or inconclusive, or no
// baseline), 1 regression, 2 error.
func Gate(ctx context.Context, args []string, opt GateOptions) (exit int) {
	fs := pflag.NewFlagSet("gate", pflag.ContinueOnError)
	vals := map[string]*string{}
	for _, in := range gate.Inputs {
		vals[in.Name] = fs.String(in.Name, in.Default, in.Usage+" (action input "+in.Name+")")
		if in.Default == "true" || in.Default == "false" || in.Name == "fail-on-inconclusive" {
			fs.Lookup(in.Name).NoOptDefVal = "true" // a switch, as compare's: --fail-on-inconclusive alone is true
		}
	}
	if code, ok := parseFlags(fs, args, opt.Stdout, opt.Stderr); !ok {
		return code
	}
	hook := gatePanicHook
	return gate.Main(ctx, gate.MainOptions{Getenv: opt.Getenv, HTTPClient: opt.HTTPClient, Stdout: opt.Stdout, Stderr: opt.Stderr, OnEnv: hook,
		Flag:   func(name string) (string, bool) { return *vals[name], fs.Changed(name) },
		Render: func(marker string) gate.Renderer { return report.Gate{Marker: marker} }})
}
