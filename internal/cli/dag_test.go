package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// AIPerf's dag_jsonl: a file of linear conversations runs as sessions
// (each turn after its answer, the history threaded); one that branches
// is refused before any load, naming its line.
func TestDagJSONLSessions(t *testing.T) {
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
	os.WriteFile(in, []byte(`{"session_id": "s1", "turns": [{"messages": [{"role": "user", "content": "x"}], "spawns": ["s2"]}]}
{"session_id": "s2", "turns": [{"messages": [{"role": "user", "content": "y"}]}]}
`), 0o644)
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--input-file", in, "--custom-dataset-type", "dag_jsonl")
	if res.code != ExitError || !strings.Contains(res.stderr, "agent.jsonl:1:") || !strings.Contains(res.stderr, "DAG branches") {
		t.Errorf("a branching file: exit %d\n%s", res.code, res.stderr)
	}
}
