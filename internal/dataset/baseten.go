package dataset

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
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

// indexBaseten reads a Baseten trace (Parquet: timestamp_start_unix_ms,
// the literal prompt, input_tokens, output_tokens; other columns passed
// over) a row group at a time. Its prompts go, as read, into a JSONL file
// of the index's own in the temporary folder (named by the trace's
// sha256, so every Build and every worker on the machine shares one),
// which is then indexed like any input file: memory stays flat, and a
// prompt is read back by its line when its request is built. A row is
// sent as it was recorded: its prompt, counted in tok's tokens, with
// output_tokens as max tokens, at its timestamp.
func indexBaseten(path string, tok *tokenizer.Tokenizer, words uint64) (*Index, error) {
	return derivedIndex(path, "baseten", "", tok, words, func(w io.Writer) error { return basetenToJSONL(path, w) })
}

// basetenToJSONL writes the trace's rows as JSONL lines of text,
// output_length and timestamp.
func basetenToJSONL(path string, out io.Writer) (err error) {
	defer func() {
		// (The Parquet library panics on some malformed files.)
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: not a readable Parquet file: %v", path, r)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--input-file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("--input-file: %w", err)
	}
	// The footer's length is the file's last 8 bytes but its magic; the
	// library allocates what it claims before checking it, so a few
	// malformed bytes could ask for gigabytes.
	var tail [8]byte
	if st.Size() < 12 {
		return fmt.Errorf("%s: not a Parquet file: %d bytes", path, st.Size())
	}
	if _, err := f.ReadAt(tail[:], st.Size()-8); err != nil {
		return fmt.Errorf("--input-file: %w", err)
	}
	if footer := int64(binary.LittleEndian.Uint32(tail[:4])); string(tail[4:]) != "PAR1" || footer > st.Size()-12 {
		return fmt.Errorf("%s: not a Parquet file: its footer claims %d bytes in a file of %d", path, footer, st.Size())
	}
	pf, err := parquet.OpenFile(f, st.Size())
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
	r := parquet.NewGenericReader[basetenRow](pf)
	defer r.Close()
	rows := make([]basetenRow, 256)
	var problems []error
	// Bounded: no more rows than the file says it holds, and a reader that
	// returns neither rows nor an end (a malformed file can make it) is
	// the file's error, not a loop.
	declared := pf.NumRows()
	for n, empty := 0, 0; ; {
		k, rerr := r.Read(rows)
		if k == 0 && rerr == nil {
			if empty++; empty > 3 {
				return fmt.Errorf("%s: not a readable Parquet file: no rows after row %d of %d, and no end", path, n, declared)
			}
			continue
		}
		empty = 0
		if int64(n+k) > declared {
			return fmt.Errorf("%s: not a readable Parquet file: more rows than the %d it declares", path, declared)
		}
		for _, row := range rows[:k] {
			n++
			if row.Timestamp < 0 || row.OutputTokens < 0 || row.OutputTokens > MaxInputLength {
				problems = append(problems, fmt.Errorf("%s: row %d: a negative timestamp or output_tokens, or output_tokens past %d", path, n, MaxInputLength))
				if len(problems) == maxProblems {
					return errors.Join(problems...)
				}
				continue
			}
			ts := row.Timestamp
			if err := writeLine(out, row.Prompt, int(row.OutputTokens), &ts); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("%s: row %d: %v", path, n+1, rerr)
		}
	}
	return errors.Join(problems...)
}

// writeLine writes one input-file line: text, output_length and, when
// given, a timestamp in ms.
func writeLine(w io.Writer, text string, outputLength int, timestampMs *int64) error {
	b, err := json.Marshal(struct {
		Text         string `json:"text"`
		OutputLength int    `json:"output_length"`
		Timestamp    *int64 `json:"timestamp,omitempty"`
	}{text, outputLength, timestampMs})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// derivedIndex indexes a file of another format through the JSONL that
// write makes of it: once per (file, key) on this machine, in the
// temporary folder, named by the file's sha256 and key (so every plan
// and worker here shares one), written through a temporary file and a
// rename. The index's Digest is the source file's.
func derivedIndex(path, kind, key string, tok *tokenizer.Tokenizer, words uint64, write func(io.Writer) error) (*Index, error) {
	return derivedWith(path, kind, key, write, func(jsonl string) (*Index, error) { return indexFile(jsonl, tok, words, Blocks{}) })
}

// derivedWith is derivedIndex with the derived file indexed by index.
func derivedWith(path, kind, key string, write func(io.Writer) error, index func(jsonl string) (*Index, error)) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	sum := sha256.New()
	_, err = io.Copy(sum, f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	name := sha256.Sum256([]byte(digest + "\x00" + key))
	jsonl := filepath.Join(os.TempDir(), "aiperf-action-"+kind+"-"+hex.EncodeToString(name[:16])+".jsonl")
	if _, err := os.Stat(jsonl); err != nil {
		tmp, err := os.CreateTemp(filepath.Dir(jsonl), filepath.Base(jsonl)+".*.tmp")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer os.Remove(tmp.Name()) // (gone by then when renamed)
		bw := bufio.NewWriterSize(tmp, 1<<20)
		werr := write(bw)
		if werr == nil {
			werr = bw.Flush()
		}
		if cerr := tmp.Close(); werr == nil && cerr != nil {
			werr = fmt.Errorf("%s: write %s: %w", path, tmp.Name(), cerr)
		}
		if werr != nil {
			return nil, werr
		}
		if err := os.Rename(tmp.Name(), jsonl); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	x, err := index(jsonl)
	if err != nil {
		return nil, fmt.Errorf("%s (as %s): %w", path, jsonl, err)
	}
	x.Digest = digest
	return x, nil
}
