package dataset

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// basetenRow is the part of a Baseten trace row this loader reads.
type basetenRow struct {
	Timestamp    int64  `parquet:"timestamp_start_unix_ms"`
	Prompt       string `parquet:"prompt"`
	InputTokens  int64  `parquet:"input_tokens"`
	OutputTokens int64  `parquet:"output_tokens"`
}

// basetenColumns are the columns a Baseten trace must have.
var basetenColumns = []string{"timestamp_start_unix_ms", "prompt", "input_tokens", "output_tokens"}

// IndexBaseten reads a Baseten trace (Parquet: timestamp_start_unix_ms,
// the literal prompt, input_tokens, output_tokens; other columns passed
// over) a row group at a time. Its prompts go, as read, into a JSONL file
// of the index's own in the temporary folder (named by the trace's
// sha256, so every Build and every worker on the machine shares one),
// which is then indexed like any input file: memory stays flat, and a
// prompt is read back by its line when its request is built. A row is
// sent as it was recorded: its prompt, counted in tok's tokens, with
// output_tokens as max tokens, at its timestamp.
func IndexBaseten(path string, tok *tokenizer.Tokenizer, words uint64) (x *Index, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	jsonl := filepath.Join(os.TempDir(), "aiperf-action-baseten-"+digest[:32]+".jsonl")
	if _, err := os.Stat(jsonl); err != nil {
		if err := basetenToJSONL(f, st.Size(), path, jsonl); err != nil {
			return nil, err
		}
	}
	x, err = IndexFile(jsonl, tok, words, Blocks{})
	if err != nil {
		return nil, fmt.Errorf("%s (as %s): %w", path, jsonl, err)
	}
	x.Digest = digest
	return x, nil
}

// basetenToJSONL writes the trace's rows as JSONL lines of text,
// output_length and timestamp, through a temporary file and a rename.
func basetenToJSONL(f *os.File, size int64, path, out string) (err error) {
	defer func() {
		// (The Parquet library panics on some malformed files.)
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: not a readable Parquet file: %v", path, r)
		}
	}()
	pf, err := parquet.OpenFile(f, size)
	if err != nil {
		return fmt.Errorf("%s: not a Parquet file: %v", path, err)
	}
	var missing []string
	for _, c := range basetenColumns {
		if _, ok := pf.Schema().Lookup(c); !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: a Baseten trace has the columns %q; this one lacks %q", path, basetenColumns, missing)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*.tmp")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // (gone by then when renamed)
	defer tmp.Close()
	w := bufio.NewWriterSize(tmp, 1<<20)
	r := parquet.NewGenericReader[basetenRow](pf)
	defer r.Close()
	rows := make([]basetenRow, 256)
	var problems []error
	for n := 0; ; {
		k, rerr := r.Read(rows)
		for _, row := range rows[:k] {
			n++
			if row.Timestamp < 0 || row.OutputTokens < 0 || row.OutputTokens > MaxInputLength {
				problems = append(problems, fmt.Errorf("%s: row %d: a negative timestamp or output_tokens, or output_tokens past %d", path, n, MaxInputLength))
				if len(problems) == maxProblems {
					return errors.Join(problems...)
				}
				continue
			}
			b, _ := json.Marshal(struct {
				Text         string `json:"text"`
				OutputLength int64  `json:"output_length"`
				Timestamp    int64  `json:"timestamp"`
			}{row.Prompt, row.OutputTokens, row.Timestamp})
			w.Write(b)
			w.WriteByte('\n')
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("%s: row %d: %v", path, n+1, rerr)
		}
	}
	if len(problems) > 0 {
		return errors.Join(problems...)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%s: write %s: %w", path, tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: write %s: %w", path, tmp.Name(), err)
	}
	return os.Rename(tmp.Name(), out)
}
