package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// hf is a Hugging Face tokenizer.json with a byte-level BPE model, encoded
// as the tokenizers library does with add_special_tokens off: added tokens
// split out first (special or not, as they appear in the text), then each
// remaining piece normalized, pre-tokenized and merged. Components this
// file does not implement are refused by name when the file is loaded,
// never approximated.
type hf struct {
	added       []addedToken
	rawAdded    *regexp.Regexp // added tokens matched before normalization
	normAdded   *regexp.Regexp // those matched after it
	normalize   func(string) string
	pre         []preStep
	vocab       map[string]int    // a token's raw bytes → id
	vocabByName map[string]int    // the model's vocabulary as the file spells it
	byteID      [256]int          // each byte's own token (-1: none)
	merges      map[[2]int]merged // a pair of ids → its rank and the merged id
	ignoreMrg   bool
	unk         int // -1: none
	cache       *pieceCache
}

type merged struct{ rank, id int }

// maxTokenizerFile bounds a tokenizer.json (the largest in use are ~30 MB).
const maxTokenizerFile = 512 << 20

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// preStep splits a piece into pieces.
type preStep func(s string) []string

type hfFile struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	Model         json.RawMessage `json:"model"`
	PostProcessor json.RawMessage `json:"post_processor"`
}

type hfModel struct {
	Type                    string            `json:"type"`
	Vocab                   map[string]int    `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
	Dropout                 *float64          `json:"dropout"`
	UnkToken                *string           `json:"unk_token"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	FuseUnk                 bool              `json:"fuse_unk"`
	ByteFallback            bool              `json:"byte_fallback"`
	IgnoreMerges            bool              `json:"ignore_merges"`
}

// loadHF reads a tokenizer.json; digest is its sha256.
func loadHF(path string) (*hf, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("--tokenizer: %w", err)
	}
	if !st.Mode().IsRegular() || st.Size() > maxTokenizerFile {
		return nil, "", fmt.Errorf("--tokenizer %s: not a regular file of at most %d MB", path, maxTokenizerFile>>20)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("--tokenizer: %w", err)
	}
	sum := sha256.Sum256(raw)
	h, err := parseHF(raw)
	if err != nil {
		return nil, "", fmt.Errorf("--tokenizer %s: %w", path, err)
	}
	return h, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// parseHF builds the encoder a tokenizer.json describes, listing every
// part of it that is not supported at once.
func parseHF(raw []byte) (*hf, error) {
	var f hfFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %v", err)
	}
	var problems []string
	h := &hf{unk: -1, cache: newPieceCache()}
	var err error
	if h.normalize, err = normalizer(f.Normalizer); err != nil {
		problems = append(problems, err.Error())
	}
	byteLevel := false
	if h.pre, err = preTokenizer(f.PreTokenizer, &byteLevel); err != nil {
		problems = append(problems, err.Error())
	} else if !byteLevel {
		problems = append(problems, "pre_tokenizer: no ByteLevel step: only byte-level BPE tokenizers (the Qwen, Llama-3 and GPT-2 families) are supported; give a tokenizer of that kind, or leave --tokenizer out for the builtin o200k_base")
	}
	if err := h.model(f.Model); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	h.addedTokens(f.AddedTokens)
	return h, nil
}

func typeOf(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var t struct {
		Type string `json:"type"`
	}
	json.Unmarshal(raw, &t)
	return t.Type, true
}

