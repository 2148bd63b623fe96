package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A dag_jsonl file's linear conversations are replayed as multi_turn
// ones (a system message first is the system prompt; max_tokens, delay
// and extra kept); what makes a DAG, or what this tool does not send, is
// refused with the line and why.
func TestDagJSONL(t *testing.T) {
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
	for body, want := range map[string]string{
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "forks": ["b"]}]}`:                                                                                                   `session a turn 1: branch target "b" is not a session of the file`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "spawns": [{"children": ["b"], "join_at": 1}]}]}`:                                                                    `"join_at" 1: want a later turn`,
		`{"session_id": "o", "turns": [{"messages": []}], "orchestrator": true, "spawns": ["a"]}`:                                                                                                            `an orchestrator sends no request of its own`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "temperature": 0}]}`:                                                                                                 `unknown key "temperature"`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}]}`:                                                                            `role "assistant"`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]}]}`:                                                                    `content part "image_url"`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}]}`:                                                                                  `"tools"`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "model": "other"}]}`:                                                                                                 `a turn's own model`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "max_tokens": true}]}`:                                                                                               `"max_tokens" true`,
		`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}]}], "context_mode": "message_array_with_responses"}`:                                                                   `context_mode`,
		"{\"session_id\": \"a\", \"turns\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]}\n{\"session_id\": \"a\", \"turns\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]}": `session_id "a" again`,
	} {
		if _, err := indexDag(write(body), nil, "m"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "d.jsonl:") {
			t.Errorf("%s: %v, want %q with the line", body, err, want)
		}
	}
}
