package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// indexInputsJSON reads an inputs.json (AIPerf's, or one this tool
// wrote: {"data": [{"session_id", "payloads": [...]}, ...]}) for replay:
// every payload of every session but warmup's, in order, sent as it is,
// as raw_payload lines are (indexRawPayload). A session's payloads are
// whole requests (each holds its history), and go out in that order but
// not one after the other's answer. It is read as a stream, one session
// at a time, into a JSONL file of the tool's own (see derivedIndex).
func indexInputsJSON(path string, tok *tokenizer.Tokenizer, streaming bool) (*Index, error) {
	key := fmt.Sprintf("streaming=%v", streaming)
	return derivedWith(path, "inputs", key, func(w io.Writer) error { return inputsToJSONL(path, w) },
		func(jsonl string) (*Index, error) { return indexRawPayload(jsonl, tok, streaming) })
}

func inputsToJSONL(path string, out io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--input-file: %w", err)
	}
	defer f.Close()
	d := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	bad := func(what string) error { return fmt.Errorf("%s: not an inputs.json (%s)", path, what) }
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return bad("want a JSON object")
	}
	found := false
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return bad(err.Error())
		}
		if t != "data" {
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return bad(err.Error())
			}
			continue
		}
		found = true
		if t, err := d.Token(); err != nil || t != json.Delim('[') {
			return bad(`"data" is not a list`)
		}
		for n := 1; d.More(); n++ {
			var s struct {
				Phase    string            `json:"phase"`
				Payloads []json.RawMessage `json:"payloads"`
			}
			if err := d.Decode(&s); err != nil {
				return fmt.Errorf("%s: session %d: %v", path, n, err)
			}
			if s.Phase == "warmup" {
				continue
			}
			for _, p := range s.Payloads {
				var line bytes.Buffer
				if err := json.Compact(&line, p); err != nil {
					return fmt.Errorf("%s: session %d: a payload: %v", path, n, err)
				}
				line.WriteByte('\n')
				if _, err := out.Write(line.Bytes()); err != nil {
					return err
				}
			}
		}
		if _, err := d.Token(); err != nil {
			return bad(err.Error())
		}
	}
	if !found {
		return bad(`no "data"`)
	}
	return nil
}
