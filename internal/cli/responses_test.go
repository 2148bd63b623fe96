package cli

import (
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// OpenAI's Responses API end to end against serve: streamed through both
// client paths and whole, with reasoning (the first 3 of 10 tokens, in
// response.reasoning_text.delta), a base URL ending in /v1: TTFT, TTFO 3
// ITLs later, the usage of response.completed (not its repeated output).
func TestResponsesEndpoint(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL, cfg.ReasoningTokens = 15*time.Millisecond, 3*time.Millisecond, 3
	url := serveHandler(t, sim.New(cfg))
	eachEndpointRun(t, "responses", url+"/v1", 6, []string{"-m", "gpt-sim", "--endpoint-type", "responses",
		"--concurrency", "2", "--request-count", "6", "--isl", "20", "--osl", "10", "--shared-system-prompt-length", "4",
		"--extra-inputs", "ignore_eos:true", "--use-server-token-count", "--random-seed", "4"},
		func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record) {
			wantTokens(t, recs, 10, 3, 24, true)
			if er.stream {
				wantFirstTokens(t, run, recs, 15, 3)
			}
		})
}
