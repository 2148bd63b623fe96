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

// Gate runs the gate (see package gate) with its action inputs, each also
// accepted as a flag (a flag wins). Exit 0 pass (or inconclusive, or no
// baseline), 1 regression, 2 error.
func Gate(ctx context.Context, args []string, opt GateOptions) (exit int) {
	fs := pflag.NewFlagSet("gate", pflag.ContinueOnError)
	flag := gate.BindInputs(fs)
	if code, ok := parseFlags(fs, args, opt.Stdout, opt.Stderr); !ok {
		return code
	}
	return gate.Main(ctx, gate.MainOptions{Getenv: opt.Getenv, HTTPClient: opt.HTTPClient, Stdout: opt.Stdout, Stderr: opt.Stderr, Kube: KubeRunner,
		Flag:   flag,
		Render: func(marker string) gate.Renderer { return report.Gate{Marker: marker} }})
}
