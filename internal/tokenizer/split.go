package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A fast splitter for ASCII text: the split patterns of o200k_base and of
// the cl100k_base family (cl100k_base, Llama-3, Qwen2/3), written out by
// hand. On ASCII their character classes are simple (a letter is A-Z or
// a-z, a number 0-9, a space one of \t\n\v\f\r and ' '), and the regular
// expression engine, which backtracks rune by rune, is most of an
// encoding's cost. Text with any other byte goes to the engine. Each
// function tries the pattern's alternatives at a position in the
// pattern's order and takes the first that matches, as the engine does;
// FuzzSplitASCII holds every one to the engine's pieces.

// splitKind is which pattern a fast splitter follows.
type splitKind int

const (
	splitNone   splitKind = iota
	splitO200k            // o200k_base
	splitCL100k           // cl100k_base and Llama-3: numbers in threes
	splitQwen             // Qwen2/3: the cl100k pattern with single digits
)

// qwenSplit is Qwen's split pattern as its tokenizer.json spells it
// (Llama-3's is cl100k_base's, cl100kSplit).
const qwenSplit = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// fastSplitFor is the fast splitter that follows pat, if there is one.
func fastSplitFor(pat string) splitKind {
	switch pat {
	case o200kSplit:
		return splitO200k
	case cl100kSplit:
		return splitCL100k
	case qwenSplit:
		return splitQwen
	}
	return splitNone
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isUpper(c byte) bool  { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool  { return c >= 'a' && c <= 'z' }
func isLetter(c byte) bool { return isUpper(c) || isLower(c) }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isSpace(c byte) bool  { return c == ' ' || c >= '\t' && c <= '\r' }

// isOther is [^\s\p{L}\p{N}].
func isOther(c byte) bool { return !isSpace(c) && !isLetter(c) && !isDigit(c) }

// isPrefix is [^\r\n\p{L}\p{N}].
func isPrefix(c byte) bool { return c != '\r' && c != '\n' && !isLetter(c) && !isDigit(c) }

// splitASCII calls yield with each piece of s (ASCII) as kind's pattern
// splits it.
func splitASCII(s string, kind splitKind, yield func(string)) {
	for i := 0; i < len(s); {
		n := matchAt(s, i, kind)
		if n == 0 { // (every ASCII byte starts some alternative; a guard)
			n = 1
		}
		yield(s[i : i+n])
		i += n
	}
}

// matchAt is the length of the pattern's match at s[i:].
func matchAt(s string, i int, kind splitKind) int {
	if kind == splitO200k {
		if n := o200kWord(s, i, true); n > 0 {
			return n
		}
		if n := o200kWord(s, i, false); n > 0 {
			return n
		}
	} else {
		if n := contraction(s, i); n > 0 {
			return n
		}
		if n := prefixedLetters(s, i); n > 0 {
			return n
		}
	}
	if isDigit(s[i]) {
		most := 3
		if kind == splitQwen {
			most = 1
		}
		n := 1
		for n < most && i+n < len(s) && isDigit(s[i+n]) {
			n++
		}
		return n
	}
	if n := punctuation(s, i, kind == splitO200k); n > 0 {
		return n
	}
	return spaces(s, i)
}

// contraction is (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i:], or 0.
func contraction(s string, i int) int {
	if s[i] != '\'' || i+1 >= len(s) {
		return 0
	}
	rest := strings.ToLower(s[i+1 : min(len(s), i+3)])
	for _, c := range []string{"s", "t", "re", "ve", "m", "ll", "d"} {
		if strings.HasPrefix(rest, c) {
			return 1 + len(c)
		}
	}
	return 0
}

// prefixedLetters is [^\r\n\p{L}\p{N}]?\p{L}+ at s[i:], or 0.
func prefixedLetters(s string, i int) int {
	j := i
	if isPrefix(s[j]) && j+1 < len(s) && isLetter(s[j+1]) {
		j++
	}
	if !isLetter(s[j]) {
		return 0
	}
	for j < len(s) && isLetter(s[j]) {
		j++
	}
	return j - i
}

// o200kWord is o200k's first (lowerFirst) or second word alternative at
// s[i:], or 0: [^\r\n\p{L}\p{N}]? then [A-Z]*[a-z]+ (first) or
// [A-Z]+[a-z]* (second), then an optional contraction. On ASCII no
// letter is in both classes, so the greedy runs need no backtracking;
// the optional prefix is tried first with its byte, then without.
func o200kWord(s string, i int, lowerFirst bool) int {
	try := func(j int) int {
		k := j
		for k < len(s) && isUpper(s[k]) {
			k++
		}
		upper := k - j
		l := k
		for l < len(s) && isLower(s[l]) {
			l++
		}
		lower := l - k
		if lowerFirst && lower == 0 || !lowerFirst && upper == 0 {
			return 0
		}
		if l < len(s) {
			l += contraction(s, l)
		}
		return l - i
	}
	if isPrefix(s[i]) && i+1 < len(s) {
		if n := try(i + 1); n > 0 {
			return n
		}
	}
	return try(i)
}

// punctuation is ` ?[^\s\p{L}\p{N}]+[\r\n]*` (o200k: `[\r\n/]*` after)
// at s[i:], or 0.
func punctuation(s string, i int, o200k bool) int {
	j := i
	if s[j] == ' ' && j+1 < len(s) && isOther(s[j+1]) {
		j++
	}
	if !isOther(s[j]) {
		return 0
	}
	for j < len(s) && isOther(s[j]) {
		j++
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || o200k && s[j] == '/') {
		j++
	}
	return j - i
}

// spaces is `\s*[\r\n]+|\s+(?!\S)|\s+` at s[i:], or 0.
func spaces(s string, i int) int {
	j := i
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	run := j - i
	if run == 0 {
		return 0
	}
	// \s*[\r\n]+: up to the run's last line break.
	for k := j - 1; k >= i; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1 - i
		}
	}
	// \s+(?!\S): the run, at the end of the text; else all but its last,
	// which then starts the next piece (a space before a word).
	if j == len(s) {
		return run
	}
	if run >= 2 {
		return run - 1
	}
	return run // \s+
}

