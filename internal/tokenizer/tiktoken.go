package tokenizer

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer/codec"
)

// tiktoken is an OpenAI encoding: its ranks are those tiktoken-go compiles
// into the binary, its split pattern OpenAI's, and the merging tiktoken's
// (the lowest-ranked adjacent pair first). Special tokens in text are
// encoded as text, as tiktoken's encode_ordinary does: a prompt that says
// "<|endoftext|>" is counted as the characters it is.
//
// tiktoken-go's own Encode is not used: its split disagrees with tiktoken
// on runs of whitespace ("\t\t \n \n" is one piece in tiktoken and two in
// tiktoken-go, through a regexp2 bug that wrapping each alternative of the
// pattern in a group avoids; see alternativesGrouped).
type tiktoken struct {
	split *regexp2.Regexp
	fast  splitKind // the hand-written splitter for ASCII text
	ranks map[string]uint
	cache *pieceCache
}

const (
	o200kSplit  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kSplit = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

func newTiktoken(name string) (*tiktoken, error) {
	c, pat, size := codec.NewO200kBase(), o200kSplit, 200000
	if name == CL100k {
		c, pat, size = codec.NewCl100kBase(), cl100kSplit, 100256
	}
	t := &tiktoken{cache: newPieceCache()}
	if r, ok := codecRanks(c); ok {
		t.ranks = r
	} else {
		t.ranks = decodeRanks(c, size)
	}
	if len(t.ranks) < size*9/10 {
		return nil, fmt.Errorf("%s: only %d ranks in the embedded vocabulary", name, len(t.ranks))
	}
	re, err := regexp2.Compile(alternativesGrouped(pat), regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	t.split, t.fast = re, fastSplitFor(pat)
	return t, nil
}

// codecRanks is the codec's own rank table, read in place. tiktoken-go
// keeps it unexported and offers only Decode, one id at a time; rebuilding
// the table that way (decodeRanks) was two thirds of loading o200k_base:
// about 60 of 95 ms and 10 MB in every process that loads it, the
// controller and each worker alike. The field's name and type are checked
// (a map from string to an unsigned id), and any other shape, say from a
// new release of the module, falls back to decodeRanks; the table is only
// read, never written.
func codecRanks(c *codec.Codec) (map[string]uint, bool) { return rankField(c) }

// rankField reads the field "vocabulary" of the struct p points to, if it
// is a map from string to uint.
func rankField(p any) (map[string]uint, bool) {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f := v.Elem().FieldByName("vocabulary")
	if !f.IsValid() || f.Kind() != reflect.Map || f.Type().Key().Kind() != reflect.String ||
		f.Type().Elem().Kind() != reflect.Uint || !f.CanAddr() {
		return nil, false
	}
	return *(*map[string]uint)(unsafe.Pointer(f.UnsafeAddr())), true
}

// decodeRanks builds the rank table through the codec's public Decode.
func decodeRanks(c *codec.Codec, size int) map[string]uint {
	ranks := make(map[string]uint, size)
	for id := 0; id < size; id++ {
		if s, err := c.Decode([]uint{uint(id)}); err == nil {
			ranks[s] = uint(id)
		}
	}
	return ranks
}

func (t *tiktoken) encode(s string, yield func(int)) error {
	piece := func(p string) {
		if id, ok := t.ranks[p]; ok {
			yield(int(id))
			return
		}
		for _, id := range t.cache.get(p, t.merge) {
			yield(id)
		}
	}
	if t.fast != splitNone {
		return splitMixed(s, t.fast, t.engine, piece)
	}
	return t.engine(s, piece)
}

// engine splits s with the regular expression.
func (t *tiktoken) engine(s string, yield func(string)) error {
	return engineSplit(t.split, s, yield)
}

func engineSplit(re *regexp2.Regexp, s string, yield func(string)) error {
	m, err := re.FindStringMatch(s)
	for m != nil && err == nil {
		yield(m.String())
		m, err = re.FindNextMatch(m)
	}
	return err
}

// merge is tiktoken's byte pair merge: parts start as bytes; the adjacent
// pair whose concatenation has the lowest rank merges, the leftmost of
// equal ranks, until no concatenation is a token.
func (t *tiktoken) merge(piece string) []int {
	type part struct{ lo, hi int } // piece[lo:hi]
	parts := make([]part, len(piece))
	for i := range parts {
		parts[i] = part{i, i + 1}
	}
	parts = bpeMerge(parts,
		func(a, b part) (int, bool) { r, ok := t.ranks[piece[a.lo:b.hi]]; return int(r), ok },
		func(a, b part) part { return part{a.lo, b.hi} })
	ids := make([]int, len(parts))
	for k, p := range parts {
		ids[k] = int(t.ranks[piece[p.lo:p.hi]])
	}
	return ids
}

// alternativesGrouped wraps each top-level alternative of a pattern in a
// non-capturing group, which matches the same strings. regexp2 (v2.5 to
// v2.13) otherwise gets the split patterns of o200k_base, cl100k_base,
// Qwen and Llama-3 wrong: with all their alternatives at the top level,
// `\s*[\r\n]+` stops at the first line break of "\t\t \n \n" instead of
// the last.
func alternativesGrouped(pat string) string {
	var alts []string
	depth, start, inClass := 0, 0, false
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == '|' && depth == 0:
			alts = append(alts, pat[start:i])
			start = i + 1
		}
	}
	alts = append(alts, pat[start:])
	if len(alts) == 1 {
		return pat
	}
	for i, a := range alts {
		alts[i] = "(?:" + a + ")"
	}
	return strings.Join(alts, "|")
}

// pieceCache keeps the merges of pieces seen before (most words recur),
// up to a bound, so memory stays flat on any input.
type pieceCache struct {
	mu sync.RWMutex
	m  map[string][]int
}

const pieceCacheLimit = 1 << 16

func newPieceCache() *pieceCache { return &pieceCache{m: map[string][]int{}} }

func (c *pieceCache) get(piece string, merge func(string) []int) []int {
	c.mu.RLock()
	ids, ok := c.m[piece]
	c.mu.RUnlock()
	if ok {
		return ids
	}
	ids = merge(piece)
	c.mu.Lock()
	if len(c.m) < pieceCacheLimit {
		c.m[piece] = ids
	}
	c.mu.Unlock()
	return ids
}
