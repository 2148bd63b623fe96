package testmodel

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reader parses GGUF v3 back: enough to check what Write wrote.
type reader struct {
	r   *bufio.Reader
	n   int64
	err error
}

func (rd *reader) read(v any) {
	if rd.err == nil {
		rd.err = binary.Read(rd.r, binary.LittleEndian, v)
		rd.n += int64(binary.Size(v))
	}
}

func (rd *reader) str() string {
	var n uint64
	rd.read(&n)
	if rd.err != nil || n > 1<<20 {
		rd.err = fmt.Errorf("bad string length %d", n)
		return ""
	}
	b := make([]byte, n)
	_, rd.err = io.ReadFull(rd.r, b)
	rd.n += int64(n)
	return string(b)
}

func (rd *reader) value(typ uint32) any {
	switch typ {
	case tUint32:
		var v uint32
		rd.read(&v)
		return v
	case tInt32:
		var v int32
		rd.read(&v)
		return v
	case tFloat32:
		var v float32
		rd.read(&v)
		return v
	case tBool:
		var v uint8
		rd.read(&v)
		return v == 1
	case tString:
		return rd.str()
	case tArray:
		var et uint32
		var n uint64
		rd.read(&et)
		rd.read(&n)
		out := make([]any, n)
		for i := range out {
			out[i] = rd.value(et)
		}
		return out
	}
	rd.err = fmt.Errorf("unknown value type %d", typ)
	return nil
}

type info struct {
	dims   []uint64
	typ    uint32
	offset uint64
}

func parse(t *testing.T, path string) (map[string]any, map[string]info, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := &reader{r: bufio.NewReader(f)}
	var magic [4]byte
	var version uint32
	var nt, nkv uint64
	rd.read(&magic)
	rd.read(&version)
	rd.read(&nt)
	rd.read(&nkv)
	if string(magic[:]) != "GGUF" || version != 3 {
		t.Fatalf("magic %q version %d", magic, version)
	}
	meta := map[string]any{}
	for i := uint64(0); i < nkv; i++ {
		k := rd.str()
		var typ uint32
		rd.read(&typ)
		meta[k] = rd.value(typ)
	}
	tensors := map[string]info{}
	for i := uint64(0); i < nt; i++ {
		name := rd.str()
		var nd uint32
		rd.read(&nd)
		in := info{dims: make([]uint64, nd)}
		for j := range in.dims {
			rd.read(&in.dims[j])
		}
		rd.read(&in.typ)
		rd.read(&in.offset)
		tensors[name] = in
	}
	if rd.err != nil {
		t.Fatal(rd.err)
	}
	start := (rd.n + alignment - 1) / alignment * alignment
	return meta, tensors, start
}

func TestWriteParsesBack(t *testing.T) {
	t.Parallel()
	cfg := Config{Seed: 7, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FF: 128, Context: 512, VocabWords: 200}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := Write(path, cfg); err != nil {
		t.Fatal(err)
	}
	meta, tensors, start := parse(t, path)
	for k, want := range map[string]any{
		"general.architecture": "llama", "llama.embedding_length": uint32(64), "llama.block_count": uint32(2),
		"llama.attention.head_count_kv": uint32(2), "llama.rope.dimension_count": uint32(16), "tokenizer.ggml.model": "llama",
		"tokenizer.ggml.eos_token_id": uint32(2),
	} {
		if meta[k] != want {
			t.Errorf("%s = %v, want %v", k, meta[k], want)
		}
	}
	toks := meta["tokenizer.ggml.tokens"].([]any)
	if uint32(len(toks)) != meta["llama.vocab_size"] || len(meta["tokenizer.ggml.scores"].([]any)) != len(toks) {
		t.Fatal("vocabulary arrays disagree")
	}
	if toks[0] != "<unk>" || toks[1] != "<s>" || toks[2] != "</s>" || toks[3] != "<0x00>" {
		t.Errorf("special tokens %v", toks[:4])
	}
	if len(tensors) != 2+9*2+1 {
		t.Errorf("%d tensors", len(tensors))
	}
	nv := uint64(len(toks))
	check := func(name string, dims ...uint64) {
		in, ok := tensors[name]
		if !ok || fmt.Sprint(in.dims) != fmt.Sprint(dims) || in.offset%alignment != 0 {
			t.Errorf("%s: %+v, want dims %v aligned", name, in, dims)
		}
	}
	check("token_embd.weight", 64, nv)
	check("blk.1.attn_k.weight", 64, 32)
	check("blk.0.ffn_down.weight", 128, 64)
	check("output.weight", 64, nv)
	check("output_norm.weight", 64)
	// The data section holds every tensor: the file ends at the last one, padded.
	fi, _ := os.Stat(path)
	var end uint64
	for _, in := range tensors {
		size := uint64(1)
		for _, d := range in.dims {
			size *= d
		}
		if in.typ == ggmlF16 {
			size *= 2
		} else {
			size *= 4
		}
		end = max(end, in.offset+size)
	}
	if want := start + int64((end+alignment-1)/alignment*alignment); fi.Size() != want {
		t.Errorf("file is %d bytes, want %d", fi.Size(), want)
	}
	// Deterministic from the seed.
	again := filepath.Join(t.TempDir(), "m2.gguf")
	Write(again, cfg)
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different file")
	}
}

func TestVocabWholeWords(t *testing.T) {
	t.Parallel()
	v := BuildVocab(50)
	words := 0
	for i, tok := range v.Tokens {
		if v.Word[i] {
			words++
			if !strings.HasPrefix(tok, "\u2581") || len([]rune(tok)) < 3 {
				t.Errorf("word token %q", tok)
			}
		}
	}
	if words != 50 {
		t.Errorf("%d whole words, want 50", words)
	}
}

func TestF16(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   float32
		want uint16
	}{{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff}, {1e9, 0x7c00}, {6e-8, 0x0001}} {
		if got := f16(c.in); got != c.want {
			t.Errorf("f16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}
