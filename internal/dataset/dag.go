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

// The keys AIPerf's dag_jsonl schema allows (it rejects any other).
var (
	dagConvKeys = []string{"session_id", "turns", "orchestrator", "spawns", "think_time_ms", "think_time_sigma", "think_time_min_ms", "think_time_max_ms", "rounds", "context_mode", "pre_session_spawns"}
	dagTurnKeys = []string{"messages", "model", "max_tokens", "tools", "extra", "forks", "spawns", "delay"}
)

// DagTurn is a dag_jsonl turn's place in its tree: a tree (a root and
// every conversation its branches reach, each reference its own
// instance) is one session whose turns are every instance's, parents
// before children; a turn is sent after the turns it waits for (and its
// conversation's earlier ones) have their answers.
type DagTurn struct {
	Conv int32   // the conversation instance in the tree (0: the root)
	Wait []int32 // turns of the tree (by place) whose answers it waits for: a branch's parent turn, or a join's children's last turns
	// Fork−1 is the place of the turn whose conversation, to that turn's
	// answer, a FORK child's first turn inherits (0: none).
	Fork int32
	// The turn's system prompt when not the line's (a SPAWN child's own,
	// or none), and its tokens.
	OwnSystem bool
	SystemISL int32
	// Alone: the turn is its own whole messages, sent with no history
	// (context_mode message_array_with_responses).
	Alone bool
	// Think is an orchestrator round's think time before its branches
	// (a lognormal around DelayMs when ThinkSigma > 0, clamped): one draw
	// a round, keyed by ThinkKey (a place of the round), so its branches
	// start together.
	ThinkSigma, ThinkMinMs, ThinkMaxMs float32
	ThinkKey                           int32
	Think                              bool
}

// dagMeta is a turn's DagTurn in the tool's own JSONL.
type dagMeta struct {
	Conv   int32             `json:"conv"`
	Wait   []int32           `json:"wait,omitempty"`
	Fork   int32             `json:"fork,omitempty"`
	System *string           `json:"system,omitempty"` // the turn's own system prompt ("" none)
	Before []string          `json:"before,omitempty"` // the turn's user messages before its last
	Raw    []json.RawMessage `json:"raw,omitempty"`    // the turn's messages as written, sent as they are
	Alone  bool              `json:"alone,omitempty"`  // sent with nothing threaded in (context_mode message_array_with_responses)
	Think  *think            `json:"think,omitempty"`
}

type think struct {
	Key   int32   `json:"key"`
	Sigma float32 `json:"sigma,omitempty"`
	Min   float32 `json:"min_ms,omitempty"`
	Max   float32 `json:"max_ms,omitempty"`
}

// dagConv is one dag_jsonl line.
type dagConv struct {
	id                 string
	line               int
	turns              []map[string]any    // as multi_turn turns: text, output_length, delay, extra
	before             [][]string          // each turn's user messages before its last
	authored           [][]json.RawMessage // each turn's messages as written (nil: its user text)
	system             *string             // its first turn's system prompt
	forks              [][]dagFork         // each turn's
	spawns             [][]dagSpawn        // each turn's
	pre                []string
	orchestrator       bool
	orchSpawns         []string
	rounds             []dagRound
	spine              bool // "rounds" given: each round after its think time
	think              dagThink
	forkParents, users int // references to it as a FORK target, and all references
	// isolated: context_mode message_array_with_responses, each turn its
	// own whole messages (system prompt and history too), sent as written
	// with nothing threaded in.
	isolated bool
}

type dagFork struct {
	child      string
	background bool
}

type dagSpawn struct {
	children []string
	joinAt   int  // the turn that waits for the children (none past the last)
	explicit bool // join_at was given (a bare string joins the next turn, if any)
}

type dagRound struct {
	spawns []string
	think  *float64
}

type dagThink struct {
	Ms    *float64 `json:"think_time_ms"`
	Sigma *float64 `json:"think_time_sigma"`
	Min   *float64 `json:"think_time_min_ms"`
	Max   *float64 `json:"think_time_max_ms"`
}

// dagLayoutVersion keys the tool's own JSONL of a dag_jsonl file (kept in
// the temp folder by the file's digest): change it whenever what
// dagTrees writes, or what dagLine accepts, changes, or a run reads a
// layout an older build made (or accepted).
const dagLayoutVersion = "v5"

// dagMaxTurns bounds a tree's turns (instances multiply: a spawn target
// referenced from several places, an orchestrator's rounds).
const dagMaxTurns = 100_000

