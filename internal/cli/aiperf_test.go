package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// AIPerf's command-line forms: a positional model, no -m (the server's
// first model), several values after one list flag, and AIPerf's other
// names for flags, all land in the requests as AIPerf would send them.
func TestAIPerfCommandLineForms(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	type body struct {
		Model       string  `json:"model"`
		Temperature float64 `json:"temperature"`
		TopP        float64 `json:"top_p"`
		MaxTokens   int     `json:"max_tokens"`
	}
	run := func(args ...string) (*result.Run, []body) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "out")
		res := runCLI(t, time.Minute, append(append([]string{"profile"}, args...), "--artifact-dir", dir, "--random-seed", "3")...)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), res.code, res.stderr)
		}
		r, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []body
		for _, s := range sink.take() {
			if strings.HasSuffix(s.path, "/completions") {
				var b body
				json.Unmarshal([]byte(s.body), &b)
				out = append(out, b)
			}
		}
		return r, out
	}

	// `aiperf profile MODEL --url … --extra-inputs a:1 b:2`, and AIPerf's
	// aliases of the request count, ISL and OSL.
	r, bodies := run("my-model", "--url", url, "--extra-inputs", "temperature:0.5", "top_p:0.25", "--num-requests", "5",
		"--prompt-input-tokens-mean", "40", "--isl-stddev", "0", "--osl", "7", "--osl-stddev", "0")
	if r.Counts.OK != 5 || len(bodies) != 5 {
		t.Fatalf("%d ok, %d bodies, want 5", r.Counts.OK, len(bodies))
	}
	for _, b := range bodies {
		if b.Model != "my-model" || b.Temperature != 0.5 || b.TopP != 0.25 || b.MaxTokens != 7 {
			t.Fatalf("body %+v: want model my-model, temperature 0.5, top_p 0.25, max tokens 7", b)
		}
	}
	if r.Metrics["input_sequence_length"].Dist.Avg != 40 {
		t.Errorf("ISL %v, want 40 (--prompt-input-tokens-mean)", r.Metrics["input_sequence_length"].Dist.Avg)
	}

	// No model anywhere: the one the server lists.
	_, bodies = run("-u", url, "--request-count", "2")
	if len(bodies) != 2 || bodies[0].Model != sim.DefaultConfig.Model {
		t.Fatalf("discovered model: %+v, want %s", bodies, sim.DefaultConfig.Model)
	}

	// Several models, AIPerf's way: round_robin (request i names model
	// i mod n, as -m a b and --model-names a,b give them), or random
	// (seeded: the same draws again with the same seed), in run.json.
	models := func(bodies []body) string {
		var ms []string
		for _, b := range bodies {
			ms = append(ms, b.Model)
		}
		return strings.Join(ms, " ")
	}
	for _, args := range [][]string{{"-m", "a", "b", "c"}, {"--model-names", "a,b,c"}, {"-m", "a", "b", "c", "--model-selection-strategy", "round_robin"}} {
		r, bodies := run(append(args, "-u", url, "--request-count", "7", "--concurrency", "1")...)
		if got := models(bodies); got != "a b c a b c a" || !slices.Equal(r.Target.Models, []string{"a", "b", "c"}) || r.Target.Selection != "round_robin" {
			t.Errorf("%v: models %q, run.json %v %q", args, got, r.Target.Models, r.Target.Selection)
		}
	}
	random := func() string {
		_, bodies := run("-m", "a", "b", "-u", url, "--request-count", "40", "--concurrency", "1", "--model-selection-strategy", "random")
		return models(bodies)
	}
	first := random()
	if n := strings.Count(first, "a"); n < 8 || n > 32 || first != random() {
		t.Errorf("random: %q (%d of 40 a), then %q", first, n, random())
	}

	// What several models cannot do is refused by name.
	for args, want := range map[string]string{
		"-m a b --model-selection-strategy fastest": "--model-selection-strategy \"fastest\": want round_robin or random",
		"-m a a":                        "model a given twice",
		"-m a b --endpoint-type kserve": "its URL names the model",
		"a b":                           "unexpected argument",
	} {
		res := runCLI(t, 30*time.Second, append(append([]string{"profile"}, strings.Fields(args)...), "-u", url)...)
		if res.code != ExitError || !strings.Contains(res.stderr, want) {
			t.Errorf("%v: exit %d\n%s", args, res.code, res.stderr)
		}
	}
}

