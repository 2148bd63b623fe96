package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// DagJSONL is AIPerf's dag_jsonl: a conversation a line, each turn its
// authored messages, and the branches (forks, spawns, orchestrator
// rounds) that make it a DAG.
const DagJSONL = "dag_jsonl"

// The keys AIPerf's dag_jsonl schema allows (it rejects any other), and
// those of them that make branches, which are not scheduled here.
var (
	dagConvKeys   = []string{"session_id", "turns", "orchestrator", "spawns", "think_time_ms", "think_time_sigma", "think_time_min_ms", "think_time_max_ms", "rounds", "context_mode", "pre_session_spawns"}
	dagTurnKeys   = []string{"messages", "model", "max_tokens", "tools", "extra", "forks", "spawns", "delay"}
	dagBranchKeys = map[string]bool{"orchestrator": true, "spawns": true, "rounds": true, "pre_session_spawns": true, "forks": true,
		"think_time_ms": true, "think_time_sigma": true, "think_time_min_ms": true, "think_time_max_ms": true}
)

// indexDag reads a dag_jsonl file's linear conversations: each line's
// turns become a multi_turn conversation (a system message first is the
// conversation's system prompt; each turn's one user message its prompt;
// max_tokens, delay and extra kept), written once into a JSONL of the
// tool's own and indexed as a multi_turn file, so live answers are
// threaded into the history as AIPerf's default context mode does. A
// line that branches (forks, spawns, an orchestrator, rounds), authors
// history (assistant or tool messages), sends media or tools, or names
// another model is refused with its line and why: those need a
// scheduler of branches or a wire body this tool does not build.
func indexDag(path string, tok *tokenizer.Tokenizer, model string) (*Sessions, error) {
	tok = orBuiltin(tok)
	var x *Sessions
	ix, err := derivedWith(path, "dag", "v1\x00"+model, func(w io.Writer) error {
		seen := map[string]int{}
		_, err := eachLine(path, func(line []byte, n int, _ int64, _ int) error {
			out, err := dagLine(line, model)
			if err != nil {
				return fmt.Errorf("%s:%d: %v", path, n, err)
			}
			if at, dup := seen[out.SessionID]; dup {
				return fmt.Errorf("%s:%d: session_id %q again (first at line %d)", path, n, out.SessionID, at)
			}
			seen[out.SessionID] = n
			b, _ := json.Marshal(out)
			_, err = w.Write(append(b, '\n'))
			return err
		})
		return err
	}, func(jsonl string) (*Index, error) {
		s, err := indexSessions(jsonl, tok)
		x = s
		return &Index{}, err
	})
	if err != nil {
		return nil, err
	}
	x.Digest = ix.Digest // (the file's, as every input's)
	return x, nil
}

type dagOut struct {
	SessionID string           `json:"session_id"`
	Turns     []map[string]any `json:"turns"`
}

