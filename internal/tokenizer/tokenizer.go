// Package tokenizer counts tokens and makes text of an exact token count.
//
// A Tokenizer is one of:
//   - builtin, the default: OpenAI's o200k_base BPE, embedded in the binary
//     (cl100k_base is there too), fully offline;
//   - a Hugging Face tokenizer.json (byte-level BPE: the Qwen, Llama-3 and
//     GPT-2 families), from a path, a folder, or ORG/NAME found in the local
//     Hugging Face cache. Nothing is downloaded.
//
// Synthetic prompts are made of Words: a corpus of common words the
// project ships (words.txt) filtered, when a tokenizer is loaded, to those
// that are one token both alone and after a space. A prompt of n of them,
// space-separated, re-encodes to exactly n tokens; Load checks that the
// tokenizer splits words at spaces, so that this holds, before it is used.
package tokenizer

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

// Tokenizer counts tokens with one encoding. It is safe for concurrent use.
type Tokenizer struct {
	name   string // what the user gave, or the builtin encoding's name
	digest string // identity in a profile_hash: the encoding's name, or the file's sha256
	enc    encoder
	words  *Vocab
}

// encoder is one encoding: the ids of s, special tokens matched where the
// encoding has them in text, none added.
type encoder interface {
	encode(s string, yield func(id int)) error
}

// countOf is how many tokens enc makes of s.
func countOf(enc encoder, s string) (int, error) {
	n := 0
	err := enc.encode(s, func(int) { n++ })
	return n, err
}

// Name is the tokenizer as the user named it (builtin: the encoding).
func (t *Tokenizer) Name() string { return t.name }

// Digest identifies the encoding: "o200k_base", or "sha256:…" of the
// tokenizer.json, so one file read from two paths is one tokenizer.
func (t *Tokenizer) Digest() string { return t.digest }

// Words is the corpus of words that are one token each in this tokenizer.
func (t *Tokenizer) Words() *Vocab { return t.words }

// Encode returns the ids of s, with no special tokens added (a chat
// template's are the server's to add).
func (t *Tokenizer) Encode(s string) ([]int, error) {
	var ids []int
	err := t.enc.encode(s, func(id int) { ids = append(ids, id) })
	return ids, err
}

// Count is the number of tokens in s. Text made of this tokenizer's Words,
// one space between each, is counted by its words (exact by construction,
// and much faster than encoding); anything else is encoded.
func (t *Tokenizer) Count(s string) int {
	if n, ok := t.words.count(s); ok {
		return n
	}
	n, err := countOf(t.enc, s)
	if err != nil {
		// (The encodings here fail only on a regular expression timeout,
		// which none sets; count words rather than say 0.)
		return len(strings.Fields(s))
	}
	return n
}

// Vocab is a list of words, each one token alone and after a space.
type Vocab struct {
	words []string
	index map[string]int
	// ids[i] is word i's id alone and after a space; byID is the other way
	// (a word's index, and whether the id is its spaced one).
	ids  [][2]int
	byID map[int]wordID
}

type wordID struct {
	word   int
	spaced bool
}

// Len is the number of words.
func (v *Vocab) Len() int { return len(v.words) }

// Word is the i-th word (i taken modulo Len).
func (v *Vocab) Word(i int) string {
	if i < 0 {
		i = -i
	}
	return v.words[i%len(v.words)]
}

// Index is w's position, if it is one of the words.
func (v *Vocab) Index(w string) (int, bool) {
	i, ok := v.index[w]
	return i, ok
}

// ID is the id of word i (taken modulo Len), alone or after a space.
func (v *Vocab) ID(i int, spaced bool) int {
	if i < 0 {
		i = -i
	}
	id := v.ids[i%len(v.ids)]
	if spaced {
		return id[1]
	}
	return id[0]
}

// OfID is the word whose id (alone, or after a space: spaced) id is.
func (v *Vocab) OfID(id int) (word int, spaced, ok bool) {
	w, ok := v.byID[id]
	return w.word, w.spaced, ok
}

// Text is n words drawn from r, space-separated: n tokens.
func (v *Vocab) Text(n int, r *rand.Rand) string {
	b := make([]byte, 0, n*8)
	for k := 0; k < n; k++ {
		if k > 0 {
			b = append(b, ' ')
		}
		b = append(b, v.words[r.IntN(len(v.words))]...)
	}
	return string(b)
}

// Skip makes the draws Text(n, r) would, making no text.
func (v *Vocab) Skip(n int, r *rand.Rand) {
	for range n {
		r.IntN(len(v.words))
	}
}

