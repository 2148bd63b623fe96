package dataset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// A folder of weka traces is one session a file, in name order; a
// subagent's calls are turns in its place; a turn's delay is the idle
// time before it; prompts are exactly "in" tokens, their hash ids' blocks
// shared within a trace and not across traces.
func TestIndexWeka(t *testing.T) {
	t.Parallel()
	x, err := indexWeka("testdata/weka", nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Lines) != 2 || x.Lines[0].Count != 5 || x.Lines[1].Count != 2 || !x.Standalone() {
		t.Fatalf("sessions %+v", x.Lines)
	}
	want := []TurnMeta{{200, 30, 0}, {260, 12, 500}, {100, 20, 300}, {150, 25, 100}, {330, 40, 700}, {128, 1, 0}, {192, 8, 0}}
	for i, w := range want {
		got := x.Turns[i]
		if got.ISL != w.ISL || got.MaxTokens != w.MaxTokens || got.DelayMs < w.DelayMs-0.01 || got.DelayMs > w.DelayMs+0.01 {
			t.Errorf("turn %d: %+v, want %+v", i, got, w)
		}
	}
	text := func(j, k int) []string {
		s, sys, extra, err := x.Turn(j, k, nil)
		if err != nil || sys != "" || extra != nil {
			t.Fatalf("turn %d/%d: %v", j, k, err)
		}
		if n := tokenizer.Builtin().Count(s); n != int(x.Turns[int(x.Lines[j].First)+k].ISL) {
			t.Errorf("turn %d/%d: %d tokens, want %d", j, k, n, x.Turns[int(x.Lines[j].First)+k].ISL)
		}
		return strings.Fields(s)
	}
	a0, a1, a4 := text(0, 0), text(0, 1), text(0, 4)
	b0 := text(1, 0)
	same := func(a, b []string, n int) bool { return strings.Join(a[:n], " ") == strings.Join(b[:n], " ") }
	if !same(a0, a1, 192) || !same(a1, a4, 256) || same(a0[192:], a1[192:], 8) {
		t.Error("shared hash ids are not one shared prefix, or the words past them are")
	}
	if same(a0, b0, 64) {
		t.Error("trace sess-b2's hash id 1 sent trace sess-a1's block (the scope is local)")
	}
	// The subagent's own blocks are not the parent's.
	if sub := text(0, 2); same(sub, a0, 64) {
		t.Error("the subagent's hash id 90 made the parent's block 1")
	}
	// Another root (another repeat) sends other blocks.
	y, _ := indexWeka("testdata/weka", nil, 8)
	if s, _, _, _ := y.Turn(0, 0, nil); strings.Fields(s)[0] == a0[0] && strings.Join(strings.Fields(s)[:64], " ") == strings.Join(a0[:64], " ") {
		t.Error("another root sent the same blocks")
	}
	if x.Digest == "" || x.Digest != y.Digest {
		t.Error("the digest is not the files'")
	}
}

