package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// demoArgs is the demo's profile: a short streaming chat run.
var demoArgs = []string{
	"-m", "aiperf-sim", "--endpoint-type", "chat", "--streaming",
	"--concurrency", "8", "--request-count", "64",
	"--isl", "128", "--osl", "64", "--extra-inputs", "ignore_eos:true",
	"--random-seed", "42", "--artifact-dir", "artifacts/demo",
}

// runDemo starts the simulator in process and profiles it. Extra args are
// profile flags that override the demo's.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action demo: listen on loopback: %v\n", err)
		return ExitError
	}
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 5*time.Millisecond
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(sctx, ln, sim.New(cfg)) }()
	defer func() { stop(); <-served }()
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "demo: simulator (exact mode: TTFT %s, ITL %s) on %s; this is a simulation, not a model\n", cfg.TTFT, cfg.ITL, url)
	full := append(append([]string{}, demoArgs...), "-u", url)
	return runProfile(ctx, append(full, args...), stdout, stderr)
}
