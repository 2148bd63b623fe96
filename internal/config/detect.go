package config

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// detectDatasetType is the dataset type of an --input-file given without
// --custom-dataset-type, as AIPerf tells it from the first line: a line of
// "messages" is a raw request body (raw_payload), a line of "turns" a
// conversation (multi_turn), one of "captureData" and "eventMetadata" a
// SageMaker data capture; anything else stays plain JSONL, whose reader
// names what a line lacks. A folder is told by its first .jsonl file (a
// raw_payload folder: a conversation a file); a file that can't be read
// is left to the reader, which says so.
func detectDatasetType(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if files := rawFiles(path); len(files) > 0 && detectDatasetType(files[0]) == RawPayload {
			return RawPayload
		}
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 0; sc.Scan() && n < 100; n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) != nil {
			return ""
		}
		isList := func(k string) bool { v, ok := m[k]; return ok && bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) }
		_, conv := m["conversation_id"]
		_, captured := m["captureData"]
		_, meta := m["eventMetadata"]
		switch {
		case captured && meta: // (AIPerf's check for a SageMaker capture)
			return SageMaker
		case isList("messages") && !conv && !isList("data"):
			return RawPayload
		case isList("turns"):
			return MultiTurnFile
		}
		return ""
	}
	return ""
}

// wholeRawLine is the first line (1-based) of a raw_payload file whose
// body does not ask for a stream ("stream": true), or 0 when every line
// does. Such a body is sent as it is, so its answer comes whole: under
// --streaming it would have no first token.
func wholeRawLine(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0 // (the reader says why)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var b struct {
			Stream *bool `json:"stream"`
		}
		if json.Unmarshal(line, &b) != nil {
			return 0 // (the reader names a malformed line)
		}
		if b.Stream == nil || !*b.Stream {
			return n
		}
	}
	return 0
}

// rawFiles are a raw_payload input's files: the file itself, or a
// folder's .jsonl files in the order of their names.
func rawFiles(path string) []string {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if !st.IsDir() {
		return []string{path}
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries { // (ReadDir sorts by name)
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl") {
			out = append(out, filepath.Join(path, e.Name()))
		}
	}
	return out
}
