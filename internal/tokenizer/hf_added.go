package tokenizer

// A tokenizer.json's added tokens (special or not): their ids as the
// tokenizers library gives them, and how they are split out of a text
// before the rest is encoded (hf.go).

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
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
