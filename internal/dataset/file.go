package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

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
// synthesize (as in trace files), with an optional timestamp in ms, and,
// in a Mooncake trace, the hash ids of its prompt's blocks.
type fileLine struct {
	Timestamp    *float64 `json:"timestamp"`
	Text         *string  `json:"text"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
}

// Blocks is how a Mooncake trace's hash_ids become text: hash id h is a
// block of Size tokens drawn from its own source (Root, h), so that every
// request naming h sends the same words there, and requests that share
// leading hash ids share a prefix a server's cache can hit. A request's
// last block is the first input_length − (n−1)·Size tokens of its own.
type Blocks struct {
	Size int
	Root uint64
}

// text is the prompt of n tokens over hash ids ids.
func (bl Blocks) text(ids []int64, n int) string {
	var b strings.Builder
	for i, h := range ids {
		size := bl.Size
		if i == len(ids)-1 {
			size = n - bl.Size*(len(ids)-1)
		}
		r := rand.New(rand.NewPCG(bl.Root, uint64(h)))
		for w := 0; w < size; w++ {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(tokenizer.Word(r.IntN(tokenizer.VocabSize)))
		}
	}
	return b.String()
}

// FromFile reads a JSONL input file. Lines without "text" get a synthetic
// prompt of "input_length" words drawn from words. Errors name file and line.
func FromFile(path string, words *rand.Rand) ([]Line, error) {
	return FromFileBlocks(path, words, Blocks{})
}

// FromFileBlocks is FromFile for a file whose lines may carry hash_ids (a
// Mooncake trace): their prompts are made of blocks (see Blocks).
func FromFileBlocks(path string, words *rand.Rand, blocks Blocks) ([]Line, error) {
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
		case len(fl.HashIDs) > 0 && blocks.Size <= 0:
			return nil, fmt.Errorf("%s:%d: \"hash_ids\" is a Mooncake trace's: give --custom-dataset-type mooncake_trace", path, n)
		case len(fl.HashIDs) > 0:
			if fl.InputLength == nil {
				return nil, fmt.Errorf("%s:%d: \"hash_ids\" without \"input_length\"", path, n)
			}
			k, in := len(fl.HashIDs), *fl.InputLength
			if in <= blocks.Size*(k-1) || in > blocks.Size*k || in > MaxInputLength {
				return nil, fmt.Errorf("%s:%d: \"input_length\" %d does not fit %d hash_ids of %d-token blocks (--isl-block-size): it must be %d to %d",
					path, n, in, k, blocks.Size, blocks.Size*(k-1)+1, blocks.Size*k)
			}
			l.Text, l.ISL = blocks.text(fl.HashIDs, in), in
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
