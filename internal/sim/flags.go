package sim

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
)

// Options are serve's flags beyond Config's plain fields.
type Options struct {
	preset              string
	noPrefixCaching     bool
	maxSeqs, maxTokens  int
	kvBlocks            int
	stepJitter, speed   float64
	feLatency, feSerial time.Duration
	seed                uint64
}

// Bind binds serve's flags to cfg and o.
func (o *Options) Bind(fs *pflag.FlagSet, cfg *Config) {
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
	fs.Float64Var(&o.speed, "speed", 1, "engine mode: every step's time and the front end's, times this (1.1: a build 10% slower)")
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

// Finish checks the flags and builds the engine config; errors name the
// flag.
func (o *Options) Finish(cfg *Config) error {
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
	if o.speed < 0.1 || o.speed > 10 {
		return fmt.Errorf("--speed %g: want 0.1 to 10", o.speed)
	}
	ec.Speed = o.speed
	ec.PrefixCaching = ec.PrefixCaching && !o.noPrefixCaching
	ec.Seed = o.seed
	if err := ec.Check(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	cfg.Engine = ec
	return nil
}

// Describe is one line saying what the simulator does.
func (o *Options) Describe(cfg Config) string {
	if cfg.Mode == "engine" {
		e := cfg.Engine
		return fmt.Sprintf("engine mode (preset %s: max-num-seqs %d, max-num-batched-tokens %d, KV cache %d tokens, prefix caching %v)",
			o.preset, e.MaxNumSeqs, e.MaxBatchedTokens, e.KVBlocks*e.BlockSize, e.PrefixCaching)
	}
	return fmt.Sprintf("exact mode (TTFT %s, ITL %s)", cfg.TTFT, cfg.ITL)
}
