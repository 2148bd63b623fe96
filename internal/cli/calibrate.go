package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/calibrate"
	"github.com/aiperf-action/aiperf-action/internal/report"
)

func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("calibrate", pflag.ContinueOnError)
	f := calibrate.Config{TTFT: 20 * time.Millisecond, ITL: 10 * time.Millisecond, OSL: 128, ISL: 32,
		Steps: "1,64,256,512,1024,2048", MaxConcurrency: 2048, Duration: 10,
		Bounds: calibrate.Bounds{TTFTP50Ms: 1, TTFTP99Ms: 5, ITLP99Ms: 3, MinRate: 97}}
	format, output := "text", ""
	fs.StringVarP(&f.URL, "url", "u", "", "an exact-mode `serve` to use (default: start one)")
	fs.StringVar(&f.Against, "against", "", "a truth server that reports its own timings at /stats (truthmock's shape, docs/calibrate.md): load it and compare with its figures instead of serve's")
	fs.DurationVar(&f.TTFT, "ttft", f.TTFT, "the simulator's time to first token")
	fs.DurationVar(&f.ITL, "itl", f.ITL, "the simulator's inter-token latency")
	fs.IntVar(&f.OSL, "osl", f.OSL, "output tokens per request")
	fs.IntVar(&f.ISL, "isl", f.ISL, "input tokens per request")
	fs.StringVar(&f.Steps, "steps", f.Steps, "concurrency steps; after the last, doubling continues while within bounds, up to --max-concurrency")
	fs.IntVar(&f.MaxConcurrency, "max-concurrency", f.MaxConcurrency, "the last concurrency to try")
	fs.Float64Var(&f.Duration, "duration", f.Duration, "seconds of load per step")
	fs.Float64Var(&f.Ramp, "ramp", 0, "seconds over which the streams start before the measured window (default: one ideal request duration)")
	fs.IntVar(&f.Workers, "workers", 0, "worker processes (default: profile's default for each concurrency)")
	fs.StringVar(&f.EndpointType, "endpoint-type", "chat", "the streaming endpoint type the steps use, in its wire format (chat, completions, responses, messages, ollama_chat, …)")
	fs.StringVar(&f.RequestTemplate, "request-template", "", "the template type's request body template (as profile's)")
	fs.StringVar(&f.ResponseField, "response-field", "", "the template type's response text field path (as profile's)")
	fs.StringVar(&f.Endpoint, "endpoint", "", "the template type's path (as profile's --endpoint)")
	fs.StringVar(&f.Tokenizer, "tokenizer", "", "the profile's tokenizer (a tokenizer.json; needed by a tokens-in type, vllm_generate)")
	fs.StringVar(&format, "format", format, "text | json")
	fs.StringVar(&output, "output", "", "also write the JSON result to this file")
	fs.StringVar(&f.ArtifactDir, "artifact-dir", "", "keep each step's run folder here (default: a temporary folder)")
	fs.Float64Var(&f.Bounds.TTFTP50Ms, "max-ttft-p50-error", f.Bounds.TTFTP50Ms, "bound on measured − true TTFT p50, ms")
	fs.Float64Var(&f.Bounds.TTFTP99Ms, "max-ttft-p99-error", f.Bounds.TTFTP99Ms, "bound on measured − true TTFT p99, ms")
	fs.Float64Var(&f.Bounds.ITLP99Ms, "max-itl-p99-error", f.Bounds.ITLP99Ms, "bound on measured − true ITL p99, ms")
	fs.Float64Var(&f.Bounds.MinRate, "min-rate", f.Bounds.MinRate, "lowest achieved/ideal request rate, percent")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if !fs.Changed("ramp") {
		f.Ramp = (f.TTFT + time.Duration(max(f.OSL-1, 0))*f.ITL).Seconds()
	}
	steps, err := f.Check()
	if format != "text" && format != "json" {
		err = errors.Join(err, fmt.Errorf("--format %q: want text or json", format))
	}
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action calibrate: %v\n", err)
		return ExitError
	}
	cal, err := calibrate.Run(ctx, &f, steps, stderr)
	if cal != nil {
		if output != "" {
			if werr := cal.Save(output); werr != nil {
				fmt.Fprintf(stderr, "aiperf-action calibrate: --output: %v\n", werr)
			}
		}
		if format == "json" {
			b, _ := json.MarshalIndent(cal, "", "  ")
			fmt.Fprintln(stdout, string(b))
		} else {
			report.Calibration(stdout, cal)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action calibrate: %v\n", err)
		if ctx.Err() != nil {
			return ExitInterrupted
		}
		return ExitError
	}
	return ExitOK
}