// --no-fixed-schedule sends a trace's lengths at --concurrency instead of
// on its timestamps, as AIPerf's does.
func TestNoFixedSchedule(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--input-file", "testdata/traces/mooncake.jsonl",
		"--custom-dataset-type", "mooncake_trace", "--isl-block-size", "32", "--no-fixed-schedule", "--concurrency", "2",
		"--request-count", "4", "--random-seed", "1", "--output-artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	r, err := result.Read(dir)
	if err != nil || r.Load.FixedSchedule || r.Load.Concurrency != 2 || r.Counts.OK != 4 {
		t.Fatalf("%v: fixed schedule %v, concurrency %d, %d ok: want a closed loop of 2", err, r.Load.FixedSchedule, r.Load.Concurrency, r.Counts.OK)
	}
	// The trace's lengths are still its own (80, 96, 64 … tokens).
	if isl := r.Metrics["input_sequence_length"].Dist; isl.Min < 64 || isl.Max > 128 {
		t.Errorf("ISL %v..%v: not the trace's", isl.Min, isl.Max)
	}
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--input-file", "testdata/traces/mooncake.jsonl",
		"--custom-dataset-type", "mooncake_trace", "--fixed-schedule", "--no-fixed-schedule")
	if res.code != ExitError || !strings.Contains(res.stderr, "--fixed-schedule and --no-fixed-schedule") {
		t.Fatalf("both: exit %d\n%s", res.code, res.stderr)
	}
}

// --system-prompt-file's text is the system message of every request, its
// tokens counted in each request's ISL, as AIPerf sends it; an endpoint
// with no system message refuses it.
func TestSystemPrompt(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	file := filepath.Join(t.TempDir(), "prod_system.txt")
	const text = "You are a terse assistant. Answer in one sentence."
	if err := os.WriteFile(file, []byte(text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	res := runCLI(t, time.Minute, "profile", "-m", "m", "-u", url, "--system-prompt-file", file, "--isl", "30", "--isl-stddev", "0",
		"--osl", "3", "--request-count", "3", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	r, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := tokenizer.Builtin().Count(text)
	if got := r.Metrics["input_sequence_length"].Dist.Avg; got != float64(30+n) {
		t.Errorf("ISL %v, want 30 + the system prompt's %d", got, n)
	}
	bodies := 0
	for _, s := range sink.take() {
		if !strings.HasSuffix(s.path, "/chat/completions") {
			continue
		}
		var b struct {
			Messages []struct{ Role, Content string }
		}
		json.Unmarshal([]byte(s.body), &b)
		if len(b.Messages) != 2 || b.Messages[0].Role != "system" || b.Messages[0].Content != text {
			t.Fatalf("messages %+v: want the system prompt first", b.Messages)
		}
		bodies++
	}
	if bodies != 3 {
		t.Fatalf("%d chat bodies, want 3", bodies)
	}
	res = runCLI(t, 30*time.Second, "profile", "-m", "m", "-u", url, "--endpoint-type", "completions", "--system-prompt", "x")
	if res.code != ExitError || !strings.Contains(res.stderr, "--system-prompt: --endpoint-type completions sends no system message") {
		t.Fatalf("completions: exit %d\n%s", res.code, res.stderr)
	}
}

// --prefill-concurrency-ramp-duration: the prefill limit rises from 1 to
// --prefill-concurrency, one slot more at even steps, across both workers'
// shares. Before the second slot opens (ramp/(limit−1) = 0.3 s) no two
// requests are in prefill at once; the control without the ramp has all 4
// there at the start (the simulator's TTFT, 300 ms, holds them).
func TestPrefillConcurrencyRamp(t *testing.T) {
	_, url := startSim(t, 300*time.Millisecond, time.Millisecond)
	run := func(extra ...string) []record.Record {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "out")
		args := append([]string{"profile", "-m", "m", "-u", url, "--streaming", "--concurrency", "8", "--prefill-concurrency", "4",
			"--request-count", "8", "--osl", "2", "--workers", "2", "--artifact-dir", dir}, extra...)
		if res := runCLI(t, time.Minute, args...); res.code != 0 {
			t.Fatalf("exit %d\n%s", res.code, res.stderr)
		}
		return readRecords(t, dir)
	}
	// inPrefill is the most requests between their send and first token at
	// one time, among those sent before `before` (ns from the start).
	inPrefill := func(recs []record.Record, before int64) int {
		most := 0
		for _, a := range recs {
			if a.Sent >= before {
				continue
			}
			n := 0
			for _, b := range recs {
				if b.Sent <= a.Sent && a.Sent < b.FirstToken {
					n++
				}
			}
			most = max(most, n)
		}
		return most
	}
	all := int64(time.Hour)
	ramped := run("--prefill-concurrency-ramp-duration", "0.9")
	if n := inPrefill(ramped, int64(300*time.Millisecond)); n != 1 {
		t.Errorf("ramped: %d requests in prefill at once before the second slot opens, want 1", n)
	}
	if n := inPrefill(ramped, all); n > 4 {
		t.Errorf("ramped: %d in prefill at once, more than --prefill-concurrency 4", n)
	}
	if n := inPrefill(run(), int64(100*time.Millisecond)); n != 4 {
		t.Errorf("control: %d in prefill at once at the start, want 4", n)
	}
}
