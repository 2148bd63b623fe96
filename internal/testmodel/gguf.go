// Package testmodel writes a tiny llama-architecture GGUF v3 model with
// seeded random weights, so that a real inference server (llama.cpp's
// llama-server) can run in CI without downloading weights.
//
// The model is nonsense by design, but shaped so that every generation
// runs to max_tokens as whole words: each embedding carries a constant
// "bias" dimension that no layer writes to (its rows in attn_output and
// ffn_down are zero), and the output weights on that dimension are large
// and negative for every token that is not a space-prefixed word (control,
// byte and partial tokens, EOS included). The tokenizer is SentencePiece
// ("llama") over the builtin vocabulary, with every prefix of every word so
// that merges form whole words; a prompt word is one token.
package testmodel

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Config is the model's shape.
type Config struct {
	Seed       uint64
	Dim        int // embedding length
	Layers     int
	Heads      int
	KVHeads    int
	FF         int // feed-forward length
	Context    int
	VocabWords int // words of the builtin vocabulary to include (≤ tokenizer.VocabSize)
}

// Small and Medium are the two sizes REALSERVER.md measured: about 9 ms /
// 0.25 ms and 117 ms / 2.6 ms TTFT/ITL on this machine, one thread.
var (
	Small  = Config{Seed: 1, Dim: 256, Layers: 4, Heads: 4, KVHeads: 4, FF: 768, Context: 8192, VocabWords: tokenizer.VocabSize}
	Medium = Config{Seed: 1, Dim: 768, Layers: 8, Heads: 12, KVHeads: 4, FF: 2048, Context: 8192, VocabWords: tokenizer.VocabSize}
)

// GGUF value types.
const (
	tUint32  = 4
	tInt32   = 5
	tFloat32 = 6
	tBool    = 7
	tString  = 8
	tArray   = 9
)

// GGML tensor types.
const (
	ggmlF32 = 0
	ggmlF16 = 1
)

const alignment = 32

// Token types in tokenizer.ggml.token_type.
const (
	tokNormal  = 1
	tokUnknown = 2
	tokControl = 3
	tokByte    = 6
)

// Vocab is the tokenizer: tokens, scores and types, and which are whole
// space-prefixed words.
type Vocab struct {
	Tokens []string
	Scores []float32
	Types  []int32
	Word   []bool
}

// BuildVocab makes the SentencePiece vocabulary.
func BuildVocab(words int) *Vocab {
	v := &Vocab{}
	add := func(tok string, score float32, typ int32, word bool) {
		v.Tokens = append(v.Tokens, tok)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, typ)
		v.Word = append(v.Word, word)
	}
	add("<unk>", 0, tokUnknown, false)
	add("<s>", 0, tokControl, false)
	add("</s>", 0, tokControl, false)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), 0, tokByte, false)
	}
	seen := map[string]bool{}
	const sp = "\u2581" // SentencePiece's space marker
	add(sp, -1000, tokNormal, false)
	seen[sp] = true
	for c := 'a'; c <= 'z'; c++ {
		add(string(c), -1000, tokNormal, false)
		seen[string(c)] = true
	}
	for i := 0; i < min(words, tokenizer.VocabSize); i++ {
		w := []rune(sp + tokenizer.Word(i))
		for n := 2; n <= len(w); n++ {
			tok := string(w[:n])
			if seen[tok] {
				if n == len(w) { // a whole word that was a prefix before
					v.Word[indexOf(v.Tokens, tok)] = true
				}
				continue
			}
			seen[tok] = true
			// Longer pieces merge first; whole words are what is generated.
			add(tok, float32(n)-100, tokNormal, n == len(w))
		}
	}
	return v
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

type tensor struct {
	name string
	dims []uint64 // ggml order: {in, out}
	data []float32
}

