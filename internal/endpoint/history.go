package endpoint

import (
	"encoding/json"
	"fmt"
)

// Turn is one earlier exchange of a multi-turn session: its user message
// (after Before, the user messages a dag_jsonl turn sends first) and the
// server's answer.
type Turn struct {
	User, Assistant string
	Before          []string
	Raw             []json.RawMessage // a dag_jsonl turn's messages as written, in place of User and Before
}

// WithHistory puts a session's earlier turns into a chat body built for
// its next turn alone: each turn's user messages and the server's answer,
// before the body's last own messages (the turn's user messages: 1, or
// more for a dag_jsonl turn of several), after any system message. The
// other fields stay as they were, keys sorted as marshalBody sorts them.
//
// A Messages API body is threaded the same way (its system prompt is a
// field of its own), and a Responses API body's "input": a plain string
// becomes its one user item first.
func WithHistory(body []byte, history []Turn, own int) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("a chat body: %v", err)
	}
	key := "messages"
	if _, ok := m[key]; !ok {
		if in, ok := m["input"]; ok {
			key = "input"
			var s string
			if json.Unmarshal(in, &s) == nil {
				item, err := json.Marshal([]map[string]string{{"role": "user", "content": s}})
				if err != nil {
					return nil, err
				}
				m[key] = item
			}
		}
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(m[key], &msgs); err != nil || len(msgs) < max(own, 1) {
		return nil, fmt.Errorf("a chat body without its turn's messages")
	}
	at := len(msgs) - max(own, 1)
	out := make([]json.RawMessage, 0, len(msgs)+2*len(history))
	out = append(out, msgs[:at]...)
	for _, t := range history {
		if len(t.Raw) > 0 {
			out = append(out, t.Raw...)
			b, err := json.Marshal(map[string]string{"role": "assistant", "content": t.Assistant})
			if err != nil {
				return nil, err
			}
			out = append(out, b)
			continue
		}
		for _, u := range t.Before {
			b, err := json.Marshal(map[string]string{"role": "user", "content": u})
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		for _, msg := range []map[string]string{{"role": "user", "content": t.User}, {"role": "assistant", "content": t.Assistant}} {
			b, err := json.Marshal(msg)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	}
	out = append(out, msgs[at:]...)
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	m[key] = b
	return json.Marshal(m)
}
