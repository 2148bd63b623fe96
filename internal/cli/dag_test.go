package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// AIPerf's dag_jsonl: a file of linear conversations runs as sessions
// (each turn after its answer, the history threaded); one that branches
// is refused before any load, naming its line.
func TestDagJSONLSessions(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // (read afresh: no layout an earlier build left in the temp folder)
	_, url := startSim(t, time.Millisecond, 200*time.Microsecond)
	in := filepath.Join(t.TempDir(), "agent.jsonl")
	os.WriteFile(in, []byte(`{"session_id": "s1", "turns": [{"messages": [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Plan the change."}], "max_tokens": 8}, {"messages": [{"role": "user", "content": "Now write it."}], "delay": 20}]}
{"session_id": "s2", "turns": [{"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4}]}
`), 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--streaming", "--input-file", in,
		"--custom-dataset-type", "dag_jsonl", "--concurrency", "2", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	r, err := result.Read(dir)
	if err != nil || r.Counts.OK != 3 {
		t.Fatalf("%v, %+v", err, r.Counts)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "inputs.json"))
	for _, w := range []string{"You are a coding agent.", "Plan the change.", "Now write it.", "Hello"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("inputs.json lacks %q", w)
		}
	}
	// A cycle is refused before any load, naming the file.
	os.WriteFile(in, []byte(`{"session_id": "s1", "turns": [{"messages": [{"role": "user", "content": "x"}], "spawns": ["s2"]}]}
{"session_id": "s2", "turns": [{"messages": [{"role": "user", "content": "y"}], "spawns": ["s1"]}]}
`), 0o644)
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--input-file", in, "--custom-dataset-type", "dag_jsonl")
	if res.code != ExitError || !strings.Contains(res.stderr, "agent.jsonl") || !strings.Contains(res.stderr, "no root (a cycle)") {
		t.Errorf("a cycle: exit %d\n%s", res.code, res.stderr)
	}
}

