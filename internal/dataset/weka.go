package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/aiperf-action/aiperf-action/internal/seeds"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// A Weka trace (AIPerf's weka_trace, from Weka's KV-cache tester) is an
// agentic coding session as one JSON object: its requests in order, each
// with its input and output lengths, the hash ids of its prompt's blocks
// and its timing, and "subagent" entries with their own requests. A file
// holds one trace; a folder holds one a file (*.json, in name order).
type wekaTrace struct {
	ID           string            `json:"id"`
	Models       []string          `json:"models"`
	BlockSize    int               `json:"block_size"`
	HashIDScope  string            `json:"hash_id_scope"`
	ToolTokens   int               `json:"tool_tokens"`
	SystemTokens int               `json:"system_tokens"`
	Requests     []json.RawMessage `json:"requests"`
	Totals       json.RawMessage   `json:"totals"`
}

// wekaRequest is a "n" (normal) or "s" (streaming) call, or a "subagent"
// entry with its own calls.
type wekaRequest struct {
	T           *float64 `json:"t"`
	Type        string   `json:"type"`
	Model       string   `json:"model"`
	In          *int     `json:"in"`
	Out         *int     `json:"out"`
	HashIDs     []int64  `json:"hash_ids"`
	InputTypes  []string `json:"input_types"`
	OutputTypes []string `json:"output_types"`
	Stop        string   `json:"stop"`
	APITime     *float64 `json:"api_time"`
	ThinkTime   *float64 `json:"think_time"`
	TTFT        *float64 `json:"ttft"`
	// A subagent's.
	AgentID      string            `json:"agent_id"`
	SubagentType string            `json:"subagent_type"`
	DurationMs   *float64          `json:"duration_ms"`
	TotalTokens  *int              `json:"total_tokens"`
	ToolUseCount *int              `json:"tool_use_count"`
	Status       string            `json:"status"`
	Requests     []json.RawMessage `json:"requests"`
	Models       []string          `json:"models"`
	ToolTokens   int               `json:"tool_tokens"`
	SystemTokens int               `json:"system_tokens"`
}

// wekaCall is one API call of a trace as it is replayed: its lengths, its
// block hash ids and its start and end in the trace's seconds.
type wekaCall struct {
	in, out    int
	hashes     []int64
	start, end float64
}

// indexWeka reads a weka_trace file, or a folder of them, as sessions:
// each trace one session whose turns are its calls in order, a
// subagent's calls in its place (run in turn, not beside the parent: the
// parent waits for its subagents in the trace too, but two subagents
// running at once are replayed one after the other). Each call's prompt
// is complete in itself (its hash ids cover the history), so no history
// is threaded; a turn's delay is the trace's idle time before it (its
// start less the previous call's end). Prompts are made of blocks of the
// trace's block_size tokens, hash id h of trace T from its own source
// (hash_id_scope "local": trace T's h is not trace U's), the tokens past
// the hash ids from the call's own. Errors name the file and the request.
func indexWeka(path string, tok *tokenizer.Tokenizer, words uint64) (*Sessions, error) {
	files, err := wekaFiles(path)
	if err != nil {
		return nil, err
	}
	x := &Sessions{Path: path, tok: orBuiltin(tok), weka: &wekaIndex{files: files, words: words}}
	sum := sha256.New()
	var problems []error
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--input-file: %w", err)
		}
		fmt.Fprintf(sum, "%s\x00%d\x00", filepath.Base(file), len(b))
		sum.Write(b)
		tr, calls, err := parseWeka(file, b)
		if err != nil {
			if problems = append(problems, err); len(problems) == maxProblems {
				break
			}
			continue
		}
		m := SessionMeta{First: int32(len(x.Turns)), Count: int32(len(calls))}
		for k, c := range calls {
			tm := TurnMeta{ISL: int32(c.in), MaxTokens: int32(max(c.out, 1))}
			if k > 0 {
				tm.DelayMs = float32(max(c.start-calls[k-1].end, 0) * 1000)
			}
			x.Turns = append(x.Turns, tm)
		}
		x.Lines = append(x.Lines, m)
		x.weka.blockSize = append(x.weka.blockSize, tr.BlockSize)
		x.weka.ids = append(x.weka.ids, tr.ID)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if len(x.Lines) == 0 {
		return nil, fmt.Errorf("%s: no traces", path)
	}
	x.Digest = hex.EncodeToString(sum.Sum(nil))
	return x, nil
}

// wekaFiles is path itself, or the *.json files in the folder path.
func wekaFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	var files []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--input-file %s: a folder with no weka_trace files (*.json)", path)
	}
	sort.Strings(files)
	return files, nil
}

