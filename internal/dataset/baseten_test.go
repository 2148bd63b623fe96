package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// A Baseten export's row, with the optional columns a real one carries.
type basetenExport struct {
	Timestamp         int64   `parquet:"timestamp_start_unix_ms"`
	Prompt            string  `parquet:"prompt"`
	InputTokens       int64   `parquet:"input_tokens"`
	OutputTokens      int64   `parquet:"output_tokens"`
	ProvidedSessionID string  `parquet:"provided_session_id"`
	TotalHashes       []int64 `parquet:"total_hashes,list"`
	BlockSize         int64   `parquet:"block_size"`
	RequestCanceled   int64   `parquet:"request_canceled"`
}

func basetenFile(t testing.TB, rows []basetenExport) string {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[basetenExport](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "baseten.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A Baseten Parquet trace: each row's literal prompt (counted in the
// tokenizer's tokens), output_tokens as its max tokens and its Unix-ms
// timestamp; other columns passed over; the digest is the Parquet file's.
func TestIndexBaseten(t *testing.T) {
	rows := []basetenExport{
		{Timestamp: 1_760_000_000_100, Prompt: "first prompt, with punctuation!", InputTokens: 7, OutputTokens: 6, ProvidedSessionID: "s1", TotalHashes: []int64{1, 2}, BlockSize: 64},
		{Timestamp: 1_760_000_000_350, Prompt: "second prompt", InputTokens: 3, OutputTokens: 8, ProvidedSessionID: "s1", TotalHashes: []int64{1, 3}, BlockSize: 64},
	}
	p := basetenFile(t, rows)
	x, err := indexBaseten(p, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Lines) != 2 || len(x.Digest) != 64 {
		t.Fatalf("%d lines, digest %q", len(x.Lines), x.Digest)
	}
	f, _ := os.Open(x.Path)
	defer f.Close()
	for j, row := range rows {
		text, err := lineText(x, j, f)
		m := x.Lines[j]
		if err != nil || text != row.Prompt || int(m.ISL) != tokenizer.Count(row.Prompt) || int64(m.MaxTokens) != row.OutputTokens || m.TimestampMs != float64(row.Timestamp) {
			t.Errorf("row %d: %q %v, meta %+v", j+1, text, err, m)
		}
	}
	again, err := indexBaseten(p, nil, 1) // (the converted file, reused)
	if err != nil || again.Path != x.Path || again.Digest != x.Digest {
		t.Errorf("again: %v, %s", err, again.Path)
	}

	type noPrompt struct {
		Timestamp int64 `parquet:"timestamp_start_unix_ms"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[noPrompt](&buf)
	w.Write([]noPrompt{{1}})
	w.Close()
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	os.WriteFile(bad, buf.Bytes(), 0o644)
	if _, err := indexBaseten(bad, nil, 1); err == nil || !strings.Contains(err.Error(), `lacks ["prompt" "input_tokens" "output_tokens"]`) {
		t.Errorf("missing columns: %v", err)
	}
	os.WriteFile(bad, []byte("timestamp,prompt\n1,hello\n"), 0o644)
	if _, err := indexBaseten(bad, nil, 1); err == nil || !strings.Contains(err.Error(), "not a Parquet file") {
		t.Errorf("a CSV: %v", err)
	}
}

// Whatever the bytes, indexBaseten gives an index or an error naming the
// file; the Parquet library's panics on malformed files are caught.
func FuzzBaseten(f *testing.F) {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[basetenExport](&buf)
	w.Write([]basetenExport{{Timestamp: 5, Prompt: "hello there", OutputTokens: 3}})
	w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	dir := ownTempDir(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "t.parquet")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		if _, err := indexBaseten(p, nil, 1); err != nil && !strings.Contains(err.Error(), p) {
			t.Fatalf("an error without the file's name: %v", err)
		}
	})
}

// ownTempDir is a fuzz run's own folder, made the temporary folder for
// its duration: the derived JSONL files go there, not to the machine's
// (a fuzz run makes one for every valid input).
func ownTempDir(f *testing.F) string {
	dir := f.TempDir()
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", dir)
	f.Cleanup(func() {
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
	})
	return dir
}
