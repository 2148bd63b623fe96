package gate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/action"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/kube"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// MainOptions are what the gate's entry point takes from its caller: the
// outside world, how to read an input, and how to render the report.
type MainOptions struct {
	Getenv     func(string) string
	HTTPClient *http.Client // for the GitHub API (nil: default)
	Stdout     io.Writer
	Stderr     io.Writer
	// Flag is an input's flag value, when the flag was given (it wins
	// over the action's input), or its default.
	Flag func(name string) (value string, given bool)
	// Render makes the report's renderer, which marks its comment with
	// marker.
	Render func(marker string) Renderer
	// OnEnv, when set (by a test), is called with the token once the
	// environment is read.
	OnEnv func(token string)
	// Kube runs workers.kubernetes's runs (kuberun.Runner; a test's
	// stand-in cluster).
	Kube kube.Runner
	// PayloadNonce, when not 0, is the job's nonce (Options.PayloadNonce;
	// a test that knows which prompts a job sends).
	PayloadNonce uint64
}

// Main runs the gate as the action (or the gate command) does: the
// environment read, the inputs checked, then a run, a refresh or a
// comment. A tool error is printed, and annotated in Actions, and exits
// ExitError; a bug's panic too, its trace with the token cut out.
func Main(ctx context.Context, m MainOptions) (exit int) {
	var env *action.Env
	var gopt Options
	tail := &logTail{}
	m.Stdout, m.Stderr = tail.tee(m.Stdout), tail.tee(m.Stderr)
	fail := func(err error) int {
		if env != nil && env.InActions() {
			env.Error("aiperf-action: " + strings.ReplaceAll(err.Error(), "\n", " | "))
		}
		fmt.Fprintf(m.Stderr, "aiperf-action gate: %v\n", err)
		// Not when the run was cancelled (a newer push's run replaces it,
		// and would be overwritten by this one's late word).
		if env != nil && ctx.Err() == nil {
			postFailure(env, gopt, err.Error(), tail, m.Stderr)
		}
		return run.ExitError
	}
	env, err := action.New(m.Getenv, m.Stdout)
	if err != nil {
		return fail(err)
	}
	// (The runner masks the token in its log too, but a trace may be
	// copied into an issue from elsewhere.)
	defer func() {
		if v := recover(); v != nil {
			msg := scrub(fmt.Sprintf("%v\n\n%s", v, debug.Stack()), env.Token)
			fmt.Fprintf(m.Stderr, "aiperf-action gate: internal error (a bug: please report it with this trace): %s", msg)
			exit = run.ExitError
		}
	}()
	if m.OnEnv != nil {
		m.OnEnv(env.Token)
	}
	input := func(name string) string {
		v, given := m.Flag(name)
		if given {
			return strings.TrimSpace(v)
		}
		if a := env.Input(name); a != "" {
			return a
		}
		return v
	}
	gopt = FromInputs(input)
	gopt.HTTPClient, gopt.Stdout, gopt.Stderr, gopt.Kube, gopt.PayloadNonce = m.HTTPClient, m.Stdout, m.Stderr, m.Kube, m.PayloadNonce
	if env.InActions() {
		gopt.CommentKey = env.CommentKey(input("comment-key"))
	}
	gopt.Marker = action.MarkerFor(gopt.CommentKey)
	gopt.Render = m.Render(gopt.Marker)
	if err := gopt.Check(env); err != nil {
		return fail(err)
	}
	var code int
	if gopt.Mode == "comment" {
		code, err = PostReport(ctx, env, gopt)
	} else {
		var cfg *config.Gate
		var cerr error
		if gopt.ConfigText != "" {
			if f := env.WorkflowFile(); f != "" {
				gopt.ConfigPath = f + " " + gopt.ConfigPath
			}
			cfg, cerr = ConfigureText(gopt.ConfigText, gopt.ConfigPath, input)
		} else {
			cfg, cerr = Configure(gopt.ConfigPath, input)
		}
		if cerr != nil {
			return fail(cerr)
		}
		code, err = Run(ctx, cfg, env, gopt)
	}
	if err != nil {
		return fail(err)
	}
	return code
}
