// Package dataset turns a seed and length parameters into prompts.
//
// Synthetic prompts are sequences of builtin-tokenizer words whose lengths
// are drawn from a normal distribution (AIPerf's --synthetic-input-tokens-mean
// and -stddev). Lengths and words come from separate seeded streams, so
// changing the length distribution never reshuffles unrelated words.
package dataset

import (
	"math"
	"math/rand/v2"
)

// Prompt is one single-turn input.
type Prompt struct {
	Text      string
	ISL       int // tokens in Text, by the builtin tokenizer
	MaxTokens int // requested output tokens; 0 means unset
}

// Lengths describes the ISL and OSL distributions.
type Lengths struct {
	ISLMean   int
	ISLStddev float64
	OSLMean   int // 0: no max_tokens
	OSLStddev float64
}

// Synthetic returns n prompts. lengths and words are the seeded streams for
// the length draws and the word draws respectively.
func Synthetic(n int, l Lengths, lengths, words *rand.Rand) []Prompt {
	out := make([]Prompt, n)
	for i := range out {
		isl := drawLen(lengths, l.ISLMean, l.ISLStddev)
		osl := 0
		if l.OSLMean > 0 {
			osl = drawLen(lengths, l.OSLMean, l.OSLStddev)
		}
		out[i] = synth(isl, words)
		out[i].MaxTokens = osl
	}
	return out
}

// drawLen draws round(N(mean, std)) clamped to at least 1. With std 0 it
// consumes no randomness, so a fixed length leaves the stream untouched.
func drawLen(r *rand.Rand, mean int, std float64) int {
	if std <= 0 {
		return max(mean, 1)
	}
	v := int(math.Round(float64(mean) + std*r.NormFloat64()))
	return max(v, 1)
}
