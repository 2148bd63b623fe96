package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/sim"
	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
)

// simOptions are serve's flags beyond sim.Config's plain fields.
type simOptions struct {
	preset              string
	noPrefixCaching     bool
	maxSeqs, maxTokens  int
	kvBlocks            int
	stepJitter          float64
	feLatency, feSerial time.Duration
	seed                uint64
}

func simFlags(fs *pflag.FlagSet, cfg *sim.Config, o *simOptions) {
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model name listed at /v1/models")
	fs.StringVar(&cfg.Mode, "mode", "exact", "exact (every token at TTFT + k·ITL) or engine (a continuous-batching engine model: prefill competes with decode, the batch and the KV cache fill)")
	fs.DurationVar(&cfg.TTFT, "ttft", cfg.TTFT, "exact mode: time to first token, from arrival")
	fs.DurationVar(&cfg.ITL, "itl", cfg.ITL, "exact mode: time between tokens")
	fs.IntVar(&cfg.MinLen, "min-output", cfg.MinLen, "shortest natural output (without max_tokens + ignore_eos)")
	fs.IntVar(&cfg.MaxLen, "max-output", cfg.MaxLen, "longest natural output")
	fs.IntVar(&cfg.ReasoningTokens, "reasoning-tokens", 0, "chat: the first N tokens of every answer are reasoning (reasoning_content, as vLLM's reasoning parsers and DeepSeek send it), the rest the answer")
	fs.BoolVar(&cfg.CloseAfterStream, "close-after-stream", false, "quirk: close a kept-alive connection when the next request arrives on it after a stream (as llama-server does)")
	fs.StringVar(&o.preset, "preset", engine.DefaultPreset, "engine mode: the engine preset (its speeds, batch, KV cache and front end, fitted to published figures): "+strings.Join(engine.PresetNames(), ", "))
	fs.IntVar(&o.maxSeqs, "max-num-seqs", 0, "engine mode: sequences in the running batch, at most (default: the preset's)")
	fs.IntVar(&o.maxTokens, "max-num-batched-tokens", 0, "engine mode: tokens a step processes, at most (chunked prefill; default: the preset's)")
	fs.IntVar(&o.kvBlocks, "kv-blocks", 0, "engine mode: KV cache blocks of 16 tokens (default: the preset's)")
	fs.DurationVar(&o.feLatency, "frontend-latency", -1, "engine mode: the API server's time from a request's arrival to the engine's queue, beside the engine (default: the preset's)")
	fs.DurationVar(&o.feSerial, "frontend-serial", -1, "engine mode: the API server's one-at-a-time share of each request, so a burst queues there (default: the preset's)")
	fs.BoolVar(&o.noPrefixCaching, "no-prefix-caching", false, "engine mode: turn the prefix cache off")
	fs.Float64Var(&o.stepJitter, "step-jitter", -1, "engine mode: relative noise of each step's time (default: the preset's)")
	fs.Float64Var(&cfg.SpeedJitter, "speed-jitter", 0, "relative spread of a per-process speed factor drawn from --seed (0.03 = 3%): all of this process's runs share one slowdown")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the engine's jitter, the speed factor and the faults")
	fs.Float64Var(&cfg.Faults.ErrorRate, "error-rate", 0, "fault: fraction of requests answered 500")
	fs.Float64Var(&cfg.Faults.RateLimitRate, "rate-limit-rate", 0, "fault: fraction of requests answered 429 with Retry-After")
	fs.Float64Var(&cfg.Faults.DisconnectRate, "disconnect-rate", 0, "fault: fraction of streams whose connection is reset halfway through")
	fs.Float64Var(&cfg.Faults.StallRate, "stall-rate", 0, "fault: fraction of streams that pause for --stall halfway through")
	fs.DurationVar(&cfg.Faults.Stall, "stall", 0, "fault: how long a stalled stream pauses")
	fs.Float64Var(&cfg.Faults.MalformedRate, "malformed-rate", 0, "fault: fraction of streams with one broken chunk halfway through")
}

// finish checks the flags and builds the engine config; errors name the flag.
func (o *simOptions) finish(cfg *sim.Config) error {
	if cfg.TTFT < 0 || cfg.ITL < 0 {
		return errors.New("--ttft and --itl must not be negative")
	}
	if cfg.MinLen < 1 || cfg.MaxLen < cfg.MinLen {
		return errors.New("need 1 <= --min-output <= --max-output")
	}
	if err := cfg.Faults.Check(); err != nil {
		return err
	}
	if cfg.SpeedJitter < 0 || cfg.SpeedJitter > 1 {
		return fmt.Errorf("--speed-jitter %g: want 0 to 1", cfg.SpeedJitter)
	}
	cfg.Faults.Seed, cfg.SpeedSeed = o.seed, o.seed
	switch cfg.Mode {
	case "exact":
		return nil
	case "engine":
	default:
		return fmt.Errorf("--mode %q: want exact or engine", cfg.Mode)
	}
	p, err := engine.PresetNamed(o.preset)
	if err != nil {
		return fmt.Errorf("--preset: %w", err)
	}
	ec := p.Config
	for _, f := range []struct {
		v   int
		dst *int
	}{{o.maxSeqs, &ec.MaxNumSeqs}, {o.maxTokens, &ec.MaxBatchedTokens}, {o.kvBlocks, &ec.KVBlocks}} {
		if f.v != 0 {
			*f.dst = f.v
		}
	}
	if o.stepJitter >= 0 {
		ec.Jitter = o.stepJitter
	}
	if o.feLatency >= 0 {
		ec.FrontendNs = float64(o.feLatency)
	}
	if o.feSerial >= 0 {
		ec.FrontendSerialNs = float64(o.feSerial)
	}
	ec.PrefixCaching = ec.PrefixCaching && !o.noPrefixCaching
	ec.Seed = o.seed
	if err := ec.Check(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	cfg.Engine = ec
	return nil
}

// describe is one line saying what the simulator does.
func describe(cfg sim.Config, preset string) string {
	if cfg.Mode == "engine" {
		e := cfg.Engine
		return fmt.Sprintf("engine mode (preset %s: max-num-seqs %d, max-num-batched-tokens %d, KV cache %d tokens, prefix caching %v)",
			preset, e.MaxNumSeqs, e.MaxBatchedTokens, e.KVBlocks*e.BlockSize, e.PrefixCaching)
	}
	return fmt.Sprintf("exact mode (TTFT %s, ITL %s)", cfg.TTFT, cfg.ITL)
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	cfg := sim.DefaultConfig
	var o simOptions
	simFlags(fs, &cfg, &o)
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 8000, "port to listen on (0 picks a free one)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the server to this file")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if err := o.finish(&cfg); err != nil {
		fmt.Fprintf(stderr, "aiperf-action serve: %v\n", err)
		return ExitError
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action serve: --host/--port: %v\n", err)
		return ExitError
	}
	fmt.Fprintf(stdout, "aiperf-action serve: simulator in %s on http://%s\n", describe(cfg, o.preset), ln.Addr())
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
