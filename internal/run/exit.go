package run

import (
	"errors"
	"fmt"

	"github.com/aiperf-action/aiperf-action/internal/hub"
)

// Version is the tool version written into every run and checked against
// every worker's. A release build sets it (-ldflags -X, see
// .github/workflows/release.yml).
var Version = "0.1.0-dev"

// The hub sees which tool and version downloads (set after -ldflags -X).
func init() { hub.DefaultUserAgent = "aiperf-action/" + Version }

// Exit codes, the same for every command.
const (
	ExitOK          = 0
	ExitRegression  = 1   // compare, gate: a regression was detected
	ExitError       = 2   // usage, config or tool error, or a run that failed
	ExitInterrupted = 130 // interrupted; partial results were written
)

// An Error is a failure with the exit code it should end the process with.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Failf is an Error with ExitError.
func Failf(format string, a ...any) error {
	return &Error{Code: ExitError, Err: fmt.Errorf(format, a...)}
}

// ExitCode is err's exit code: ExitOK for nil, an Error's own code, else
// ExitError.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitError
}
