package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/action"
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
	var env *action.Env
	fail := func(err error) int {
		if env != nil && env.InActions() {
			env.Error("aiperf-action: " + strings.ReplaceAll(err.Error(), "\n", " | "))
		}
		fmt.Fprintf(opt.Stderr, "aiperf-action gate: %v\n", err)
		return ExitError
	}
	env, err := action.New(opt.Getenv, opt.Stdout)
	if err != nil {
		return fail(err)
	}
	// A bug's panic is reported with its trace, the token cut out of it
	// (the runner masks it in its log too, but a trace may be copied into
	// an issue from elsewhere), and exits 2 like any tool error.
	defer func() {
		if v := recover(); v != nil {
			msg := fmt.Sprintf("%v\n\n%s", v, debug.Stack())
			if env.Token != "" {
				msg = strings.ReplaceAll(msg, env.Token, "***")
			}
			fmt.Fprintf(opt.Stderr, "aiperf-action gate: internal error (a bug: please report it with this trace): %s", msg)
			exit = ExitError
		}
	}()
	if gatePanicHook != nil {
		gatePanicHook(env.Token)
	}
	input := func(name string) string {
		if fs.Changed(name) {
			return strings.TrimSpace(*vals[name])
		}
		if v := env.Input(name); v != "" {
			return v
		}
		return *vals[name]
	}
	gopt := gate.FromInputs(input)
	gopt.HTTPClient, gopt.Stdout, gopt.Stderr = opt.HTTPClient, opt.Stdout, opt.Stderr
	if env.InActions() {
		gopt.CommentKey = env.CommentKey(input("comment-key"))
	}
	gopt.Marker = action.MarkerFor(gopt.CommentKey)
	gopt.Render = report.Gate{Marker: gopt.Marker}
	if err := gopt.Check(env); err != nil {
		return fail(err)
	}
	var code int
	if gopt.Mode == "comment" {
		code, err = gate.PostReport(ctx, env, gopt)
	} else {
		cfg, cerr := gate.Configure(gopt.ConfigPath, input)
		if cerr != nil {
			return fail(cerr)
		}
		code, err = gate.Run(ctx, cfg, env, gopt)
	}
	if err != nil {
		return fail(err)
	}
	return code
}