// strict decodes b into v, refusing fields the schema does not have, as
// AIPerf's loader does.
func strict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// parseWeka checks one trace file and returns its calls in replay order.
func parseWeka(file string, b []byte) (wekaTrace, []wekaCall, error) {
	var tr wekaTrace
	if err := strict(b, &tr); err != nil {
		return tr, nil, fmt.Errorf("%s: not a weka_trace: %v", file, err)
	}
	switch {
	case tr.ID == "":
		return tr, nil, fmt.Errorf("%s: a weka_trace needs an \"id\"", file)
	case tr.BlockSize <= 0 || tr.BlockSize > MaxInputLength:
		return tr, nil, fmt.Errorf("%s: \"block_size\" %d: want a positive block size in tokens", file, tr.BlockSize)
	case tr.HashIDScope != "local":
		return tr, nil, fmt.Errorf("%s: \"hash_id_scope\" %q: only \"local\" (hash ids scoped to their trace) is supported, as in AIPerf", file, tr.HashIDScope)
	case len(tr.Requests) == 0:
		return tr, nil, fmt.Errorf("%s: a trace with no requests", file)
	}
	var calls []wekaCall
	for i, raw := range tr.Requests {
		where := fmt.Sprintf("%s: request %d", file, i+1)
		var r wekaRequest
		if err := strict(raw, &r); err != nil {
			return tr, nil, fmt.Errorf("%s: %v", where, err)
		}
		if r.T == nil || math.IsNaN(*r.T) || math.IsInf(*r.T, 0) {
			return tr, nil, fmt.Errorf("%s: want a finite \"t\" (seconds)", where)
		}
		switch r.Type {
		case "n", "s":
			c, err := wekaCallOf(where, r, *r.T, tr.BlockSize)
			if err != nil {
				return tr, nil, err
			}
			calls = append(calls, c)
		case "subagent":
			if len(r.Requests) == 0 {
				return tr, nil, fmt.Errorf("%s: a subagent with no requests", where)
			}
			for k, inner := range r.Requests {
				iw := fmt.Sprintf("%s, subagent request %d", where, k+1)
				var ir wekaRequest
				if err := strict(inner, &ir); err != nil {
					return tr, nil, fmt.Errorf("%s: %v", iw, err)
				}
				if ir.Type != "n" && ir.Type != "s" {
					return tr, nil, fmt.Errorf("%s: \"type\" %q: a subagent's requests are \"n\" or \"s\"", iw, ir.Type)
				}
				if ir.T == nil || math.IsNaN(*ir.T) || math.IsInf(*ir.T, 0) {
					return tr, nil, fmt.Errorf("%s: want a finite \"t\" (seconds)", iw)
				}
				// Inner times are absolute in current captures, relative to
				// the spawn in older ones: one before the spawn is relative.
				t := *ir.T
				if t+1e-6 < *r.T {
					t += *r.T
				}
				c, err := wekaCallOf(iw, ir, t, tr.BlockSize)
				if err != nil {
					return tr, nil, err
				}
				calls = append(calls, c)
			}
		default:
			return tr, nil, fmt.Errorf("%s: \"type\" %q: want \"n\", \"s\" or \"subagent\"", where, r.Type)
		}
	}
	return tr, calls, nil
}

func wekaCallOf(where string, r wekaRequest, t float64, bs int) (wekaCall, error) {
	switch {
	case r.In == nil || *r.In < 1 || *r.In > MaxInputLength:
		return wekaCall{}, fmt.Errorf("%s: want \"in\" (input tokens), 1 to %d", where, MaxInputLength)
	case r.Out == nil || *r.Out < 0 || *r.Out > MaxInputLength:
		return wekaCall{}, fmt.Errorf("%s: want \"out\" (output tokens), 0 to %d", where, MaxInputLength)
	case len(r.HashIDs) > (*r.In+bs-1)/bs:
		return wekaCall{}, fmt.Errorf("%s: %d hash_ids of %d-token blocks are more than its %d input tokens fill", where, len(r.HashIDs), bs, *r.In)
	}
	c := wekaCall{in: *r.In, out: *r.Out, hashes: r.HashIDs, start: t, end: t}
	if r.APITime != nil && *r.APITime > 0 && !math.IsInf(*r.APITime, 0) {
		c.end = t + *r.APITime
	}
	return c, nil
}

// wekaIndex is what Sessions keeps of a weka_trace input: its files, each
// trace's block size and id, and one parsed trace at a time for reading
// turns back.
type wekaIndex struct {
	files     []string
	blockSize []int
	ids       []string
	words     uint64
	mu        sync.Mutex
	at        int // the trace in calls (−1 none)
	calls     []wekaCall
}

// turn is trace j's call k's prompt: its blocks, then its own words.
func (w *wekaIndex) turn(v *tokenizer.Vocab, j, k int) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil || w.at != j {
		b, err := os.ReadFile(w.files[j])
		if err != nil {
			return "", fmt.Errorf("--input-file: %w", err)
		}
		_, calls, err := parseWeka(w.files[j], b)
		if err != nil {
			return "", fmt.Errorf("%s: the file changed since it was read: %v", w.files[j], err)
		}
		w.at, w.calls = j, calls
	}
	if k >= len(w.calls) {
		return "", fmt.Errorf("%s: the file changed since it was read", w.files[j])
	}
	c := w.calls[k]
	h := fnv.New64a()
	io.WriteString(h, w.ids[j])
	trace := h.Sum64() ^ w.words
	bs := w.blockSize[j]
	parts := make([]string, 0, len(c.hashes)+1)
	left := c.in
	for _, id := range c.hashes {
		n := min(bs, left)
		parts = append(parts, v.Text(n, seeds.Draw(trace, uint64(id))))
		left -= n
	}
	if left > 0 {
		// Past the hash ids: the call's own words.
		parts = append(parts, v.Text(left, seeds.Draw(seeds.WekaOwn(trace), uint64(j)<<32|uint64(k))))
	}
	return strings.Join(parts, " "), nil
}