// A malformed trace is refused with its file and request named, every
// bad file at once.
func TestWekaErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	head := `{"id": "x", "models": ["m"], "block_size": 16, "hash_id_scope": "local", "requests": [`
	for _, c := range []struct{ body, want string }{
		{head + `{"t": 0, "type": "n", "model": "m", "in": 10, "out": 1, "extra_field": 1}]}`, `bad.json: request 1: json: unknown field "extra_field"`},
		{head + `{"t": 0, "type": "x", "model": "m", "in": 10, "out": 1}]}`, `request 1: "type" "x"`},
		{head + `{"t": 0, "type": "n", "model": "m", "out": 1}]}`, `request 1: want "in"`},
		{head + `{"t": 0, "type": "n", "model": "m", "in": 10, "out": 1, "hash_ids": [1, 2]}]}`, `request 1: 2 hash_ids of 16-token blocks are more than its 10 input tokens fill`},
		{head + `{"type": "n", "model": "m", "in": 10, "out": 1}]}`, `request 1: want a finite "t"`},
		{head + `{"t": 0, "type": "subagent", "agent_id": "a", "subagent_type": "E", "status": "completed", "models": [], "requests": [{"t": 0, "type": "subagent"}]}]}`, `request 1, subagent request 1: "type" "subagent"`},
		{`{"id": "x", "models": [], "block_size": 16, "hash_id_scope": "global", "requests": []}`, `"hash_id_scope" "global"`},
		{`{"id": "x", "models": [], "block_size": 0, "hash_id_scope": "local", "requests": []}`, `"block_size" 0`},
		{`[1, 2]`, `bad.json: not a weka_trace`},
	} {
		p := write("bad.json", c.body)
		if _, err := indexWeka(p, nil, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
	os.Remove(filepath.Join(dir, "bad.json"))
	write("a.json", head+`{"t": 0, "type": "n", "model": "m", "in": 0, "out": 1}]}`)
	write("b.json", head+`{"t": 0, "type": "n", "model": "m", "in": 5}]}`)
	write("notes.txt", "not a trace")
	_, err := indexWeka(dir, nil, 1)
	if err == nil || !strings.Contains(err.Error(), "a.json: request 1") || !strings.Contains(err.Error(), "b.json: request 1: want \"out\"") {
		t.Errorf("two bad files: %v", err)
	}
	if _, err := indexWeka(t.TempDir(), nil, 1); err == nil || !strings.Contains(err.Error(), "no weka_trace files") {
		t.Errorf("an empty folder: %v", err)
	}
}

func FuzzWeka(f *testing.F) {
	for _, name := range []string{"testdata/weka/trace-000.json", "testdata/weka/trace-001.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "t.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		x, err := indexWeka(p, nil, 1)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("an error without the file's name: %v", err)
			}
			return
		}
		// Every turn reads back at its length (bounded: the fuzzer's inputs are small).
		for k := range min(int(x.Lines[0].Count), 8) {
			s, _, _, err := x.Turn(0, k, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tm := x.Turns[k]; tm.ISL <= 4096 && tokenizer.Builtin().Count(s) != int(tm.ISL) {
				t.Fatalf("turn %d: %d tokens, want %d", k, tokenizer.Builtin().Count(s), tm.ISL)
			}
		}
	})
}

// Whatever the bytes, a raw_payload file indexes into bodies that read
// back as compact JSON, or gives an error naming the file.
func FuzzRawPayload(f *testing.F) {
	f.Add([]byte(`{"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}` + "\n"))
	f.Add([]byte(`{"prompt": "x", "stream": true}` + "\n" + `{"messages": [{"content": [{"type": "text", "text": "a"}]}]}`))
	f.Add([]byte(`[1]` + "\n" + `{"messages": null}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "raw.jsonl")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		x, err := indexRawPayload(p, nil, false)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("an error without the file's name: %v", err)
			}
			return
		}
		fh, _ := os.Open(p)
		defer fh.Close()
		for j := range min(len(x.Lines), 8) {
			d, err := x.Read(j, fh)
			if err != nil || !json.Valid([]byte(d.Text)) {
				t.Fatalf("line %d read back as %q, %v", j+1, d.Text, err)
			}
		}
	})
}

// Whatever the bytes, an inputs.json indexes into payloads that read
// back as JSON, or gives an error naming the file.
func FuzzInputsJSON(f *testing.F) {
	f.Add([]byte(`{"data": [{"session_id": "a", "payloads": [{"messages": [{"role": "user", "content": "hi"}]}]}, {"session_id": "w", "phase": "warmup", "payloads": [{"prompt": "x"}]}]}`))
	f.Add([]byte(`{"data": []}`))
	f.Add([]byte(`{"other": 1, "data": [{"payloads": [1]}]}`))
	dir := ownTempDir(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "inputs.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		x, err := indexInputsJSON(p, nil, false)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("an error without the file's name: %v", err)
			}
			return
		}
		fh, _ := os.Open(x.Path)
		defer fh.Close()
		for j := range min(len(x.Lines), 8) {
			if d, err := x.Read(j, fh); err != nil || !json.Valid([]byte(d.Text)) {
				t.Fatalf("payload %d read back as %q, %v", j+1, d.Text, err)
			}
		}
	})
}
