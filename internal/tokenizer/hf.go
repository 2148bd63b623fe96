package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
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
