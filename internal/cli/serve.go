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

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	cfg := sim.DefaultConfig
	var o sim.Options
	o.Bind(fs, &cfg)
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 8000, "port to listen on (0 picks a free one)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the server to this file")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if err := o.Finish(&cfg); err != nil {
		fmt.Fprintf(stderr, "aiperf-action serve: %v\n", err)
		return ExitError
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action serve: --host/--port: %v\n", err)
		return ExitError
	}
	fmt.Fprintf(stdout, "aiperf-action serve: simulator in %s on http://%s\n", o.Describe(cfg), ln.Addr())
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