// AIPerf's DAG branches, end to end against the simulator: a background
// FORK (the child starts after the parent's turn with its history, the
// parent goes on), a SPAWN joined two turns later (the child fresh, with
// its own system prompt; the parent's next turn runs beside it and the
// join waits for its last answer), terminal FORKs of the whole history,
// a turn of two user messages, a turn of authored messages (an image, a
// tool call and its result, sent as written, with its tools), and an
// orchestrator of two rounds with a think time between. Each tree is one
// session: 12 and 2 requests, the default conversation count being the
// roots'.
func TestDagJSONLBranches(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // (read afresh: no layout an earlier build left in the temp folder)
	s, _ := startSim(t, 5*time.Millisecond, 200*time.Microsecond)
	url, sink := captureBodies(t, s)
	in := filepath.Join(t.TempDir(), "tree.jsonl")
	os.WriteFile(in, []byte(`{"session_id": "r", "turns": [{"messages": [{"role": "system", "content": "SYS"}, {"role": "user", "content": "r0"}], "max_tokens": 4, "forks": [{"child": "f", "background": true}]}, {"messages": [{"role": "user", "content": "r1"}], "max_tokens": 4, "spawns": [{"children": ["s"], "join_at": 3}]}, {"messages": [{"role": "user", "content": "r2"}], "max_tokens": 4}, {"messages": [{"role": "user", "content": "r3"}], "max_tokens": 4}, {"messages": [{"role": "user", "content": "r4"}], "max_tokens": 4, "forks": ["t1", "t2"]}]}
{"session_id": "f", "turns": [{"messages": [{"role": "user", "content": "fa"}, {"role": "user", "content": "fb"}], "max_tokens": 4}, {"messages": [{"role": "user", "content": "f1"}], "max_tokens": 4}]}
{"session_id": "s", "turns": [{"messages": [{"role": "system", "content": "SSYS"}, {"role": "user", "content": "s0"}], "max_tokens": 4, "delay": 300}, {"messages": [{"role": "user", "content": "s1"}], "max_tokens": 4}]}
{"session_id": "t1", "turns": [{"messages": [{"role": "user", "content": "t1"}], "max_tokens": 4}]}
{"session_id": "t2", "turns": [{"messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "zoom", "arguments": "{\"x\":1}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "t2"}], "tools": [{"type": "function", "function": {"name": "zoom"}}], "max_tokens": 4}, {"messages": [{"role": "user", "content": "t2b"}], "max_tokens": 4}]}
{"session_id": "o", "orchestrator": true, "rounds": 2, "think_time_ms": 200, "spawns": ["q"]}
{"session_id": "q", "turns": [{"messages": [{"role": "user", "content": "q0"}], "max_tokens": 4}]}
`), 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	// (Not streamed: the simulator takes a streamed connection over from
	// net/http, and the capture would see only its first request.)
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--input-file", in,
		"--custom-dataset-type", "dag_jsonl", "--concurrency", "2", "--random-seed", "5", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	r, err := result.Read(dir)
	if err != nil || r.Counts.OK != 14 || r.Counts.Errors != 0 {
		t.Fatalf("%v, %+v", err, r.Counts)
	}
	// The bodies, by their last user message: the roles and contents before it.
	type msg struct {
		Role    string
		Content json.RawMessage
	}
	text := func(m msg) string {
		var s string
		if bytes.HasPrefix(m.Content, []byte(`"`)) && json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		return string(m.Content)
	}
	sent, bodies := map[string][]msg{}, map[string]string{}
	for _, sb := range sink.take() {
		if sb.path != "/v1/chat/completions" {
			continue
		}
		var b struct{ Messages []msg }
		if err := json.Unmarshal([]byte(sb.body), &b); err != nil || len(b.Messages) == 0 {
			t.Fatalf("body %.200s: %v", sb.body, err)
		}
		last := text(b.Messages[len(b.Messages)-1])
		sent[last], bodies[last] = b.Messages, sb.body
	}
	shape := func(ms []msg) string {
		var out []string
		for _, m := range ms {
			if m.Role == "assistant" && bytes.HasPrefix(m.Content, []byte(`"`)) {
				out = append(out, "A") // (a live answer)
				continue
			}
			out = append(out, m.Role+":"+text(m))
		}
		return strings.Join(out, " ")
	}
	for last, want := range map[string]string{
		"r0": "system:SYS user:r0",
		"r3": "system:SYS user:r0 A user:r1 A user:r2 A user:r3",
		"fb": "system:SYS user:r0 A user:fa user:fb",           // the FORK child: the parent's history to its answer, then its two user messages
		"f1": "system:SYS user:r0 A user:fa user:fb A user:f1", // and its own history after
		"s0": "system:SSYS user:s0",                            // the SPAWN child: fresh, its own system prompt
		"s1": "system:SSYS user:s0 A user:s1",
		"t1": "system:SYS user:r0 A user:r1 A user:r2 A user:r3 A user:r4 A user:t1",
		// authored messages as written, in the body and then in the history
		"t2":  `system:SYS user:r0 A user:r1 A user:r2 A user:r3 A user:r4 A user:[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}] assistant:null tool:t2`,
		"t2b": `system:SYS user:r0 A user:r1 A user:r2 A user:r3 A user:r4 A user:[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}] assistant:null tool:t2 A user:t2b`,
		"q0":  "user:q0",
	} {
		if got := shape(sent[last]); got != want {
			t.Errorf("the request ending %s: %s\nwant %s", last, got, want)
		}
	}
	if b := bodies["t2"]; !strings.Contains(b, `"tool_calls":[{"id":"c1","type":"function","function":{"name":"zoom","arguments":"{\"x\":1}"}}]`) || !strings.Contains(b, `"tools":[{"type":"function","function":{"name":"zoom"}}]`) {
		t.Errorf("the authored turn's tool call or tools are not as written: %s", b)
	}
	// The order, from the records: by session, by place in the tree.
	byPlace := map[string]map[int]record.Record{}
	for _, rec := range readRecords(t, dir) {
		if byPlace[rec.SessionID] == nil {
			byPlace[rec.SessionID] = map[int]record.Record{}
		}
		byPlace[rec.SessionID][rec.Turn] = rec
	}
	var tree, orch map[int]record.Record
	for _, m := range byPlace {
		switch len(m) {
		case 12:
			tree = m
		case 2:
			orch = m
		}
	}
	if tree == nil || orch == nil {
		t.Fatalf("sessions of %v requests; want 12 and 2", func() (n []int) {
			for _, m := range byPlace {
				n = append(n, len(m))
			}
			return
		}())
	}
	// Places: r0..r4 0-4, f 5-6, s 7-8, t1 9, t2 10-11.
	for _, c := range []struct {
		after, before int
		why           string
	}{
		{0, 5, "the fork after its parent's turn"},
		{1, 7, "the spawn after its parent's turn"},
		{8, 3, "the join after the spawned child's last answer"},
		{4, 9, "a terminal fork after the last turn"},
		{4, 10, "a terminal fork after the last turn"},
		{5, 6, "a child's turns in order"},
	} {
		if tree[c.before].Sent < tree[c.after].End {
			t.Errorf("%s: place %d sent at %d, before place %d ended at %d", c.why, c.before, tree[c.before].Sent, c.after, tree[c.after].End)
		}
	}
	if tree[2].Sent >= tree[7].Sent {
		t.Errorf("the parent's turn between spawn and join waited for the child (sent %d, the child at %d)", tree[2].Sent, tree[7].Sent)
	}
	if gap := time.Duration(orch[1].Sent - orch[0].End); gap < 200*time.Millisecond {
		t.Errorf("the second round %v after the first ended; want the think time, 200ms", gap)
	}
	if at := time.Duration(orch[0].Sent); at < 200*time.Millisecond {
		t.Errorf("the first round sent %v into the run; want after its think time, 200ms", at)
	}
	// AIPerf's branch_stats: r's children f, s (after its delay), t1 and t2
	// and o's two instances of q (each after its round's think time); r3
	// the one join.
	want := result.BranchStats{ChildrenSpawned: 6, ChildrenCompleted: 6, ChildrenDelayed: 3, ParentsSuspended: 1, ParentsResumed: 1}
	if r.BranchStats == nil || *r.BranchStats != want {
		t.Errorf("branch_stats %+v, want %+v", r.BranchStats, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, result.ExportJSON)); !strings.Contains(string(b), `"children_spawned": 6`) {
		t.Errorf("%s has no branch_stats", result.ExportJSON)
	}
	if tree[5].ISL <= tree[0].ISL+tree[0].OSL {
		t.Errorf("the fork child's ISL %d does not count the parent's history (%d + %d)", tree[5].ISL, tree[0].ISL, tree[0].OSL)
	}

	// --request-count cuts the first tree after r3, whose join then has
	// no child left to wait for: 4 requests, no hang.
	dir = filepath.Join(t.TempDir(), "cut")
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--input-file", in,
		"--custom-dataset-type", "dag_jsonl", "--concurrency", "1", "--request-count", "4", "--artifact-dir", dir)
	if r, err := result.Read(dir); res.code != 0 || err != nil || r.Counts.OK != 4 || r.BranchStats == nil || r.BranchStats.ChildrenSpawned != 0 {
		t.Errorf("cut at 4 requests: exit %d %v\n%s", res.code, err, res.stderr)
	}
	sink.take()

	// Branches need session slots: a rate without --concurrency is refused.
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--input-file", in,
		"--custom-dataset-type", "dag_jsonl", "--request-rate", "5", "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, "dag_jsonl branches run in session slots") || len(sink.take()) != 0 {
		t.Errorf("a rate without --concurrency: exit %d\n%s", res.code, res.stderr)
	}
}

