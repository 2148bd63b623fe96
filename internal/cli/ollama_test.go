package cli

import (
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// Ollama's native APIs end to end against serve: NDJSON streams through
// both client paths, and whole answers, of ollama_chat and
// ollama_generate, with a thinking model (the first 2 of 8 tokens): TTFT,
// TTFO 2 ITLs later, options.num_predict, the counts of the done line.
func TestOllamaEndpoints(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL, cfg.ReasoningTokens = 12*time.Millisecond, 3*time.Millisecond, 2
	url := serveHandler(t, sim.New(cfg))
	for _, typ := range []string{"ollama_chat", "ollama_generate"} {
		eachEndpointRun(t, typ, url, 6, []string{"-m", "llama3.2", "--endpoint-type", typ,
			"--concurrency", "2", "--request-count", "6", "--isl", "20", "--osl", "8",
			"--extra-inputs", "ignore_eos:true", "--use-server-token-count", "--random-seed", "6"},
			func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record) {
				wantTokens(t, recs, 8, 2, 20, true)
				if er.stream {
					wantFirstTokens(t, run, recs, 12, 2)
				}
			})
	}
}
