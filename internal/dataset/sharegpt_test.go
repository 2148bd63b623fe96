package dataset

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func shareGPTFile(t testing.TB, convs ...[]string) string {
	t.Helper()
	var recs []map[string]any
	for i, c := range convs {
		var turns []map[string]string
		for j, v := range c {
			from := "human"
			if j%2 == 1 {
				from = "gpt"
			}
			if strings.HasPrefix(v, "gpt:") {
				from, v = "gpt", strings.TrimPrefix(v, "gpt:")
			}
			turns = append(turns, map[string]string{"from": from, "value": v})
		}
		recs = append(recs, map[string]any{"id": i, "conversations": turns})
	}
	b, _ := json.Marshal(recs)
	p := filepath.Join(t.TempDir(), "sharegpt.json")
	os.WriteFile(p, b, 0o644)
	return p
}

// The first human/gpt pair of each conversation, kept by vLLM's filter:
// too short a prompt or answer, too long a prompt or pair, a lone turn and
// a conversation that starts with gpt are left out; the answer's length
// is the request's max tokens.
func TestShareGPT(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 1100)
	p := shareGPTFile(t,
		[]string{"what is the capital of france", "the capital of france is paris", "and of spain", "madrid"},
		[]string{"hi", "hello there how are you"},
		[]string{"a lone question with no answer"},
		[]string{"gpt:it starts with the model", "then the human answers here"},
		[]string{long, "an answer of five words"},
		[]string{"tell me a very short story please", strings.Repeat("once ", 20)},
	)
	ps, err := fromShareGPT(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Text != "what is the capital of france" || ps[0].ISL != 6 || ps[0].MaxTokens != 6 || ps[1].MaxTokens != 21 { // (20 words and a trailing space: 21 o200k tokens)
		t.Fatalf("%+v", ps)
	}
	os.WriteFile(p, []byte(`[{"conversations": [{"from": "human", "value": "a b c d"}]}, {"conversations": 7}]`), 0o644)
	if _, err := fromShareGPT(p, nil); err == nil || !strings.Contains(err.Error(), "record 1") {
		t.Errorf("a bad record: %v", err)
	}
	os.WriteFile(p, []byte(`{"not": "an array"}`), 0o644)
	if _, err := fromShareGPT(p, nil); err == nil || !strings.Contains(err.Error(), "not a ShareGPT file") {
		t.Errorf("not an array: %v", err)
	}
}

// Whatever the bytes, FromShareGPT returns prompts within the filter or an
// error; nothing panics.
func FuzzShareGPT(f *testing.F) {
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "one two three four"}, {"from": "gpt", "value": "five six seven eight"}]}]`))
	f.Add([]byte(`[{"conversations": []}, 3, "x"]`))
	f.Add([]byte(`[`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "s.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		ps, err := fromShareGPT(p, nil)
		if err != nil {
			return
		}
		for _, pr := range ps {
			if pr.ISL < ShareGPTMinTokens || pr.ISL > ShareGPTMaxPrompt || pr.ISL+pr.MaxTokens > ShareGPTMaxTotal {
				t.Fatalf("a pair past the filter: %d + %d", pr.ISL, pr.MaxTokens)
			}
		}
	})
}

// A BurstGPT CSV: each row with tokens in and out is a request at its
// timestamp (seconds), failed rows (no response tokens) left out, a bad
// row named, and a header without BurstGPT's columns refused.
func TestBurstGPT(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "burst.csv")
	os.WriteFile(p, []byte(`Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45.5,ChatGPT,1087,0,1087,Conversation log
118,GPT-4,417,276,693,API log
`), 0o644)
	x, err := indexBurstGPT(p, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); x.Digest != fmt.Sprintf("%x", sha256.Sum256(b)) {
		t.Errorf("digest %s is not the file's sha256", x.Digest)
	}
	if len(x.Lines) != 2 || x.Lines[0].TimestampMs != 5000 || x.Lines[1].ISL != 417 || x.Lines[1].MaxTokens != 276 {
		t.Fatalf("%+v", x.Lines)
	}
	text, err := lineText(x, 1, nil)
	if err != nil || len(strings.Fields(text)) != 417 {
		t.Fatalf("row 3's prompt: %d words, %v", len(strings.Fields(text)), err)
	}
	os.WriteFile(p, []byte("Timestamp,Request tokens,Response tokens\n1,x,3\n"), 0o644)
	if _, err := indexBurstGPT(p, nil, 7); err == nil || !strings.Contains(err.Error(), "row 2") {
		t.Errorf("a bad row: %v", err)
	}
	os.WriteFile(p, []byte("time,in,out\n1,2,3\n"), 0o644)
	if _, err := indexBurstGPT(p, nil, 7); err == nil || !strings.Contains(err.Error(), "Request tokens") {
		t.Errorf("another header: %v", err)
	}
}

// Whatever the bytes, indexBurstGPT returns rows within the limits or an
// error; nothing panics.
func FuzzBurstGPT(f *testing.F) {
	f.Add([]byte("Timestamp,Model,Request tokens,Response tokens\n5,m,10,2\n7.5,m,3,0\n"))
	f.Add([]byte("Timestamp,Request tokens,Response tokens\n\"1,2\n"))
	f.Add([]byte(""))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "b.csv")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		x, err := indexBurstGPT(p, nil, 1)
		if err != nil {
			return
		}
		for _, l := range x.Lines {
			if l.ISL < 1 || l.MaxTokens < 1 || l.ISL > MaxInputLength || l.TimestampMs < 0 {
				t.Fatalf("a row past the limits: %+v", l)
			}
		}
	})
}

// indexShareGPT reads back exactly the prompts FromShareGPT keeps, with
// the file's sha256 as its digest, holding none of them in memory.
func TestIndexShareGPT(t *testing.T) {
	t.Parallel()
	p := shareGPTFile(t,
		[]string{"what is the capital of france", "the capital of france is paris"},
		[]string{"hi", "hello there how are you"},
		[]string{"tell me a very short story please", strings.Repeat("once ", 20)},
	)
	want, err := fromShareGPT(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := indexShareGPT(p, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if fmt.Sprintf("%x", sha256.Sum256(b)) != x.Digest || len(x.Lines) != len(want) {
		t.Fatalf("digest %s, %d lines for %d prompts", x.Digest, len(x.Lines), len(want))
	}
	f, _ := os.Open(x.Path)
	defer f.Close()
	for j, w := range want {
		text, err := lineText(x, j, f)
		if m := x.Lines[j]; err != nil || text != w.Text || int(m.ISL) != w.ISL || int(m.MaxTokens) != w.MaxTokens {
			t.Errorf("prompt %d: %q %+v, want %+v", j, text, m, w)
		}
	}
}
