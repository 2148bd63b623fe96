package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// A dag_jsonl file's linear conversations are replayed as multi_turn
// ones (a system message first is the system prompt; max_tokens, delay
// and extra kept); authored messages are kept as written; what AIPerf's
// schema refuses, or this tool does not send, is refused with the line
// and why.
func TestDagJSONL(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // (read afresh: no layout an earlier build left in the temp folder)
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "d.jsonl")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := write(`{"session_id": "a", "turns": [{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "First?"}], "max_tokens": 7}, {"messages": [{"role": "user", "content": [{"type": "text", "text": "Second"}, {"type": "text", "text": "!"}]}], "delay": 25, "extra": {"top_k": 3}, "forks": []}]}
{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "Only one."}], "model": "m"}], "context_mode": "deltas_without_responses"}
`)
	x, err := indexDag(p, nil, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Lines) != 2 || len(x.Turns) != 3 || !x.Lines[0].HasSystem || x.Turns[0].MaxTokens != 7 || x.Turns[1].DelayMs != 25 || x.Digest == "" {
		t.Fatalf("%+v %+v", x.Lines, x.Turns)
	}
	f, _ := os.Open(x.Path)
	defer f.Close()
	text, system, extra, err := x.Turn(0, 1, f)
	if err != nil || text != "Second!" || system != "Be brief." || string(extra["top_k"]) != "3" {
		t.Errorf("turn 2: %q %q %v %v", text, system, extra, err)
	}
	// Authored messages (media, a tool call and its result) are kept as
	// written, their text counted: the content's and the call's name and
	// arguments; "tools" goes into the body as extra does.
	p = write(`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "u"}}]}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "zoom", "arguments": "{\"x\":1}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "42"}], "tools": [{"type": "function"}]}]}
`)
	if x, err = indexDag(p, nil, "m"); err != nil {
		t.Fatal(err)
	}
	g, _ := os.Open(x.Path)
	defer g.Close()
	_, raw, _, _, err := x.DagTurnText(0, 0, g)
	_, _, extra, _ = x.Turn(0, 0, g)
	if want := int32(tokenizer.Count("look\nzoom {\"x\":1}\n42")); err != nil || len(raw) != 3 || x.Turns[0].ISL != want || string(extra["tools"]) != `[{"type":"function"}]` ||
		!strings.Contains(string(raw[1]), `"tool_calls":[{"id":"c1"`) {
		t.Errorf("an authored turn: %d messages %q, ISL %d, extra %v (%v)", len(raw), raw, x.Turns[0].ISL, extra, err)
	}
	for body, want := range map[string]string{
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "forks": ["b"]}]}`:                                                                                                   `session a turn 1: branch target "b" is not a session of the file`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "spawns": [{"children": ["b"], "join_at": 1}]}]}`:                                                                    `"join_at" 1: want a later turn`,
		`{"session_id": "o", "turns": [{"messages": []}], "orchestrator": true, "spawns": ["a"]}`:                                                                                                            `an orchestrator sends no request of its own`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "temperature": 0}]}`:                                                                                                 `unknown key "temperature"`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "model": "other"}]}`:                                                                                                 `a turn's own model`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "max_tokens": true}]}`:                                                                                               `"max_tokens" true`,
		"{\"session_id\": \"a\", \"turns\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]}\n{\"session_id\": \"a\", \"turns\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]}": `session_id "a" again`,
	} {
		if _, err := indexDag(write(body), nil, "m"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "d.jsonl:") {
			t.Errorf("%s: %v, want %q with the line", body, err, want)
		}
	}
}

// A tree's layout: each root and what its branches reach is one session,
// parents first; each branch's first turn waits for its parent's turn (a
// FORK child inherits its history), a join waits for its children's last
// turns, a SPAWN target named twice is two instances, pre-session spawns
// and an orchestrator's first round wait for nothing, and a later round
// waits for every branch of the one before, its think time the delay. The
// checks AIPerf's loader makes are refused with the line.
func TestDagTrees(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // (read afresh: no layout an earlier build left in the temp folder)
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "tree.jsonl")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	u := func(s string) string { return `{"messages": [{"role": "user", "content": "` + s + `"}]` }
	p := write(`{"session_id": "r", "turns": [{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "r0"}], "spawns": ["w"]}, ` + u("r1") + `, "spawns": [{"children": ["w"], "join_at": 2}]}, ` + u("r2") + `, "forks": ["f"]}], "pre_session_spawns": ["p"]}
{"session_id": "w", "turns": [{"messages": [{"role": "system", "content": "W"}, {"role": "user", "content": "w0"}]}]}
{"session_id": "f", "turns": [{"messages": [{"role": "user", "content": "fa"}, {"role": "user", "content": "fb"}]}]}
{"session_id": "p", "turns": [` + u("p0") + `}]}
{"session_id": "o", "orchestrator": true, "rounds": [{"spawns": ["a", "b"]}, {"spawns": ["a"], "think_time_ms": 40}], "think_time_sigma": 0.5, "think_time_max_ms": 90}
{"session_id": "a", "turns": [` + u("a0") + `}, ` + u("a1") + `}]}
{"session_id": "b", "turns": [` + u("b0") + `}]}
`)
	x, err := indexDag(p, nil, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Lines) != 2 || x.Lines[0].Count != 7 || x.Lines[1].Count != 5 || !x.Lines[0].HasSystem || x.Lines[1].HasSystem || len(x.Dag) != 12 {
		t.Fatalf("lines %+v, %d dag turns", x.Lines, len(x.Dag))
	}
	f, _ := os.Open(x.Path)
	defer f.Close()
	type want struct {
		text, before, system string
		own                  bool
		conv                 int32
		wait                 []int32
		fork                 int32
	}
	for j, turns := range [][]want{{
		// r's tree: p (pre-session) first, then r0 r1 r2, w twice (r0's
		// bare spawn joins r1, r1's spawn joins r2), f (r2's fork).
		{"p0", "", "", true, 1, nil, 0},
		{"r0", "", "S", false, 0, nil, 0},
		{"r1", "", "S", false, 0, []int32{4}, 0},
		{"r2", "", "S", false, 0, []int32{5}, 0},
		{"w0", "", "W", true, 2, []int32{1}, 0},
		{"w0", "", "W", true, 3, []int32{2}, 0},
		{"fb", "fa", "S", false, 4, []int32{3}, 4},
	}, {
		{"a0", "", "", false, 1, nil, 0},
		{"a1", "", "", false, 1, nil, 0},
		{"b0", "", "", false, 2, nil, 0},
		{"a0", "", "", false, 3, []int32{1, 2}, 0},
		{"a1", "", "", false, 3, nil, 0},
	}} {
		for k, w := range turns {
			text, system, _, err := x.Turn(j, k, f)
			bs, _, osys, own, derr := x.DagTurnText(j, k, f)
			if own {
				system = osys
			}
			before := strings.Join(bs, ",")
			err = errors.Join(err, derr)
			d := x.Dag[int(x.Lines[j].First)+k]
			if err != nil || text != w.text || before != w.before || system != w.system || own != w.own || d.Conv != w.conv || !slices.Equal(d.Wait, w.wait) || d.Fork != w.fork {
				t.Errorf("tree %d place %d: %q before %q system %q (own %v) conv %d wait %v fork %d (%v); want %+v", j, k, text, before, system, own, d.Conv, d.Wait, d.Fork, err, w)
			}
		}
	}
	// The second round's think time: a lognormal around 40 ms, at most 90.
	if d, tm := x.Dag[int(x.Lines[1].First)+3], x.Turns[int(x.Lines[1].First)+3]; tm.DelayMs != 40 || d.ThinkSigma != 0.5 || d.ThinkMaxMs != 90 {
		t.Errorf("round 2: delay %v, think %+v", tm.DelayMs, d)
	}
	// Two user messages count as the turn's tokens together.
	if fa, fb := x.Turns[int(x.Lines[0].First)+6].ISL, int32(tokenizer.Count("fa")+tokenizer.Count("fb")); fa != fb {
		t.Errorf("a turn of two user messages: ISL %d, want %d", fa, fb)
	}

	for body, want := range map[string]string{
		`{"session_id": "r", "turns": [` + u("x") + `, "forks": ["c"]}, ` + u("y") + `}]}` + "\n" + `{"session_id": "c", "turns": [` + u("z") + `}]}`:                                                           `line 1: session r turn 1: a bare fork ends the conversation`,
		`{"session_id": "r", "turns": [` + u("x") + `, "forks": ["c"]}]}` + "\n" + `{"session_id": "q", "turns": [` + u("x") + `, "forks": ["c"]}]}` + "\n" + `{"session_id": "c", "turns": [` + u("z") + `}]}`: `"c" is forked from more than one place`,
		`{"session_id": "r", "turns": [` + u("x") + `, "forks": ["c"]}]}` + "\n" + `{"session_id": "c", "turns": [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "z"}]}]}`:       `line 2: session c: FORK child "c" has a system message`,
		`{"session_id": "r", "turns": [` + u("x") + `, "forks": ["c"]}], "pre_session_spawns": ["c"]}` + "\n" + `{"session_id": "c", "turns": [` + u("z") + `}]}`:                                               `in pre_session_spawns and also a FORK target`,
		`{"session_id": "r", "turns": [` + u("x") + `, "spawns": [{"children": ["c"], "join_at": 5}]}, ` + u("y") + `}]}` + "\n" + `{"session_id": "c", "turns": [` + u("z") + `}]}`:                            `"join_at" 5: want a later turn of the conversation (1 to 1`,
		`{"session_id": "r", "turns": [` + u("x") + `, "spawns": ["nope"]}]}`:                                                                                                                                   `branch target "nope" is not a session of the file`,
		`{"session_id": "r", "turns": [` + u("x") + `}, {"messages": [{"role": "system", "content": "late"}, {"role": "user", "content": "y"}]}]}`:                                                              `a system message goes first in a conversation's first turn`,
		`{"session_id": "r", "turns": [` + u("x") + `, "spawns": ["c", {"children": ["c"], "join_at": 1}]}, ` + u("y") + `}]}` + "\n" + `{"session_id": "c", "turns": [` + u("z") + `}]}`:                       `"c" twice in "spawns"`,
		`{"session_id": "r", "turns": [` + u("x") + `, "forks": ["c"]}]}` + "\n" + `{"session_id": "c", "context_mode": "message_array_with_responses", "turns": [` + u("z") + `}]}`:                            `FORK child "c" is message_array_with_responses`,
		`{"session_id": "r", "context_mode": "message_array_with_responses", "turns": [{"messages": [{"role": "user", "content": "x"}, {"role": "system", "content": "late"}]}]}`:                               `a system message goes first in a message_array_with_responses turn`,
		`{"session_id": "o", "orchestrator": true, "rounds": 2}`:                                                                                                                                                                   `an orchestrator needs "spawns"`,
		`{"session_id": "r", "turns": [` + u("x") + `, "spawns": ["o"]}]}` + "\n" + `{"session_id": "o", "orchestrator": true, "spawns": ["r"]}`:                                                                                   `"o" is an orchestrator`,
		`{"session_id": "r", "turns": [` + u("x") + `, "spawns": ["c"]}]}` + "\n" + `{"session_id": "c", "turns": [` + u("z") + `, "spawns": ["d"]}]}` + "\n" + `{"session_id": "d", "turns": [` + u("z") + `, "spawns": ["c"]}]}`: `a cycle of branches: r -> c -> d -> c`,
	} {
		if _, err := indexDag(write(body), nil, "m"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "tree.jsonl") {
			t.Errorf("%s:\n%v\nwant %q with the file", body, err, want)
		}
	}
}
