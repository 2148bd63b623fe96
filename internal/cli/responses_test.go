package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
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

// The Responses API with AIPerf's media and sessions: synthetic images
// and audio go as input_image and input_audio parts of one user item, and
// a session's later turns carry the earlier ones in "input", each answered
// by the server (its records good).
func TestResponsesMediaAndSessions(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	run := func(args ...string) []string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "out")
		res := runCLI(t, time.Minute, append([]string{"profile", "-m", "m", "-u", url, "--endpoint-type", "responses", "--osl", "3", "--isl", "12",
			"--artifact-dir", dir}, args...)...)
		r, err := result.Read(dir)
		if res.code != 0 || err != nil || r.Counts.Errors != 0 {
			t.Fatalf("%v: exit %d, %v\n%s", args, res.code, err, res.stderr)
		}
		var bodies []string
		for _, s := range sink.take() {
			if strings.HasSuffix(s.path, "/v1/responses") {
				bodies = append(bodies, s.body)
			}
		}
		return bodies
	}
	type part struct {
		Type       string          `json:"type"`
		ImageURL   string          `json:"image_url"`
		InputAudio json.RawMessage `json:"input_audio"`
	}
	for _, media := range [][]string{{"--image-width-mean", "32", "--image-height-mean", "32"}, {"--audio-length-mean", "0.1"}} {
		bodies := run(append(media, "--request-count", "2")...)
		if len(bodies) != 2 {
			t.Fatalf("%v: %d bodies", media, len(bodies))
		}
		var b struct {
			Input []struct {
				Role    string `json:"role"`
				Content []part `json:"content"`
			} `json:"input"`
		}
		if err := json.Unmarshal([]byte(bodies[0]), &b); err != nil || len(b.Input) != 1 || len(b.Input[0].Content) != 2 || b.Input[0].Content[0].Type != "input_text" {
			t.Fatalf("%v: body %.300s: want one user item, its text then its media", media, bodies[0])
		}
		if p := b.Input[0].Content[1]; !(p.Type == "input_image" && strings.HasPrefix(p.ImageURL, "data:image/")) && !(p.Type == "input_audio" && len(p.InputAudio) > 0) {
			t.Fatalf("%v: part %+v", media, p)
		}
	}
	bodies := run("--conversation-num", "1", "--conversation-turn-mean", "2")
	var turns [][]struct{ Role string }
	for _, s := range bodies {
		var b struct {
			Input json.RawMessage `json:"input"`
		}
		json.Unmarshal([]byte(s), &b)
		var items []struct{ Role string }
		json.Unmarshal(b.Input, &items) // (the first turn's input is a plain string)
		turns = append(turns, items)
	}
	if len(turns) != 2 || len(turns[0]) != 0 || len(turns[1]) != 3 || turns[1][1].Role != "assistant" {
		t.Fatalf("turns' input items %+v: want a string, then [user assistant user]", turns)
	}
}
