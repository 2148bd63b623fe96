package cli

import (
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// Anthropic's messages API end to end against serve: AIPerf's name and its
// alias, streamed (through the event loop and net/http) and whole, with
// extended thinking (the first 4 of 12 tokens): the path, the auth headers,
// TTFT, TTFO 4 ITLs later, the server's usage, and no errors.
func TestMessagesEndpoint(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL, cfg.ReasoningTokens = 15*time.Millisecond, 3*time.Millisecond, 4
	s := sim.New(cfg)
	var keyed, unkeyed atomic.Int64
	url := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/messages" {
			if r.Header.Get("x-api-key") == "sk-test" && r.Header.Get("anthropic-version") != "" && r.Header.Get("Authorization") == "" {
				keyed.Add(1)
			} else {
				unkeyed.Add(1)
			}
		}
		s.ServeHTTP(w, r)
	}))
	eachEndpointRun(t, "messages", url, 6, []string{"-m", "claude-sim", "--endpoint-type", "messages", "--api-key", "sk-test",
		"--concurrency", "2", "--request-count", "6", "--isl", "24", "--osl", "12", "--shared-system-prompt-length", "8",
		"--use-server-token-count", "--random-seed", "9"},
		func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record) {
			if run.Target.EndpointType != "messages" {
				t.Errorf("endpoint type %q", run.Target.EndpointType)
			}
			wantTokens(t, recs, 12, 4, 32, true)
			if er.stream {
				wantFirstTokens(t, run, recs, 15, 4)
			}
		})
	// AIPerf's alias is the type itself.
	dir := filepath.Join(t.TempDir(), "alias")
	res := runCLI(t, time.Minute, "profile", "-m", "claude-sim", "-u", url, "--endpoint-type", "anthropic_messages", "--api-key", "sk-test",
		"--request-count", "2", "--isl", "8", "--osl", "4", "--streaming", "--no-server-metrics", "--artifact-dir", dir)
	if run, err := result.Read(dir); res.code != 0 || err != nil || run.Target.EndpointType != "messages" || run.Counts.OK != 2 {
		t.Errorf("anthropic_messages: exit %d, %v\n%s", res.code, err, res.stderr)
	}
	// (serve answers a kept-alive connection's later requests itself, past
	// this wrapper: it sees every whole request and each connection's first.)
	if keyed.Load() < 6+2+1 || unkeyed.Load() != 0 {
		t.Errorf("%d requests with Anthropic's headers, %d without", keyed.Load(), unkeyed.Load())
	}
}