// splitMixed splits any text as the engine re would, handing its ASCII
// stretches to the fast splitter. It cuts the text where a piece always
// ends, whatever came before: before a space that follows a letter, a
// number or a non-space ASCII byte (no alternative of these patterns
// takes such a character and then a space; a space only ever starts a
// piece, as the optional prefix or in a run of spaces), and the patterns
// look behind nothing. Runs of stretches of one kind go together: ASCII
// to splitASCII, the rest to the engine.
func splitMixed(s string, kind splitKind, engine func(string, func(string)) error, yield func(string)) error {
	if isASCII(s) {
		splitASCII(s, kind, yield)
		return nil
	}
	start, seg := 0, 0 // the pending stretch s[start:seg], of one kind
	ascii := true
	flush := func(end int) error {
		if end <= start {
			return nil
		}
		if ascii {
			splitASCII(s[start:end], kind, yield)
			return nil
		}
		return engine(s[start:end], yield)
	}
	for p := 1; p <= len(s); p++ {
		if p < len(s) && !(s[p] == ' ' && cutsBefore(s[:p])) {
			continue
		}
		a := isASCII(s[seg:p])
		if seg == start {
			ascii = a
		} else if a != ascii {
			if err := flush(seg); err != nil {
				return err
			}
			start, ascii = seg, a
		}
		seg = p
	}
	return flush(len(s))
}

// cutsBefore reports whether a piece always ends after head's last
// character (when a space follows): it is not a space.
func cutsBefore(head string) bool {
	c := head[len(head)-1]
	if c < 0x80 {
		return !isSpace(c)
	}
	r, _ := utf8.DecodeLastRuneInString(head)
	return unicode.IsLetter(r) || unicode.IsNumber(r) // (surely not \s; other characters are left uncut)
}
