package tokenizer

import (
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"   ", 0},
		{"one", 1},
		{" one two\tthree\nfour ", 4},
		{"a  b", 2},
	}
	for _, c := range cases {
		if got := Count(c.in); got != c.want {
			t.Errorf("Count(%q) = %d, want %d", c.in, got, c.want)
		}
		if got := CountBytes([]byte(c.in)); got != c.want {
			t.Errorf("CountBytes(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestVocabDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < VocabSize; i++ {
		w := Word(i)
		if seen[w] {
			t.Fatalf("word %d %q repeats", i, w)
		}
		if Count(w) != 1 {
			t.Fatalf("word %q is not one token", w)
		}
		seen[w] = true
	}
}

func TestWordCounterAcrossPieces(t *testing.T) {
	t.Parallel()
	var w WordCounter
	for _, p := range []string{" hel", "lo wor", "ld", " ", "again"} {
		w.Write([]byte(p))
	}
	if w.N != 3 {
		t.Fatalf("counted %d, want 3", w.N)
	}
}

// Encode throughput of the built-in tokenizer (counting), in tokens/s, on
// a 2,048-token prompt of its own words.
func BenchmarkCount(b *testing.B) {
	var words []string
	for i := 0; i < 2048; i++ {
		words = append(words, Word(i*7%VocabSize))
	}
	text := strings.Join(words, " ")
	b.SetBytes(int64(len(text)))
	n := 0
	for b.Loop() {
		n += Count(text)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
}