func normalizer(raw json.RawMessage) (func(string) string, error) {
	typ, ok := typeOf(raw)
	if !ok {
		return nil, nil
	}
	switch typ {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Sequence":
		var s struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("normalizer: %v", err)
		}
		var fs []func(string) string
		for _, n := range s.Normalizers {
			f, err := normalizer(n)
			if err != nil {
				return nil, err
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("normalizer %q is not supported (NFC, NFD, NFKC, NFKD, Lowercase and Sequence are)", typ)
}

// gpt2Split is the ByteLevel pre-tokenizer's own regular expression (with
// use_regex), GPT-2's.
const gpt2Split = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func preTokenizer(raw json.RawMessage, byteLevel *bool) ([]preStep, error) {
	typ, ok := typeOf(raw)
	if !ok {
		return nil, nil
	}
	switch typ {
	case "Sequence":
		var s struct {
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("pre_tokenizer: %v", err)
		}
		var steps []preStep
		for _, p := range s.Pretokenizers {
			st, err := preTokenizer(p, byteLevel)
			if err != nil {
				return nil, err
			}
			steps = append(steps, st...)
		}
		return steps, nil
	case "ByteLevel":
		var b struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("pre_tokenizer ByteLevel: %v", err)
		}
		*byteLevel = true
		var steps []preStep
		if b.AddPrefixSpace {
			steps = append(steps, func(s string) []string {
				if !strings.HasPrefix(s, " ") {
					s = " " + s
				}
				return []string{s}
			})
		}
		if b.UseRegex == nil || *b.UseRegex { // (the library's default is true)
			re := regexp2.MustCompile(alternativesGrouped(gpt2Split), regexp2.None)
			steps = append(steps, splitStep(re, "Isolated"))
		}
		return steps, nil
	case "Split":
		var s struct {
			Pattern struct {
				Regex  *string `json:"Regex"`
				String *string `json:"String"`
			} `json:"pattern"`
			Behavior string `json:"behavior"`
			Invert   bool   `json:"invert"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %v", err)
		}
		if s.Invert {
			return nil, fmt.Errorf("pre_tokenizer Split with invert is not supported")
		}
		switch s.Behavior {
		case "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous":
		default:
			return nil, fmt.Errorf("pre_tokenizer Split behavior %q is not supported", s.Behavior)
		}
		var pat string
		switch {
		case s.Pattern.Regex != nil:
			pat = *s.Pattern.Regex
		case s.Pattern.String != nil:
			pat = regexp2.Escape(*s.Pattern.String)
		default:
			return nil, fmt.Errorf("pre_tokenizer Split: no pattern")
		}
		re, err := regexp2.Compile(alternativesGrouped(pat), regexp2.None)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: pattern %q: %v", pat, err)
		}
		step := splitStep(re, s.Behavior)
		if kind := fastSplitFor(pat); kind != splitNone && s.Behavior == "Isolated" {
			// (A pattern the hand-written splitter follows: it takes ASCII
			// pieces, the engine the rest.)
			step = func(t string) []string {
				var out []string
				splitMixed(t, kind, func(u string, yield func(string)) error { return engineSplit(re, u, yield) },
					func(p string) { out = append(out, p) })
				return out
			}
		}
		return []preStep{step}, nil
	case "Digits":
		var d struct {
			IndividualDigits bool `json:"individual_digits"`
		}
		json.Unmarshal(raw, &d)
		pat := `\p{N}+`
		if d.IndividualDigits {
			pat = `\p{N}`
		}
		return []preStep{splitStep(regexp2.MustCompile(pat, regexp2.None), "Isolated")}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer %q is not supported (ByteLevel, Split, Digits and Sequence are)", typ)
}

// splitStep splits at re's matches, keeping them as behavior says (the
// tokenizers library's SplitDelimiterBehavior). Empty pieces are dropped.
func splitStep(re *regexp2.Regexp, behavior string) preStep {
	return func(s string) []string {
		runes := []rune(s)
		type span struct {
			lo, hi int
			match  bool
		}
		var spans []span
		at := 0
		m, _ := re.FindRunesMatch(runes)
		for m != nil {
			lo, hi := m.RuneIndex, m.RuneIndex+m.RuneLength
			if lo > at {
				spans = append(spans, span{at, lo, false})
			}
			if hi > lo {
				spans = append(spans, span{lo, hi, true})
			}
			at = hi
			m, _ = re.FindNextMatch(m)
		}
		if at < len(runes) {
			spans = append(spans, span{at, len(runes), false})
		}
		var out []string
		text := func(sp span) string { return string(runes[sp.lo:sp.hi]) }
		switch behavior {
		case "Isolated":
			for _, sp := range spans {
				out = append(out, text(sp))
			}
		case "Removed":
			for _, sp := range spans {
				if !sp.match {
					out = append(out, text(sp))
				}
			}
		case "MergedWithPrevious":
			for _, sp := range spans {
				if sp.match && len(out) > 0 {
					out[len(out)-1] += text(sp)
				} else {
					out = append(out, text(sp))
				}
			}
		case "MergedWithNext":
			pending := ""
			for _, sp := range spans {
				if sp.match {
					pending += text(sp)
				} else {
					out = append(out, pending+text(sp))
					pending = ""
				}
			}
			if pending != "" {
				out = append(out, pending)
			}
		case "Contiguous":
			for k, sp := range spans {
				if sp.match && k > 0 && spans[k-1].match {
					out[len(out)-1] += text(sp)
				} else {
					out = append(out, text(sp))
				}
			}
		}
		return out
	}
}

// byteRunes is GPT-2's byte-to-character table: the printable bytes stand
// for themselves, the rest for 256 and on, in order.
var byteRunes = func() (t [256]rune) {
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			t[b] = rune(b)
		} else {
			t[b] = rune(256 + n)
			n++
		}
	}
	return t
}()

// rawBytes turns a byte-level token back into the bytes it stands for
// (false: it holds a character outside the table).
func rawBytes(tok string, inv map[rune]byte) (string, bool) {
	b := make([]byte, 0, len(tok))
	for _, r := range tok {
		c, ok := inv[r]
		if !ok {
			return "", false
		}
		b = append(b, c)
	}
	return string(b), true
}

func (h *hf) model(raw json.RawMessage) error {
	var m hfModel
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("model: %v", err)
	}
	var problems []string
	if m.Type != "BPE" {
		problems = append(problems, fmt.Sprintf("model %q is not supported (BPE is)", m.Type))
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		problems = append(problems, "model: BPE dropout is not supported")
	}
	if m.ByteFallback {
		problems = append(problems, "model: byte_fallback is not supported (it belongs to SentencePiece-style BPE)")
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		problems = append(problems, "model: continuing_subword_prefix and end_of_word_suffix are not supported")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	inv := make(map[rune]byte, 256)
	for b, r := range byteRunes {
		inv[r] = byte(b)
	}
	h.vocab = make(map[string]int, len(m.Vocab))
	h.vocabByName = m.Vocab
	byName := func(tok string) (int, bool) {
		id, ok := m.Vocab[tok]
		return id, ok
	}
	for tok, id := range m.Vocab {
		if rb, ok := rawBytes(tok, inv); ok {
			h.vocab[rb] = id
		}
	}
	for b := range h.byteID {
		h.byteID[b] = -1
		if id, ok := byName(string(byteRunes[b])); ok {
			h.byteID[b] = id
		}
	}
	if m.UnkToken != nil {
		if id, ok := byName(*m.UnkToken); ok {
			h.unk = id
		}
	}
	h.ignoreMrg = m.IgnoreMerges
	h.merges = make(map[[2]int]merged, len(m.Merges))
	for rank, mr := range m.Merges {
		var a, b string
		var pair []string
		if err := json.Unmarshal(mr, &pair); err == nil && len(pair) == 2 {
			a, b = pair[0], pair[1]
		} else {
			var s string
			if json.Unmarshal(mr, &s) != nil {
				return fmt.Errorf("model: merge %d: want \"a b\" or [a, b]", rank)
			}
			var ok bool
			if a, b, ok = strings.Cut(s, " "); !ok {
				return fmt.Errorf("model: merge %d %q: want two tokens", rank, s)
			}
		}
		ia, oka := byName(a)
		ib, okb := byName(b)
		ic, okc := byName(a + b)
		if !oka || !okb || !okc {
			return fmt.Errorf("model: merge %d (%q %q) names a token the vocabulary lacks", rank, a, b)
		}
		if _, dup := h.merges[[2]int{ia, ib}]; !dup {
			h.merges[[2]int{ia, ib}] = merged{rank, ic}
		}
	}
	return nil
}

// addedTokens takes the added tokens with the ids the tokenizers library
// gives them, which is not always the file's "id": a token the model's
// vocabulary has takes that id, and any other the next id past the
// vocabulary and the tokens added before it (the file's ids agree when
// they follow on from the vocabulary, as Qwen's and Llama's do).
func (h *hf) addedTokens(ts []addedToken) {
	var raw, normed []string
	next := -1
	for _, t := range ts {
		if t.Content == "" {
			continue
		}
		if _, dup := h.addedByContent(t.Content, t.Normalized); dup {
			continue
		}
		if id, ok := h.vocabByName[t.Content]; ok {
			t.ID = id
		} else {
			if next < 0 {
				next = len(h.vocabByName)
			}
			t.ID = next
			next++
		}
		h.added = append(h.added, t)
		if t.Normalized {
			normed = append(normed, t.Content)
		} else {
			raw = append(raw, t.Content)
		}
	}
	// Longest first: Go's leftmost-first alternation then finds the
	// leftmost-longest match, as the library's matcher does.
	alt := func(cs []string) *regexp.Regexp {
		if len(cs) == 0 {
			return nil
		}
		cs = slices.Clone(cs)
		slices.SortStableFunc(cs, func(a, b string) int { return len(b) - len(a) })
		q := make([]string, len(cs))
		for i, c := range cs {
			q[i] = regexp.QuoteMeta(c)
		}
		return regexp.MustCompile(strings.Join(q, "|"))
	}
	h.rawAdded, h.normAdded = alt(raw), alt(normed)
}

func (h *hf) addedByContent(c string, normalized bool) (addedToken, bool) {
	for _, t := range h.added {
		if t.Content == c && t.Normalized == normalized {
			return t, true
		}
	}
	return addedToken{}, false
}

// segment is a piece of the input: an added token's id, or text.
type segment struct {
	text string
	id   int // -1: text
}

// splitAdded splits s at the added tokens re matches, honouring their
// lstrip, rstrip and single_word.
func (h *hf) splitAdded(s string, re *regexp.Regexp, normalized bool) []segment {
	if re == nil || s == "" {
		return []segment{{s, -1}}
	}
	var out []segment
	at := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		lo, hi := m[0], m[1]
		if lo < at {
			continue // (absorbed by the previous match's rstrip)
		}
		t, _ := h.addedByContent(s[lo:hi], normalized)
		if t.SingleWord && (lo > 0 && isWordRune(lastRune(s[:lo])) || hi < len(s) && isWordRune(firstRune(s[hi:]))) {
			continue
		}
		if t.LStrip {
			for lo > at {
				r, n := utf8.DecodeLastRuneInString(s[at:lo])
				if !unicode.IsSpace(r) {
					break
				}
				lo -= n
			}
		}
		if t.RStrip {
			for hi < len(s) {
				r, n := utf8.DecodeRuneInString(s[hi:])
				if !unicode.IsSpace(r) {
					break
				}
				hi += n
			}
		}
		if lo > at {
			out = append(out, segment{s[at:lo], -1})
		}
		out = append(out, segment{"", t.ID})
		at = hi
	}
	if at < len(s) {
		out = append(out, segment{s[at:], -1})
	}
	return out
}

func isWordRune(r rune) bool  { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
func lastRune(s string) rune  { r, _ := utf8.DecodeLastRuneInString(s); return r }
func firstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }

func (h *hf) encode(s string, yield func(int)) error {
	for _, seg := range h.splitAdded(s, h.rawAdded, false) {
		if seg.id >= 0 {
			yield(seg.id)
			continue
		}
		text := seg.text
		if h.normalize != nil {
			text = h.normalize(text)
		}
		for _, sub := range h.splitAdded(text, h.normAdded, true) {
			if sub.id >= 0 {
				yield(sub.id)
				continue
			}
			pieces := []string{sub.text}
			for _, step := range h.pre {
				var next []string
				for _, p := range pieces {
					next = append(next, step(p)...)
				}
				pieces = next
			}
			for _, p := range pieces {
				for _, id := range h.bpe(p) {
					yield(id)
				}
			}
		}
	}
	return nil
}

func (h *hf) count(s string) (int, error) {
	n := 0
	err := h.encode(s, func(int) { n++ })
	return n, err
}

// bpe merges one pre-tokenized piece: the lowest-ranked adjacent pair
// first, the leftmost of equal ranks, until no pair merges.
func (h *hf) bpe(piece string) []int {
	if piece == "" {
		return nil
	}
	if h.ignoreMrg {
		if id, ok := h.vocab[piece]; ok {
			return []int{id}
		}
	}
	return h.cache.get(piece, h.merge)
}

func (h *hf) merge(piece string) []int {
	syms := make([]int, 0, len(piece))
	for i := 0; i < len(piece); i++ {
		if id := h.byteID[piece[i]]; id >= 0 {
			syms = append(syms, id)
		} else if h.unk >= 0 {
			syms = append(syms, h.unk)
		}
	}
	return bpeMerge(syms,
		func(a, b int) (int, bool) { m, ok := h.merges[[2]int{a, b}]; return m.rank, ok },
		func(a, b int) int { return h.merges[[2]int{a, b}].id })
}
