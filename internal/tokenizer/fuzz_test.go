package tokenizer

import (
	"os"
	"testing"
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
		h.count("Hello, world! 123 <|im_start|>")
	})
}
