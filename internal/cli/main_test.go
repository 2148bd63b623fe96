package cli

import (
	"context"
	"os"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/controller"
)

// TestMain lets this test binary serve as the worker process: the
// controller re-executes its own binary with `worker ...` arguments.
func TestMain(m *testing.M) {
	if os.Getenv(controller.RoleEnv) == "worker" {
		os.Exit(Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