// dagLine is one dag_jsonl line as a multi_turn line.
func dagLine(line []byte, model string) (*dagOut, error) {
	var conv map[string]json.RawMessage
	if err := json.Unmarshal(line, &conv); err != nil {
		return nil, fmt.Errorf("a dag_jsonl line is a conversation object: %v", err)
	}
	if err := dagKeys(conv, dagConvKeys, "the conversation"); err != nil {
		return nil, err
	}
	var c struct {
		SessionID   string            `json:"session_id"`
		Turns       []json.RawMessage `json:"turns"`
		ContextMode *string           `json:"context_mode"`
	}
	if err := json.Unmarshal(line, &c); err != nil {
		return nil, err
	}
	if c.SessionID == "" {
		return nil, fmt.Errorf("a conversation needs a session_id")
	}
	if c.ContextMode != nil && *c.ContextMode != "deltas_without_responses" {
		return nil, fmt.Errorf("context_mode %q: only AIPerf's default (deltas_without_responses: the turns' messages appended, live answers threaded in) is replayed here", *c.ContextMode)
	}
	if len(c.Turns) == 0 {
		return nil, fmt.Errorf("session %s: no turns (an orchestrator's branches are not scheduled here)", c.SessionID)
	}
	out := &dagOut{SessionID: c.SessionID}
	for k, raw := range c.Turns {
		where := fmt.Sprintf("session %s turn %d", c.SessionID, k+1)
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(raw, &keys); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		if err := dagKeys(keys, dagTurnKeys, where); err != nil {
			return nil, err
		}
		var t struct {
			Messages  []map[string]json.RawMessage `json:"messages"`
			Model     string                       `json:"model"`
			MaxTokens *json.RawMessage             `json:"max_tokens"`
			Tools     json.RawMessage              `json:"tools"`
			Extra     map[string]json.RawMessage   `json:"extra"`
			Delay     *float64                     `json:"delay"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		switch {
		case len(t.Tools) > 0 && string(t.Tools) != "null":
			return nil, fmt.Errorf("%s: \"tools\": tool definitions are not sent here", where)
		case t.Model != "" && t.Model != model:
			return nil, fmt.Errorf("%s: \"model\" %q: a turn's own model is not sent here (the run's is %q)", where, t.Model, model)
		case len(t.Messages) == 0:
			return nil, fmt.Errorf("%s: \"messages\" is empty", where)
		}
		var user []string
		for i, m := range t.Messages {
			var role string
			json.Unmarshal(m["role"], &role)
			text, err := dagText(m["content"])
			if err != nil {
				return nil, fmt.Errorf("%s message %d: %v", where, i+1, err)
			}
			switch {
			case role == "system" && k == 0 && len(user) == 0:
				if len(out.Turns) > 0 { // several system messages: one prompt
					out.Turns[0]["text"] = out.Turns[0]["text"].(string) + "\n\n" + text
				} else {
					out.Turns = append(out.Turns, map[string]any{"role": "system", "text": text})
				}
			case role == "user":
				user = append(user, text)
			default:
				return nil, fmt.Errorf("%s message %d: role %q: a turn here is its user message (a system prompt before the first); authored history and tool messages are not replayed", where, i+1, role)
			}
		}
		if len(user) != 1 {
			return nil, fmt.Errorf("%s: %d user messages: a turn here is one", where, len(user))
		}
		turn := map[string]any{"text": user[0]}
		if t.MaxTokens != nil {
			var n int
			if err := json.Unmarshal(*t.MaxTokens, &n); err != nil || n < 1 {
				return nil, fmt.Errorf("%s: \"max_tokens\" %s: want a whole number ≥ 1", where, *t.MaxTokens)
			}
			turn["output_length"] = n
		}
		if t.Delay != nil {
			turn["delay"] = *t.Delay
		}
		if len(t.Extra) > 0 {
			turn["extra"] = t.Extra
		}
		out.Turns = append(out.Turns, turn)
	}
	return out, nil
}

// dagKeys refuses a key AIPerf's schema does not know (as AIPerf does),
// and by name one that makes branches.
func dagKeys(m map[string]json.RawMessage, allowed []string, where string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("%s: unknown key %q (AIPerf's dag_jsonl schema has %s)", where, k, strings.Join(allowed, ", "))
		}
	}
	for _, k := range allowed { // (in the schema's order: the first branching key is named)
		if v, ok := m[k]; ok && dagBranchKeys[k] && !emptyJSON(v) {
			return fmt.Errorf("%s: %q: AIPerf's DAG branches (forks, spawns, orchestrator rounds) need a scheduler of branches that is not built here; its linear conversations are replayed", where, k)
		}
	}
	return nil
}

func emptyJSON(v json.RawMessage) bool {
	s := string(bytes.TrimSpace(v))
	return s == "" || s == "null" || s == "[]" || s == "false" || s == "{}"
}

// dagText is a message's content as text: a string, or text parts.
func dagText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content: want a string or content parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part %q: only text is sent here", p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, ""), nil
}
