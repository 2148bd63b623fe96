// Package dataset makes prompts: synthetic ones from a seed and length
// parameters, and an input file's, read once as a stream by its kind's
// reader (Kinds, Open: JSONL lines, traces, conversations, pools, whole
// bodies) so that each request's text is read back as it is built.
//
// Synthetic prompts are sequences of a tokenizer's single-token words
// (tokenizer.Vocab), exactly as many tokens as planned, whose lengths are
// drawn from a normal distribution (AIPerf's --synthetic-input-tokens-mean
// and -stddev). Lengths and words come from separate seeded streams, so
// changing the length distribution never reshuffles unrelated words.
package dataset

import (
	"encoding/json"
	"math"
	"math/rand/v2"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Prompt is one single-turn input.
type Prompt struct {
	Text      string
	ISL       int // tokens in Text, by the plan's tokenizer
	MaxTokens int // requested output tokens; 0 means unset
	// Extra is a file line's own request fields ("extra"), merged into the
	// body over --extra-inputs.
	Extra map[string]json.RawMessage
	// System is a multi_turn conversation's own system prompt, which ISL
	// counts (SystemISL tokens of it).
	System    string
	SystemISL int
}

// Lengths describes the ISL and OSL distributions: one normal each, or a
// mixture of (ISL, OSL) buckets (AIPerf's --sequence-distribution).
type Lengths struct {
	ISLMean   int
	ISLStddev float64
	OSLMean   int // 0: no max_tokens
	OSLStddev float64
	Mix       []Bucket // when set, each prompt draws its bucket, then its lengths from it
}

// Bucket is one component of a length mixture, with its weight.
type Bucket struct {
	ISL, OSL       int
	ISLStd, OSLStd float64
	Weight         float64
}

// Stream draws synthetic prompts one at a time, in request order, so a
// plan of a million prompts is never held whole. Lengths and words come
// from the two seeded streams it is given.
type Stream struct {
	l              Lengths
	v              *tokenizer.Vocab
	lengths, words *rand.Rand
}

// NewStream returns a stream of prompts in v's words (nil: the builtin
// tokenizer's), one per Next.
func NewStream(l Lengths, v *tokenizer.Vocab, lengths, words *rand.Rand) *Stream {
	if v == nil {
		v = tokenizer.Builtin().Words()
	}
	return &Stream{l: l, v: v, lengths: lengths, words: words}
}

// Next returns the next prompt. With keep false it makes the same draws
// and returns only the lengths (no text), for a worker passing over
// another worker's requests.
func (s *Stream) Next(keep bool) Prompt {
	var isl, osl int
	if len(s.l.Mix) > 0 {
		b := s.l.pick(s.lengths.Float64())
		isl, osl = drawLen(s.lengths, b.ISL, b.ISLStd), drawLen(s.lengths, b.OSL, b.OSLStd)
	} else {
		isl = drawLen(s.lengths, s.l.ISLMean, s.l.ISLStddev)
		if s.l.OSLMean > 0 {
			osl = drawLen(s.lengths, s.l.OSLMean, s.l.OSLStddev)
		}
	}
	var p Prompt
	if keep {
		p.Text = s.v.Text(isl, s.words)
	} else {
		s.v.Skip(isl, s.words)
	}
	p.ISL = isl
	p.MaxTokens = osl
	return p
}

// pick is the bucket that u (uniform in [0, 1)) falls in, by weight.
func (l Lengths) pick(u float64) Bucket {
	total := 0.0
	for _, b := range l.Mix {
		total += b.Weight
	}
	at := u * total
	for _, b := range l.Mix {
		if at < b.Weight {
			return b
		}
		at -= b.Weight
	}
	return l.Mix[len(l.Mix)-1]
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