// AIPerf's context_mode message_array_with_responses: each turn is its
// own whole messages (system prompt and pre-baked answers too), sent as
// written with nothing threaded in; such a conversation cannot FORK (it
// keeps no history to inherit).
func TestDagJSONLMessageArrays(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // (read afresh: no layout an earlier build left in the temp folder)
	s, _ := startSim(t, time.Millisecond, 100*time.Microsecond)
	url, sink := captureBodies(t, s)
	in := filepath.Join(t.TempDir(), "arrays.jsonl")
	os.WriteFile(in, []byte(`{"session_id": "a", "context_mode": "message_array_with_responses", "turns": [{"messages": [{"role": "system", "content": "S1"}, {"role": "user", "content": "u1"}], "max_tokens": 4}, {"messages": [{"role": "system", "content": "S2"}, {"role": "user", "content": "u1"}, {"role": "assistant", "content": "baked"}, {"role": "user", "content": "u2"}], "max_tokens": 4}]}
`), 0o644)
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--input-file", in,
		"--custom-dataset-type", "dag_jsonl", "--concurrency", "1", "--artifact-dir", t.TempDir())
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	var got []string
	for _, sb := range sink.take() {
		if sb.path == "/v1/chat/completions" {
			var b struct{ Messages json.RawMessage }
			json.Unmarshal([]byte(sb.body), &b)
			got = append(got, string(b.Messages))
		}
	}
	want := []string{`[{"content":"S1","role":"system"},{"content":"u1","role":"user"}]`,
		`[{"content":"S2","role":"system"},{"content":"u1","role":"user"},{"content":"baked","role":"assistant"},{"content":"u2","role":"user"}]`}
	if !slices.Equal(got, want) {
		t.Errorf("bodies' messages:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	os.WriteFile(in, []byte(`{"session_id": "a", "context_mode": "message_array_with_responses", "turns": [{"messages": [{"role": "user", "content": "u1"}], "forks": ["b"]}]}
{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "x"}]}]}
`), 0o644)
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--input-file", in, "--custom-dataset-type", "dag_jsonl")
	if res.code != ExitError || !strings.Contains(res.stderr, "arrays.jsonl") || !strings.Contains(res.stderr, "keeps none") || len(sink.take()) != 0 {
		t.Errorf("a fork from a message array conversation: exit %d\n%s", res.code, res.stderr)
	}
}
