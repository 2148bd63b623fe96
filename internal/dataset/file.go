package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// MaxInputLength is the longest prompt a file line may ask to synthesize
// (4M tokens): a larger one is a mistake that would take the memory.
const MaxInputLength = 1 << 22

// Line is one prompt from an input file, with its timestamp when it has one.
type Line struct {
	Prompt
	TimestampMs float64
	HasTime     bool
}

// fileLine is the JSONL line shape: a prompt as text, or as a length to
// synthesize (as in trace files), with an optional timestamp in ms.
type fileLine struct {
	Timestamp    *float64 `json:"timestamp"`
	Text         *string  `json:"text"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
}

// FromFile reads a JSONL input file. Lines without "text" get a synthetic
// prompt of "input_length" words drawn from words. Errors name file and line.
func FromFile(path string, words *rand.Rand) ([]Line, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	var out []Line
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var fl fileLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&fl); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		var l Line
		switch {
		case fl.Text != nil:
			l.Text = *fl.Text
			l.ISL = tokenizer.Count(l.Text)
		case fl.InputLength != nil && *fl.InputLength > MaxInputLength:
			return nil, fmt.Errorf("%s:%d: \"input_length\" %d is past %d tokens, longer than any model's context", path, n, *fl.InputLength, MaxInputLength)
		case fl.InputLength != nil && *fl.InputLength > 0:
			l.Prompt = synth(*fl.InputLength, words)
		default:
			return nil, fmt.Errorf("%s:%d: want \"text\" or a positive \"input_length\"", path, n)
		}
		if fl.OutputLength != nil {
			if *fl.OutputLength < 0 {
				return nil, fmt.Errorf("%s:%d: negative \"output_length\"", path, n)
			}
			l.MaxTokens = *fl.OutputLength
		}
		if fl.Timestamp != nil {
			if *fl.Timestamp < 0 {
				return nil, fmt.Errorf("%s:%d: negative \"timestamp\"", path, n)
			}
			l.TimestampMs, l.HasTime = *fl.Timestamp, true
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, nil
}

func synth(n int, words *rand.Rand) Prompt {
	b := make([]byte, 0, n*7)
	for w := 0; w < n; w++ {
		if w > 0 {
			b = append(b, ' ')
		}
		b = append(b, tokenizer.Word(words.IntN(tokenizer.VocabSize))...)
	}
	return Prompt{Text: string(b), ISL: n}
}
