package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// FuzzFromFile: any bytes as an --input-file either load into prompts
// whose token counts are what they say, or give an error; nothing panics.
func FuzzFromFile(f *testing.F) {
	f.Add([]byte(`{"text": "hello world"}` + "\n" + `{"input_length": 12, "output_length": 4}` + "\n"))
	f.Add([]byte(`{"timestamp": 10, "text": "a"}` + "\n\n" + `{"input_length": -1}`))
	f.Add([]byte("not json\n"))
	f.Add([]byte(`{"timestamp": 0, "input_length": 20, "hash_ids": [1, 2, 3]}` + "\n" + `{"input_length": 9, "hash_ids": [1, 4]}` + "\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		lines, err := fromFile(p, nil, 1, Blocks{Size: 8, Root: 3})
		if err != nil {
			return
		}
		for i, l := range lines {
			if l.Prompt.ISL < 0 {
				t.Fatalf("line %d: ISL %d", i, l.Prompt.ISL)
			}
		}
	})
}

// A Mooncake trace's hash ids become blocks: requests that share leading
// hash ids share those blocks' words exactly, a request's last block is
// the start of its own, and a length that its hash ids can't hold, or hash
// ids without the trace type, are refused naming the line.
func TestMooncakeBlocks(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	os.WriteFile(p, []byte(`{"timestamp": 0, "input_length": 24, "output_length": 2, "hash_ids": [1, 2, 3]}
{"timestamp": 5, "input_length": 20, "hash_ids": [1, 2, 9]}
{"timestamp": 9, "input_length": 24, "hash_ids": [1, 2, 3]}
`), 0o644)
	bl := Blocks{Size: 8, Root: 42}
	lines, err := fromFile(p, nil, 1, bl)
	if err != nil {
		t.Fatal(err)
	}
	words := func(i int) []string { return strings.Fields(lines[i].Text) }
	a, b := words(0), words(1)
	if len(a) != 24 || lines[0].ISL != 24 || len(b) != 20 || lines[1].ISL != 20 || lines[0].MaxTokens != 2 {
		t.Fatalf("lengths %d/%d, %d/%d", len(a), lines[0].ISL, len(b), lines[1].ISL)
	}
	if strings.Join(a[:16], " ") != strings.Join(b[:16], " ") || strings.Join(a[16:20], " ") == strings.Join(b[16:20], " ") {
		t.Error("hash ids 1, 2 are not one shared prefix, or 3 and 9 are the same block")
	}
	if lines[0].Text != lines[2].Text {
		t.Error("the same hash ids made two prompts")
	}
	other, _ := fromFile(p, nil, 1, Blocks{Size: 8, Root: 43})
	if other[0].Text == lines[0].Text {
		t.Error("another root (another repeat) sent the same blocks")
	}
	os.WriteFile(p, []byte(`{"input_length": 24, "hash_ids": [1]}`+"\n"), 0o644)
	if _, err := fromFile(p, nil, 1, bl); err == nil || !strings.Contains(err.Error(), "trace.jsonl:1: \"input_length\" 24 does not fit 1 hash_ids of 8-token blocks") {
		t.Errorf("24 tokens in one block of 8: %v", err)
	}
	if _, err := fromFile(p, nil, 1, Blocks{}); err == nil || !strings.Contains(err.Error(), "mooncake_trace") {
		t.Errorf("hash ids without the trace type: %v", err)
	}
}

// A file with several bad lines lists each, with its line, at once.
func TestIndexFileListsEveryProblem(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(p, []byte(`{"text": "fine"}
{"input_length": -3}
not json
{"text": "fine again", "timestamp": -1}
`), 0o644)
	_, err := indexFile(p, nil, 1, Blocks{})
	for _, want := range []string{"in.jsonl:2:", "in.jsonl:3:", "in.jsonl:4:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %s in %v", want, err)
		}
	}
}

// Loader throughput: MB/s indexing a JSONL file of ~1 KB text lines.
func BenchmarkIndexFile(b *testing.B) {
	p := filepath.Join(b.TempDir(), "in.jsonl")
	line := `{"text": "` + strings.Repeat("lorem ipsum dolor sit amet ", 37) + `", "output_length": 16}` + "\n"
	os.WriteFile(p, []byte(strings.Repeat(line, 10000)), 0o644)
	b.SetBytes(int64(len(line) * 10000))
	for b.Loop() {
		if _, err := indexFile(p, nil, 1, Blocks{}); err != nil {
			b.Fatal(err)
		}
	}
}