// count counts s by its words if it is made of them, single-spaced (with
// at most one leading space, as a stream of " word" chunks is).
func (v *Vocab) count(s string) (int, bool) {
	s = strings.TrimPrefix(s, " ")
	if s == "" {
		return 0, false
	}
	n := 0
	for {
		w, rest, more := strings.Cut(s, " ")
		if _, ok := v.index[w]; !ok {
			return 0, false
		}
		n++
		if !more {
			return n, true
		}
		s = rest
	}
}

//go:embed words.txt
var corpus string

// corpusWords is words.txt, one word a line.
func corpusWords() []string { return strings.Fields(corpus) }

// minWords is the fewest corpus words a tokenizer must keep as single
// tokens for its synthetic prompts to be varied.
const minWords = 1024

// newVocab keeps the corpus words that are one token alone and after a
// space in enc, and checks that space-separated words stay one token each
// (the pre-tokenizer splits at spaces).
func newVocab(name string, enc encoder) (*Vocab, error) {
	one := func(s string) (int, bool) {
		id, n := -1, 0
		err := enc.encode(s, func(x int) { id, n = x, n+1 })
		return id, err == nil && n == 1
	}
	v := &Vocab{index: map[string]int{}, byID: map[int]wordID{}}
	for _, w := range corpusWords() {
		alone, ok1 := one(w)
		spaced, ok2 := one(" " + w)
		if ok1 && ok2 {
			v.index[w] = len(v.words)
			v.byID[alone] = wordID{len(v.words), false}
			v.byID[spaced] = wordID{len(v.words), true}
			v.words = append(v.words, w)
			v.ids = append(v.ids, [2]int{alone, spaced})
		}
	}
	if len(v.words) < minWords {
		return nil, fmt.Errorf("tokenizer %s: only %d of the %d corpus words are one token each (want %d): it is not a byte-level BPE tokenizer this tool can make exact-length prompts for",
			name, len(v.words), len(corpusWords()), minWords)
	}
	// Every word once, in a seeded order, as one text.
	r := rand.New(rand.NewPCG(1, 2))
	perm := r.Perm(len(v.words))
	var b strings.Builder
	for k, j := range perm {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v.words[j])
	}
	if n, err := countOf(enc, b.String()); err != nil || n != len(v.words) {
		return nil, fmt.Errorf("tokenizer %s: %d words, space-separated, encode to %d tokens: its pre-tokenizer does not split at spaces, so prompt lengths can't be made exact",
			name, len(v.words), n)
	}
	return v, nil
}

// Builtin encodings.
const (
	O200k  = "o200k_base"
	CL100k = "cl100k_base"
)

var (
	builtinOnce sync.Once
	builtin     *Tokenizer
)

// Builtin is the default tokenizer, o200k_base.
func Builtin() *Tokenizer {
	builtinOnce.Do(func() {
		t, err := load(O200k, "")
		if err != nil {
			panic("tokenizer: the builtin encoding does not load: " + err.Error())
		}
		builtin = t
	})
	return builtin
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// Load returns the tokenizer spec names: "" or "builtin" (o200k_base),
// o200k_base or cl100k_base, a tokenizer.json path or a folder holding
// one, or a Hugging Face ORG/NAME found in the local cache at revision
// (default main). A loaded tokenizer is kept for the process, so loading
// one again costs nothing.
func Load(spec, revision string) (*Tokenizer, error) {
	if spec == "" || spec == "builtin" || spec == O200k {
		return Builtin(), nil
	}
	key := spec + "@" + revision
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if t, ok := loaded[key]; ok {
		return t, nil
	}
	t, err := load(spec, revision)
	if err != nil {
		return nil, err
	}
	loaded[key] = t
	return t, nil
}

func load(spec, revision string) (*Tokenizer, error) {
	t := &Tokenizer{name: spec}
	switch spec {
	case O200k, CL100k:
		enc, err := newTiktoken(spec)
		if err != nil {
			return nil, err
		}
		t.digest, t.enc = spec, enc
	default:
		path, err := Resolve(spec, revision)
		if err != nil {
			return nil, err
		}
		h, digest, err := loadHF(path)
		if err != nil {
			return nil, err
		}
		t.digest, t.enc = digest, h
	}
	v, err := newVocab(spec, t.enc)
	if err != nil {
		return nil, err
	}
	t.words = v
	return t, nil
}

// VocabSize is the number of words in the builtin tokenizer's Words: the
// whole corpus, which was chosen as one-token words of o200k_base.
const VocabSize = 4096

// Word is the builtin tokenizer's i-th word.
func Word(i int) string { return Builtin().words.Word(i) }

// Count counts s with the builtin tokenizer.
func Count(s string) int { return Builtin().Count(s) }

// IsSpace is what separates words in synthetic text: ASCII space, tab, CR
// and LF.
func IsSpace(c rune) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }
