package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// A multi_turn file's conversations over the Messages API, as AIPerf's
// docs run them: each later turn carries the earlier turns' user messages
// and the server's answers before its own, the system prompt staying in
// the top-level field. (Not streamed: the simulator takes a streaming
// connection over from net/http, so captureBodies sees only its first
// request.)
func TestMessagesMultiTurn(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	file := filepath.Join(t.TempDir(), "conversations.jsonl")
	os.WriteFile(file, []byte(`{"session_id": "s1", "turns": [{"text": "What is Rust?"}, {"text": "Compare it to C++."}]}
`), 0o644)
	dir := filepath.Join(t.TempDir(), "out")
	res := runCLI(t, time.Minute, "profile", "-m", "claude", "-u", url, "--endpoint-type", "messages", "--input-file", file,
		"--custom-dataset-type", "multi_turn", "--osl", "4", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	var turns [][]struct{ Role string }
	for _, s := range sink.take() {
		if strings.HasSuffix(s.path, "/v1/messages") {
			var b struct{ Messages []struct{ Role string } }
			json.Unmarshal([]byte(s.body), &b)
			turns = append(turns, b.Messages)
		}
	}
	if r, err := result.Read(dir); err != nil || r.Counts.OK != 2 {
		t.Fatalf("%v: %+v, want 2 ok\n%s", err, r.Counts, res.stderr)
	}
	if len(turns) != 2 || len(turns[0]) != 1 || len(turns[1]) != 3 || turns[1][0].Role != "user" || turns[1][1].Role != "assistant" || turns[1][2].Role != "user" {
		t.Fatalf("turns' messages %+v: want [user] then [user assistant user]", turns)
	}
}
