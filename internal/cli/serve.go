package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/sim"
)

func simFlags(fs *pflag.FlagSet, cfg *sim.Config) {
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model name listed at /v1/models")
	fs.DurationVar(&cfg.TTFT, "ttft", cfg.TTFT, "time to first token, from arrival")
	fs.DurationVar(&cfg.ITL, "itl", cfg.ITL, "time between tokens")
	fs.IntVar(&cfg.MinLen, "min-output", cfg.MinLen, "shortest natural output (without max_tokens + ignore_eos)")
	fs.IntVar(&cfg.MaxLen, "max-output", cfg.MaxLen, "longest natural output")
	fs.BoolVar(&cfg.CloseAfterStream, "close-after-stream", false, "quirk: close a kept-alive connection when the next request arrives on it after a stream (as llama-server does)")
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	cfg := sim.DefaultConfig
	simFlags(fs, &cfg)
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 8000, "port to listen on (0 picks a free one)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the server to this file")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if cfg.TTFT < 0 || cfg.ITL < 0 {
		fmt.Fprintln(stderr, "aiperf-action serve: --ttft and --itl must not be negative")
		return ExitError
	}
	if cfg.MinLen < 1 || cfg.MaxLen < cfg.MinLen {
		fmt.Fprintln(stderr, "aiperf-action serve: need 1 <= --min-output <= --max-output")
		return ExitError
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action serve: --host/--port: %v\n", err)
		return ExitError
	}
	fmt.Fprintf(stdout, "aiperf-action serve: simulator in exact mode (TTFT %s, ITL %s) on http://%s\n", cfg.TTFT, cfg.ITL, ln.Addr())
	fmt.Fprintln(stdout, "server-side truth per request: GET /sim/truth")
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintf(stderr, "aiperf-action serve: --cpuprofile: %v\n", err)
			return ExitError
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if err := sim.Serve(ctx, ln, sim.New(cfg)); err != nil {
		fmt.Fprintf(stderr, "aiperf-action serve: %v\n", err)
		return ExitError
	}
	return ExitOK
}