// indexDag reads a dag_jsonl file: each root (a conversation no other
// names in its forks, spawns or pre_session_spawns) and what its
// branches reach become one session of the tool's own JSONL, each turn
// with its DagTurn, indexed as a multi_turn file; a file without
// branches is its conversations, one a session, as before. What AIPerf's
// loader refuses is refused with the line and why, as is what this tool
// does not send (tools, media, authored assistant turns, another model,
// context_mode message_array_with_responses).
func indexDag(path string, tok *tokenizer.Tokenizer, model string) (*Sessions, error) {
	tok = orBuiltin(tok)
	var x *Sessions
	ix, err := derivedWith(path, "dag", dagLayoutVersion+"\x00"+model, func(w io.Writer) error {
		var convs []*dagConv
		byID := map[string]*dagConv{}
		_, err := eachLine(path, func(line []byte, n int, _ int64, _ int) error {
			c, err := dagLine(line, model)
			if err != nil {
				return fmt.Errorf("%s:%d: %v", path, n, err)
			}
			if at, dup := byID[c.id]; dup {
				return fmt.Errorf("%s:%d: session_id %q again (first at line %d)", path, n, c.id, at.line)
			}
			c.line = n
			byID[c.id] = c
			convs = append(convs, c)
			return nil
		})
		if err != nil {
			return err
		}
		trees, err := dagTrees(convs, byID)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		for _, t := range trees {
			b, _ := json.Marshal(t)
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
		}
		return nil
	}, func(jsonl string) (*Index, error) {
		s, err := indexSessionsOf(&Sessions{Path: jsonl, tok: tok, ofDag: true})
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

// dagLine reads one dag_jsonl line.
func dagLine(line []byte, model string) (*dagConv, error) {
	var conv map[string]json.RawMessage
	if err := json.Unmarshal(line, &conv); err != nil {
		return nil, fmt.Errorf("a dag_jsonl line is a conversation object: %v", err)
	}
	if err := dagKeys(conv, dagConvKeys, "the conversation"); err != nil {
		return nil, err
	}
	var c struct {
		SessionID    string            `json:"session_id"`
		Turns        []json.RawMessage `json:"turns"`
		ContextMode  *string           `json:"context_mode"`
		Orchestrator bool              `json:"orchestrator"`
		Spawns       []string          `json:"spawns"`
		Pre          []string          `json:"pre_session_spawns"`
		Rounds       json.RawMessage   `json:"rounds"`
		dagThink
	}
	if err := json.Unmarshal(line, &c); err != nil {
		return nil, err
	}
	if c.SessionID == "" {
		return nil, fmt.Errorf("a conversation needs a session_id")
	}
	isolated := false
	if c.ContextMode != nil {
		switch *c.ContextMode {
		case "deltas_without_responses":
		case "message_array_with_responses":
			isolated = true
		default:
			return nil, fmt.Errorf("session %s: context_mode %q: want deltas_without_responses (AIPerf's default: the turns' messages appended, live answers threaded in) or message_array_with_responses (each turn its own whole messages)", c.SessionID, *c.ContextMode)
		}
	}
	out := &dagConv{id: c.SessionID, orchestrator: c.Orchestrator, pre: c.Pre, think: c.dagThink, isolated: isolated}
	if err := out.checkThink(); err != nil {
		return nil, err
	}
	if c.Orchestrator {
		return out, out.orchestratorOf(c.Turns, c.Spawns, c.Pre, c.Rounds)
	}
	switch {
	case len(c.Spawns) > 0 || len(c.Rounds) > 0 && !emptyJSON(c.Rounds):
		return nil, fmt.Errorf("session %s: conversation-level \"spawns\" and \"rounds\" belong to an orchestrator (\"orchestrator\": true)", c.SessionID)
	case len(c.Turns) == 0:
		return nil, fmt.Errorf("session %s: no turns", c.SessionID)
	}
	for k, raw := range c.Turns {
		if err := out.turn(k, raw, model); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// orchestratorOf reads an orchestrator: no turns, its spawns fired at
// once or in rounds.
func (c *dagConv) orchestratorOf(turns []json.RawMessage, spawns, pre []string, rounds json.RawMessage) error {
	switch {
	case len(turns) > 0:
		return fmt.Errorf("session %s: an orchestrator sends no request of its own: omit \"turns\"", c.id)
	case len(pre) > 0:
		return fmt.Errorf("session %s: an orchestrator has no \"pre_session_spawns\"", c.id)
	}
	var n int
	var list []struct {
		Spawns []string `json:"spawns"`
		dagThink
	}
	switch {
	case emptyJSON(rounds):
		n = 1
	case json.Unmarshal(rounds, &n) == nil:
		c.spine = true
		if n < 1 || n > 10_000 {
			return fmt.Errorf("session %s: \"rounds\" %d: want 1 to 10000", c.id, n)
		}
	case json.Unmarshal(rounds, &list) == nil:
		c.spine = true
		if len(spawns) > 0 {
			return fmt.Errorf("session %s: \"rounds\" as a list names each round's spawns: omit the conversation's \"spawns\"", c.id)
		}
		for r, l := range list {
			if len(l.Spawns) == 0 {
				return fmt.Errorf("session %s: round %d has no \"spawns\"", c.id, r+1)
			}
			c.rounds = append(c.rounds, dagRound{spawns: l.Spawns, think: l.Ms})
		}
		if len(c.rounds) == 0 {
			return fmt.Errorf("session %s: \"rounds\" is an empty list", c.id)
		}
		return nil
	default:
		return fmt.Errorf("session %s: \"rounds\": want a count or a list of {\"spawns\": [...], \"think_time_ms\": ...}", c.id)
	}
	if len(spawns) == 0 {
		return fmt.Errorf("session %s: an orchestrator needs \"spawns\"", c.id)
	}
	for range n {
		c.rounds = append(c.rounds, dagRound{spawns: spawns})
	}
	return nil
}

func (c *dagConv) checkThink() error {
	for name, v := range map[string]*float64{"think_time_ms": c.think.Ms, "think_time_sigma": c.think.Sigma, "think_time_min_ms": c.think.Min, "think_time_max_ms": c.think.Max} {
		if v != nil && (*v < 0 || *v > 86_400_000 || *v != *v) {
			return fmt.Errorf("session %s: %q %g: want 0 to a day", c.id, name, *v)
		}
	}
	return nil
}

// turn reads turn k: its messages (a system prompt first, then its user
// messages), max_tokens, delay, extra and branches.
func (c *dagConv) turn(k int, raw json.RawMessage, model string) error {
	where := fmt.Sprintf("session %s turn %d", c.id, k+1)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return fmt.Errorf("%s: %v", where, err)
	}
	if err := dagKeys(keys, dagTurnKeys, where); err != nil {
		return err
	}
	var t struct {
		Messages  []map[string]json.RawMessage `json:"messages"`
		Model     string                       `json:"model"`
		MaxTokens *json.RawMessage             `json:"max_tokens"`
		Tools     json.RawMessage              `json:"tools"`
		Extra     map[string]json.RawMessage   `json:"extra"`
		Delay     *float64                     `json:"delay"`
		Forks     []json.RawMessage            `json:"forks"`
		Spawns    []json.RawMessage            `json:"spawns"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("%s: %v", where, err)
	}
	switch {
	case t.Model != "" && t.Model != model:
		return fmt.Errorf("%s: \"model\" %q: a turn's own model is not sent here (the run's is %q: one run measures one model)", where, t.Model, model)
	case len(t.Messages) == 0:
		return fmt.Errorf("%s: \"messages\" is empty", where)
	}
	var user, texts []string
	var authored []json.RawMessage // the turn's messages as written, when any is more than a user's text
	for i, m := range t.Messages {
		var role string
		json.Unmarshal(m["role"], &role)
		text, err := dagText(m["content"])
		if err != nil && role == "system" {
			return fmt.Errorf("%s message %d: %v", where, i+1, err)
		}
		switch {
		case role == "":
			return fmt.Errorf("%s message %d: no \"role\" (AIPerf's rule: each message has one)", where, i+1)
		case c.isolated && role == "system" && i > 0:
			return fmt.Errorf("%s message %d: a system message goes first in a message_array_with_responses turn (AIPerf's rule: later, a chat template drops it)", where, i+1)
		case c.isolated:
			b, _ := json.Marshal(m)
			authored = append(authored, b)
			texts = append(texts, messageText(m))
			continue
		case role == "system" && k == 0 && len(user) == 0 && len(authored) == 0:
			if c.system != nil { // several system messages: one prompt
				text = *c.system + "\n\n" + text
			}
			c.system = &text
			continue
		case role == "system":
			return fmt.Errorf("%s message %d: a system message goes first in a conversation's first turn (AIPerf's rule: after it a chat template drops it)", where, i+1)
		case role == "user" && err == nil && len(m) == 2 && len(authored) == 0:
			user = append(user, text)
		default:
			// Authored history, tool calls and results, media: the
			// turn's messages are sent as they are written, as AIPerf
			// forwards them.
			if len(authored) == 0 {
				for _, u := range user {
					b, _ := json.Marshal(map[string]string{"role": "user", "content": u})
					authored = append(authored, b)
				}
			}
		}
		if len(authored) > 0 || role != "user" || err != nil || len(m) != 2 {
			b, _ := json.Marshal(m)
			authored = append(authored, b)
		}
		texts = append(texts, messageText(m))
	}
	if len(user) == 0 && len(authored) == 0 {
		return fmt.Errorf("%s: no message but the system prompt", where)
	}
	var turn map[string]any
	if len(authored) > 0 {
		turn = map[string]any{"text": strings.Join(texts, "\n")}
		user = nil
	} else {
		turn = map[string]any{"text": user[len(user)-1]}
		user = user[:len(user)-1]
	}
	if len(t.Tools) > 0 && string(t.Tools) != "null" {
		// (a native field AIPerf forwards into the body, as extra is)
		if t.Extra == nil {
			t.Extra = map[string]json.RawMessage{}
		}
		t.Extra["tools"] = t.Tools
	}
	if t.MaxTokens != nil {
		var n int
		if err := json.Unmarshal(*t.MaxTokens, &n); err != nil || n < 1 {
			return fmt.Errorf("%s: \"max_tokens\" %s: want a whole number ≥ 1", where, *t.MaxTokens)
		}
		turn["output_length"] = n
	}
	if t.Delay != nil {
		turn["delay"] = *t.Delay
	}
	if len(t.Extra) > 0 {
		turn["extra"] = t.Extra
	}
	c.turns = append(c.turns, turn)
	c.before = append(c.before, user)
	c.authored = append(c.authored, authored)
	var forks []dagFork
	for _, f := range t.Forks {
		var s string
		var o struct {
			Child      string `json:"child"`
			Background bool   `json:"background"`
		}
		switch {
		case json.Unmarshal(f, &s) == nil && s != "":
			forks = append(forks, dagFork{child: s})
		case json.Unmarshal(f, &o) == nil && o.Child != "":
			forks = append(forks, dagFork{child: o.Child, background: o.Background})
		default:
			return fmt.Errorf("%s: \"forks\" entry %s: want a session_id or {\"child\": ..., \"background\": true}", where, f)
		}
	}
	var spawns []dagSpawn
	for _, f := range t.Spawns {
		var s string
		var o struct {
			Children []string `json:"children"`
			JoinAt   *int     `json:"join_at"`
		}
		switch {
		case json.Unmarshal(f, &s) == nil && s != "":
			spawns = append(spawns, dagSpawn{children: []string{s}, joinAt: k + 1})
		case json.Unmarshal(f, &o) == nil && len(o.Children) > 0:
			j := k + 1
			if o.JoinAt != nil {
				j = *o.JoinAt
			}
			spawns = append(spawns, dagSpawn{children: o.Children, joinAt: j, explicit: o.JoinAt != nil})
		default:
			return fmt.Errorf("%s: \"spawns\" entry %s: want a session_id or {\"children\": [...], \"join_at\": turn}", where, f)
		}
	}
	seen := map[string]bool{}
	for _, f := range forks {
		if seen[f.child] {
			return fmt.Errorf("%s: %q twice in \"forks\" (it would run twice; AIPerf refuses it)", where, f.child)
		}
		seen[f.child] = true
	}
	seen = map[string]bool{}
	for _, sp := range spawns {
		for _, ch := range sp.children {
			if seen[ch] {
				return fmt.Errorf("%s: %q twice in \"spawns\" (it would run twice and its join count twice; AIPerf refuses it)", where, ch)
			}
			seen[ch] = true
		}
	}
	c.forks, c.spawns = append(c.forks, forks), append(c.spawns, spawns)
	return nil
}

// dagKeys refuses a key AIPerf's schema does not know, as AIPerf does.
func dagKeys(m map[string]json.RawMessage, allowed []string, where string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("%s: unknown key %q (AIPerf's dag_jsonl schema has %s)", where, k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func emptyJSON(v json.RawMessage) bool {
	s := string(bytes.TrimSpace(v))
	return s == "" || s == "null" || s == "[]" || s == "false" || s == "{}"
}

// messageText is the text of a message, whatever its shape, for its
// tokens: its content's text (a string or text parts) and any tool calls'
// names and arguments.
func messageText(m map[string]json.RawMessage) string {
	var parts []string
	var s string
	if json.Unmarshal(m["content"], &s) == nil {
		parts = append(parts, s)
	} else {
		var ps []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(m["content"], &ps)
		for _, p := range ps {
			if p.Text != "" {
				parts = append(parts, p.Text)
			}
		}
	}
	var calls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	json.Unmarshal(m["tool_calls"], &calls)
	for _, c := range calls {
		parts = append(parts, c.Function.Name, c.Function.Arguments)
	}
	return strings.Join(parts, " ")
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
