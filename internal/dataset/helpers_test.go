package dataset

import (
	"fmt"
	"io"
	"os"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// line is one prompt from an input file, with its timestamp when it has one.
type line struct {
	Prompt
	TimestampMs float64
	HasTime     bool
}

// fromFile reads a JSONL input file whole: indexFile, then every line's
// prompt. (A plan reads through an Index.)
func fromFile(path string, tok *tokenizer.Tokenizer, words uint64, blocks Blocks) ([]line, error) {
	x, err := indexFile(path, tok, words, blocks)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	defer f.Close()
	out := make([]line, len(x.Lines))
	for j, m := range x.Lines {
		d, err := x.Read(j, f)
		text := d.Text
		if err != nil {
			return nil, err
		}
		out[j] = line{Prompt: Prompt{Text: text, ISL: int(m.ISL), MaxTokens: int(m.MaxTokens)}, TimestampMs: m.TimestampMs, HasTime: m.HasTime}
	}
	return out, nil
}

// fromShareGPT reads a ShareGPT JSON file (an array of conversations) as a
// stream, one record at a time: the first human/gpt pair of each
// conversation becomes a prompt whose max tokens is the answer's length,
// kept by vLLM's filter. Lengths are tok's (nil: the builtin tokenizer).
// Errors name the file and the record. (A plan reads it through
// indexShareGPT, which keeps none of it in memory.)
func fromShareGPT(path string, tok *tokenizer.Tokenizer) ([]Prompt, error) {
	var out []Prompt
	err := readShareGPT(path, tok, func(p Prompt) error { out = append(out, p); return nil })
	return out, err
}

// lineText is line j's prompt text, read back from f.
func lineText(x *Index, j int, f io.ReaderAt) (string, error) {
	d, err := x.Read(j, f)
	return d.Text, err
}
