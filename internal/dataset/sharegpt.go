package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// ShareGPT's filter, as vLLM's benchmark applies it: a pair is kept when
// its prompt and its answer have at least ShareGPTMinTokens tokens each,
// the prompt at most ShareGPTMaxPrompt, and both together at most
// ShareGPTMaxTotal.
const (
	ShareGPTMinTokens = 4
	ShareGPTMaxPrompt = 1024
	ShareGPTMaxTotal  = 2048
)

// shareGPTConversation is one record of a ShareGPT JSON file.
type shareGPTConversation struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// indexShareGPT indexes a ShareGPT file with memory flat however large it
// is: the prompts readShareGPT reads go, as read, into a JSONL
// file of the tool's own in the temporary folder (named by the file's
// sha256 and the tokenizer's, which the filter depends on), indexed like
// any input file, so a prompt is read back by its line when its request
// is built.
func indexShareGPT(path string, tok *tokenizer.Tokenizer, words uint64) (*Index, error) {
	tok = orBuiltin(tok)
	return derivedIndex(path, "sharegpt", tok.Digest(), tok, words, func(w io.Writer) error {
		return readShareGPT(path, tok, func(p Prompt) error {
			return writeLine(w, p.Text, p.MaxTokens, nil)
		})
	})
}

func readShareGPT(path string, tok *tokenizer.Tokenizer, each func(Prompt) error) error {
	tok = orBuiltin(tok)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--input-file: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("%s: not a ShareGPT file: want a JSON array of conversations", path)
	}
	kept := 0
	for i := 0; dec.More(); i++ {
		var c shareGPTConversation
		if err := dec.Decode(&c); err != nil {
			return fmt.Errorf("%s: record %d: %v", path, i, err)
		}
		if len(c.Conversations) < 2 {
			continue
		}
		q, a := c.Conversations[0], c.Conversations[1]
		if q.From != "human" || a.From != "gpt" {
			continue
		}
		in, outLen := tok.Count(q.Value), tok.Count(a.Value)
		if in < ShareGPTMinTokens || outLen < ShareGPTMinTokens || in > ShareGPTMaxPrompt || in+outLen > ShareGPTMaxTotal {
			continue
		}
		if err := each(Prompt{Text: q.Value, ISL: in, MaxTokens: outLen}); err != nil {
			return err
		}
		kept++
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: after the last record: %v", path, err)
	}
	if kept == 0 {
		return fmt.Errorf("%s: no conversation passes the filter (a human then a gpt turn, %d to %d prompt tokens, at most %d in all)",
			path, ShareGPTMinTokens, ShareGPTMaxPrompt, ShareGPTMaxTotal)
	}
	return nil
}
