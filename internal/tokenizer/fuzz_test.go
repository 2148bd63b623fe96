package tokenizer

import (
	"os"
	"slices"
	"testing"

	"github.com/dlclark/regexp2/v2"
)

// Whatever the text, encoding neither panics nor disagrees with Count,
// in the builtin encoding and in a tokenizer.json.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", " ", "hello world", "\t\t \n \n1", "<|im_start|>user\n😀<|im_end|>", "e\u0301\u00a0x", "\xff\xfe bad utf-8 \xe2\x82"} {
		f.Add(s)
	}
	hf, err := load("testdata/qwen3-trimmed.json", "")
	if err != nil {
		f.Fatal(err)
	}
	toks := []*Tokenizer{Builtin(), hf}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			ids, err := tok.Encode(s)
			if err != nil {
				t.Fatalf("%s: %v", tok.Name(), err)
			}
			if n := tok.Count(s); n != len(ids) {
				t.Fatalf("%s: Count %d, Encode %d ids", tok.Name(), n, len(ids))
			}
		}
	})
}

// Whatever the bytes of a tokenizer.json, loading it gives a tokenizer or
// an error; nothing panics.
func FuzzTokenizerJSON(f *testing.F) {
	b, err := os.ReadFile("testdata/qwen3-trimmed.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{},"merges":[["x","y"]]},"pre_tokenizer":{"type":"Split","pattern":{"Regex":"("},"behavior":"Isolated"}}`))
	f.Add([]byte(`{"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"},7]}}`))
	f.Add(b[:4096])
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHF(b)
		if err != nil {
			return
		}
		countOf(h, "Hello, world! 123 <|im_start|>")
	})
}

// The hand-written ASCII splitters cut every ASCII text into exactly the
// pieces the regular expression engine does, for each pattern they follow.
func FuzzSplitASCII(f *testing.F) {
	for _, s := range []string{"Hello, world!", "I'm HELLOworld's 12345 x\t\t \n \n1", "'S'LL'd 'x", " !!\n/ab /\r\n", "a  \n  b   ", "   ", "\n", "A1b2C3", "foo.bar/baz?x=1&y=2", "ALLCAPS lowercase MixedCase camelCase"} {
		f.Add(s)
	}
	engines := map[splitKind]*regexp2.Regexp{}
	for kind, pat := range map[splitKind]string{splitO200k: o200kSplit, splitCL100k: cl100kSplit, splitQwen: qwenSplit} {
		engines[kind] = regexp2.MustCompile(alternativesGrouped(pat), regexp2.None)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		for i := range b {
			b[i] &= 0x7f // (ASCII only: the splitters' domain)
		}
		s = string(b)
		for kind, re := range engines {
			var want, got []string
			m, _ := re.FindStringMatch(s)
			for m != nil {
				want = append(want, m.String())
				m, _ = re.FindNextMatch(m)
			}
			splitASCII(s, kind, func(p string) { got = append(got, p) })
			if !slices.Equal(got, want) {
				t.Fatalf("kind %d on %q:\n got %q\nwant %q", kind, s, got, want)
			}
		}
	})
}

// Cutting a text where a piece always ends, and splitting its ASCII
// stretches by hand, gives exactly the engine's pieces of the whole text,
// whatever the text (any Unicode, spaces of every kind, invalid UTF-8).
func FuzzSplitMixed(f *testing.F) {
	for _, s := range []string{"Hello 世界 and 123 more", "naïve café résumé, ok", "emoji 😀 x 👍🏽 y", "a\u00a0 b\u3000 c", "中文 文本 text", "x \u0301 y", "\xff\xfe bad utf-8 \xe2\x82 ok"} {
		f.Add(s)
	}
	engines := map[splitKind]*regexp2.Regexp{}
	for kind, pat := range map[splitKind]string{splitO200k: o200kSplit, splitCL100k: cl100kSplit, splitQwen: qwenSplit} {
		engines[kind] = regexp2.MustCompile(alternativesGrouped(pat), regexp2.None)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for kind, re := range engines {
			var want, got []string
			engineSplit(re, s, func(p string) { want = append(want, p) })
			err := splitMixed(s, kind, func(u string, y func(string)) error { return engineSplit(re, u, y) }, func(p string) { got = append(got, p) })
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("kind %d on %q (%v):\n got %q\nwant %q", kind, s, err, got, want)
			}
		}
	})
}