// Write writes the model to path atomically.
func Write(path string, cfg Config) error {
	v := BuildVocab(cfg.VocabWords)
	r := rand.New(rand.NewPCG(cfg.Seed, 0x6775_6666))
	nv := len(v.Tokens)
	d, ff := cfg.Dim, cfg.FF
	headDim := d / cfg.Heads
	kv := headDim * cfg.KVHeads
	bias := d - 1 // the constant dimension
	randn := func(n int, scale float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(r.NormFloat64() * scale)
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	// zeroOutRow clears output row `row` of a {in, out} matrix (it writes nothing there).
	zeroOutRow := func(m []float32, in, row int) {
		for i := 0; i < in; i++ {
			m[row*in+i] = 0
		}
	}
	emb := randn(nv*d, 1)
	for t := 0; t < nv; t++ {
		emb[t*d+bias] = 4
	}
	out := randn(nv*d, 0.05)
	for t := 0; t < nv; t++ {
		out[t*d+bias] = 0
		if !v.Word[t] {
			out[t*d+bias] = -50
		}
	}
	ts := []tensor{{"token_embd.weight", []uint64{uint64(d), uint64(nv)}, emb}}
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		ao := randn(d*d, 0.02)
		zeroOutRow(ao, d, bias)
		fd := randn(ff*d, 0.02)
		zeroOutRow(fd, ff, bias)
		ts = append(ts,
			tensor{p + "attn_norm.weight", []uint64{uint64(d)}, ones(d)},
			tensor{p + "attn_q.weight", []uint64{uint64(d), uint64(d)}, randn(d*d, 0.05)},
			tensor{p + "attn_k.weight", []uint64{uint64(d), uint64(kv)}, randn(d*kv, 0.05)},
			tensor{p + "attn_v.weight", []uint64{uint64(d), uint64(kv)}, randn(d*kv, 0.05)},
			tensor{p + "attn_output.weight", []uint64{uint64(d), uint64(d)}, ao},
			tensor{p + "ffn_norm.weight", []uint64{uint64(d)}, ones(d)},
			tensor{p + "ffn_gate.weight", []uint64{uint64(d), uint64(ff)}, randn(d*ff, 0.05)},
			tensor{p + "ffn_up.weight", []uint64{uint64(d), uint64(ff)}, randn(d*ff, 0.05)},
			tensor{p + "ffn_down.weight", []uint64{uint64(ff), uint64(d)}, fd},
		)
	}
	ts = append(ts, tensor{"output_norm.weight", []uint64{uint64(d)}, ones(d)},
		tensor{"output.weight", []uint64{uint64(d), uint64(nv)}, out})

	tmp, err := os.CreateTemp(filepath.Dir(path), ".gguf-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := encode(w, cfg, v, ts, headDim); err != nil {
		tmp.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ChatTemplate is ChatML, as a Jinja template for llama.cpp.
const ChatTemplate = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"

type kvw struct {
	w   io.Writer
	n   int
	err error
}

func (k *kvw) put(v any) {
	if k.err == nil {
		k.err = binary.Write(k.w, binary.LittleEndian, v)
	}
}

func (k *kvw) str(s string) {
	k.put(uint64(len(s)))
	if k.err == nil {
		_, k.err = io.WriteString(k.w, s)
	}
}

func (k *kvw) key(name string, typ uint32) {
	k.n++
	k.str(name)
	k.put(typ)
}

func encode(w io.Writer, cfg Config, v *Vocab, ts []tensor, headDim int) error {
	// Metadata first into a buffer-free two-pass: count keys as written.
	type meta func(k *kvw)
	u32 := func(name string, x uint32) meta { return func(k *kvw) { k.key(name, tUint32); k.put(x) } }
	f32 := func(name string, x float32) meta { return func(k *kvw) { k.key(name, tFloat32); k.put(x) } }
	str := func(name, x string) meta { return func(k *kvw) { k.key(name, tString); k.str(x) } }
	boolean := func(name string, x bool) meta {
		return func(k *kvw) {
			k.key(name, tBool)
			b := uint8(0)
			if x {
				b = 1
			}
			k.put(b)
		}
	}
	metas := []meta{
		str("general.architecture", "llama"),
		str("general.name", "aiperf-action test model"),
		u32("general.alignment", alignment),
		u32("llama.context_length", uint32(cfg.Context)),
		u32("llama.embedding_length", uint32(cfg.Dim)),
		u32("llama.block_count", uint32(cfg.Layers)),
		u32("llama.feed_forward_length", uint32(cfg.FF)),
		u32("llama.rope.dimension_count", uint32(headDim)),
		f32("llama.rope.freq_base", 10000),
		u32("llama.attention.head_count", uint32(cfg.Heads)),
		u32("llama.attention.head_count_kv", uint32(cfg.KVHeads)),
		f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
		u32("llama.vocab_size", uint32(len(v.Tokens))),
		str("tokenizer.ggml.model", "llama"),
		func(k *kvw) {
			k.key("tokenizer.ggml.tokens", tArray)
			k.put(uint32(tString))
			k.put(uint64(len(v.Tokens)))
			for _, t := range v.Tokens {
				k.str(t)
			}
		},
		func(k *kvw) {
			k.key("tokenizer.ggml.scores", tArray)
			k.put(uint32(tFloat32))
			k.put(uint64(len(v.Scores)))
			k.put(v.Scores)
		},
		func(k *kvw) {
			k.key("tokenizer.ggml.token_type", tArray)
			k.put(uint32(tInt32))
			k.put(uint64(len(v.Types)))
			k.put(v.Types)
		},
		u32("tokenizer.ggml.unknown_token_id", 0),
		u32("tokenizer.ggml.bos_token_id", 1),
		u32("tokenizer.ggml.eos_token_id", 2),
		boolean("tokenizer.ggml.add_bos_token", true),
		boolean("tokenizer.ggml.add_eos_token", false),
		str("tokenizer.chat_template", ChatTemplate),
	}
	cw := &countingWriter{w: w}
	k := &kvw{w: cw}
	k.put([4]byte{'G', 'G', 'U', 'F'})
	k.put(uint32(3))
	k.put(uint64(len(ts)))
	k.put(uint64(len(metas)))
	for _, m := range metas {
		m(k)
	}
	// Tensor infos, then padding, then the data, each tensor aligned.
	var off uint64
	offsets := make([]uint64, len(ts))
	for i, t := range ts {
		offsets[i] = off
		size := uint64(len(t.data)) * 2 // F16
		if len(t.dims) == 1 {
			size = uint64(len(t.data)) * 4 // norms stay F32
		}
		off += (size + alignment - 1) / alignment * alignment
	}
	for i, t := range ts {
		k.str(t.name)
		k.put(uint32(len(t.dims)))
		for _, d := range t.dims {
			k.put(d)
		}
		if len(t.dims) == 1 {
			k.put(uint32(ggmlF32))
		} else {
			k.put(uint32(ggmlF16))
		}
		k.put(offsets[i])
	}
	pad(k, cw.n)
	start := cw.n
	for i, t := range ts {
		for cw.n-start < int64(offsets[i]) {
			k.put(uint8(0))
		}
		if len(t.dims) == 1 {
			k.put(t.data)
		} else {
			h := make([]uint16, len(t.data))
			for j, x := range t.data {
				h[j] = f16(x)
			}
			k.put(h)
		}
	}
	pad(k, cw.n)
	return k.err
}

func pad(k *kvw, n int64) {
	for n%alignment != 0 {
		k.put(uint8(0))
		n++
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// f16 converts to IEEE half precision (round to nearest even).
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := uint16(mant >> shift)
		if mant>>(shift-1)&1 == 1 && (mant&(1<<(shift-1)-1) != 0 || h&1 == 1) {
			h++
		}
		return sign | h
	}
	h := sign | uint16(exp)<<10 | uint16(mant>>13)
	if mant&0x1000 != 0 && (mant&0xfff != 0 || h&1 == 1) {
		h++
	}
	return h
}
