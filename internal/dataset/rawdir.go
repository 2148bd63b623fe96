package dataset

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// indexRawSessions reads AIPerf's raw_payload folder: each .jsonl file in
// it (in the order of their names; other files ignored) is one
// conversation, each line a turn's whole request body, sent as it is after
// the previous turn's answer. No history is threaded: each body holds its
// own (AIPerf's message_array_with_responses). Each turn's ISL and max
// tokens are read as a raw_payload line's (rawMeta). The conversations go
// once into a multi_turn JSONL of the tool's own in the temporary folder,
// named by the files' sha256, whose turns' text is the bodies.
func indexRawSessions(dir string, tok *tokenizer.Tokenizer, streaming bool) (*Sessions, error) {
	tok = orBuiltin(tok)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no .jsonl files (a raw_payload folder holds one conversation a .jsonl file, a request body a line)", dir)
	}
	sum := sha256.New()
	var derived bytes.Buffer
	var metas []TurnMeta
	for _, name := range names {
		path := filepath.Join(dir, name)
		var bodies []map[string]string
		digest, err := eachLine(path, func(line []byte, n int, off int64, size int) error {
			isl, maxTokens, err := rawMeta(tok, line, streaming, fmt.Sprintf("%s:%d", path, n))
			if err != nil {
				return err
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, line); err != nil {
				return fmt.Errorf("%s:%d: %v", path, n, err)
			}
			bodies = append(bodies, map[string]string{"text": compact.String()})
			metas = append(metas, TurnMeta{ISL: isl, MaxTokens: maxTokens})
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(bodies) == 0 {
			return nil, fmt.Errorf("%s: no request bodies (a conversation of at least one turn)", path)
		}
		fmt.Fprintf(sum, "%s\x00%s\x00", name, digest)
		b, _ := json.Marshal(map[string]any{"session_id": strings.TrimSuffix(name, ".jsonl"), "turns": bodies})
		derived.Write(b)
		derived.WriteByte('\n')
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	jsonl := filepath.Join(os.TempDir(), "aiperf-action-rawdir-"+digest[:32]+".jsonl")
	if _, err := os.Stat(jsonl); err != nil {
		tmp, err := os.CreateTemp(filepath.Dir(jsonl), filepath.Base(jsonl)+".*.tmp")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		defer os.Remove(tmp.Name())
		bw := bufio.NewWriter(tmp)
		bw.Write(derived.Bytes())
		werr := bw.Flush()
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), jsonl)
		}
		if werr != nil {
			return nil, fmt.Errorf("%s: %w", dir, werr)
		}
	}
	x, err := indexSessions(jsonl, tok)
	if err != nil {
		return nil, fmt.Errorf("%s (as %s): %w", dir, jsonl, err)
	}
	if len(x.Turns) != len(metas) {
		return nil, fmt.Errorf("%s (as %s): %d turns, the files have %d", dir, jsonl, len(x.Turns), len(metas))
	}
	for i := range x.Turns {
		x.Turns[i].ISL, x.Turns[i].MaxTokens = metas[i].ISL, metas[i].MaxTokens
	}
	x.raw, x.Digest = true, digest
	return x, nil
}
