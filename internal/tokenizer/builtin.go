// Package tokenizer counts and produces tokens.
//
// Builtin is a word-level placeholder: one token is one whitespace-separated
// word, drawn from a fixed, embedded vocabulary. It needs no files and no
// network, so synthetic prompts, the simulator and the client all agree on
// counts exactly. It is not a model tokenizer: lengths measured with it are
// word counts, and a later tokenizer that loads tokenizer.json replaces it
// where real token counts matter.
package tokenizer

// VocabSize is the number of distinct words in the builtin vocabulary.
const VocabSize = 4096

var vocab = buildVocab()

// buildVocab makes VocabSize pronounceable words from consonant-vowel
// syllables, deterministically, so that prompts look like text in logs.
func buildVocab() []string {
	cons := []string{"b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "sh", "th"}
	vows := []string{"a", "e", "i", "o", "u", "ai", "ea", "ou"}
	syl := make([]string, 0, len(cons)*len(vows))
	for _, c := range cons {
		for _, v := range vows {
			syl = append(syl, c+v)
		}
	}
	out := make([]string, 0, VocabSize)
	for i := 0; len(out) < VocabSize; i++ {
		a, b := syl[i%len(syl)], syl[(i/len(syl))%len(syl)]
		out = append(out, a+b)
	}
	return out
}

// Word returns the i-th vocabulary word (i is taken modulo VocabSize).
func Word(i int) string {
	if i < 0 {
		i = -i
	}
	return vocab[i%VocabSize]
}

var index = func() map[string]int {
	m := make(map[string]int, VocabSize)
	for i, w := range vocab {
		m[w] = i
	}
	return m
}()

// Index is the position of w in the vocabulary, if it is a word of it.
func Index(w string) (int, bool) {
	i, ok := index[w]
	return i, ok
}

// Count returns the number of builtin tokens in s: its whitespace-separated words.
func Count(s string) int { return CountBytes([]byte(s)) }

// CountBytes is Count for a byte slice.
func CountBytes(b []byte) int {
	var w WordCounter
	w.Write(b)
	return w.N
}

// IsSpace is what separates builtin tokens: ASCII space, tab, CR and LF.
func IsSpace(c rune) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// WordCounter counts builtin tokens in text that arrives in pieces: a word
// split across two pieces counts once.
type WordCounter struct {
	N      int
	inWord bool
}

// Write counts the words in p, continuing the previous piece's word.
func (w *WordCounter) Write(p []byte) {
	for _, c := range p {
		if IsSpace(rune(c)) {
			w.inWord = false
			continue
		}
		if !w.inWord {
			w.N++
			w.inWord = true
		}
	}
}