// AIPerf's single_turn fields: "texts" joined into one prompt, GenAI-Perf's
// "text_input", and "extra" read back with the text; fields it has that
// are not taken here are refused by name, with the line, all at once.
func TestAIPerfSingleTurnFields(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "prompts.jsonl")
	os.WriteFile(p, []byte(`{"text": "What is machine learning?", "output_length": 50}
{"texts": ["Explain", "neural networks."]}
{"text_input": "Define reinforcement learning.", "extra": {"temperature": 0.2, "seed": 42}}
`), 0o644)
	x, err := indexFile(p, nil, 1, Blocks{})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(p)
	defer f.Close()
	want := []string{"What is machine learning?", "Explain\nneural networks.", "Define reinforcement learning."}
	for j, w := range want {
		d, err := x.Read(j, f)
		text, extra := d.Text, d.Extra
		if err != nil || text != w {
			t.Fatalf("line %d: %q, %v; want %q", j+1, text, err, w)
		}
		if n := tokenizer.Count(w); int(x.Lines[j].ISL) != n {
			t.Errorf("line %d: ISL %d, want %d", j+1, x.Lines[j].ISL, n)
		}
		if (j == 2) != (extra != nil) || j == 2 && string(extra["seed"]) != "42" {
			t.Errorf("line %d: extra %v", j+1, extra)
		}
	}
	if x.Lines[0].MaxTokens != 50 {
		t.Errorf("output_length: %d", x.Lines[0].MaxTokens)
	}
	os.WriteFile(p, []byte(`{"text": "a", "delay": 100}
{"text": "b", "images": ["x.png"]}
{"session_id": "s", "turns": [{"text": "c"}]}
{"text": "d", "audio": "a.wav", "video": "v.mp4"}
{"texts": "not a list"}
`), 0o644)
	_, err = indexFile(p, nil, 1, Blocks{})
	for _, w := range []string{`prompts.jsonl:1: "delay"`, `prompts.jsonl:2: image "x.png": no such file`, `prompts.jsonl:3: "turns"`, "prompts.jsonl:5:", `prompts.jsonl:4: audio "a.wav": no such file`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want it to name %q", err, w)
		}
	}
}

// Whatever the bytes, a multi_turn file indexes into conversations whose
// every turn reads back with the length the index says, or gives an
// error naming the file; nothing panics.
func FuzzSessions(f *testing.F) {
	f.Add([]byte(`{"session_id": "a", "turns": [{"role": "system", "text": "be brief"}, {"text": "hi there", "delay": 10}, {"texts": ["x", "y"], "output_length": 3}]}` + "\n"))
	f.Add([]byte(`{"turns": []}` + "\n" + `{"turns": [{"text": "a", "delay": -1}, {"image": "x.png"}]}`))
	f.Add([]byte(`{"turns": [{"role": "system"}, {"text": "q"}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "conv.jsonl")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		x, err := indexSessions(p, nil)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("an error without the file's name: %v", err)
			}
			return
		}
		fh, _ := os.Open(p)
		defer fh.Close()
		for j, l := range x.Lines {
			for k := 0; k < int(l.Count); k++ {
				text, _, _, err := x.Turn(j, k, fh)
				if err != nil {
					t.Fatal(err)
				}
				if n := tokenizer.Count(text); int32(n) != x.Turns[int(l.First)+k].ISL {
					t.Fatalf("conversation %d turn %d: %d tokens, the index says %d", j, k, n, x.Turns[int(l.First)+k].ISL)
				}
			}
		}
	})
}

// dag_jsonl lines never panic the reader: they are trees laid out, each
// turn waiting only for turns of its own tree, or an error naming a line.
func FuzzDag(f *testing.F) {
	f.Add([]byte(`{"session_id": "a", "turns": [{"messages": [{"role": "system", "content": "s"}, {"role": "system", "content": "t"}, {"role": "user", "content": [{"type": "text", "text": "u"}]}], "max_tokens": 3, "delay": 5, "extra": {"k": 1}}]}`))
	f.Add([]byte(`{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}], "spawns": [{"children": ["b"]}]}, {"messages": [{"role": "user", "content": "y"}]}]}` + "\n" +
		`{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "z"}], "forks": [{"child": "c", "background": true}]}]}` + "\n" +
		`{"session_id": "c", "turns": [{"messages": [{"role": "user", "content": "w"}], "forks": ["a"]}]}`))
	f.Add([]byte(`{"session_id": "o", "orchestrator": true, "rounds": 2, "think_time_ms": 5, "spawns": ["b"]}` + "\n" + `{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "z"}]}], "pre_session_spawns": ["b"]}`))
	f.Add([]byte(`{"session_id": "", "turns": null, "context_mode": null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var convs []*dagConv
		byID := map[string]*dagConv{}
		for n, line := range bytes.Split(b, []byte("\n")) {
			c, err := dagLine(line, "m")
			if err != nil {
				return
			}
			if c == nil || c.id == "" || (len(c.turns) == 0) != c.orchestrator {
				t.Fatalf("no error and no conversation: %+v", c)
			}
			if byID[c.id] != nil {
				return
			}
			c.line = n + 1
			byID[c.id] = c
			convs = append(convs, c)
		}
		trees, err := dagTrees(convs, byID)
		if err != nil {
			return
		}
		for _, tr := range trees {
			places := 0
			for _, turn := range tr.Turns {
				if turn["role"] != "system" {
					places++
				}
			}
			for _, turn := range tr.Turns {
				if m, ok := turn["dag"].(*dagMeta); ok {
					for _, w := range m.Wait {
						if w < 0 || int(w) >= places || m.Fork < 0 || int(m.Fork) > places {
							t.Fatalf("tree %s: a turn waits for %d of %d: %+v", tr.SessionID, w, places, m)
						}
					}
				}
			}
		}
	})
}
