package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Sessions is an AIPerf multi_turn file indexed as a stream: each line a
// conversation, {"session_id": ..., "turns": [{"text": ..., "output_length":
// n, "delay": ms, "extra": {...}}, ...]}, of which the index keeps each
// turn's lengths and delay and each line's place in the file, and reads a
// turn's text back when its request is built. A leading turn with "role":
// "system" is the conversation's system prompt, sent before every turn
// and not a turn itself, as AIPerf lifts it.
type Sessions struct {
	Path   string
	Digest string
	Lines  []SessionMeta
	Turns  []TurnMeta // every line's turns, in order (Lines[j].First on)
	tok    *tokenizer.Tokenizer
	weka   *wekaIndex // a weka_trace input (indexWeka)
	raw    bool       // a raw_payload folder's (indexRawSessions): each turn's text is its request body
	// Dag is each turn's place in its dag_jsonl tree (beside Turns; nil
	// unless the file branches or has turns of several user messages).
	Dag   []DagTurn
	ofDag bool // the tool's own JSONL of a dag_jsonl file (its turns' "dag" read)
}

// Standalone reports turns whose prompts are whole in themselves (a
// weka_trace's calls carry their history in their hash ids; a raw_payload
// folder's bodies hold theirs): no history is threaded before them.
func (x *Sessions) Standalone() bool { return x.weka != nil || x.raw }

// Raw reports sessions whose turns' text is each turn's whole request
// body, sent as it is (a raw_payload folder).
func (x *Sessions) Raw() bool { return x.raw }

// SessionMeta is one conversation: its place in the file and its turns'
// place in Turns.
type SessionMeta struct {
	Off          int64
	Len          int32
	First, Count int32
	SystemISL    int32 // tokens of its system prompt
	HasSystem    bool  // its first turn is a system prompt
}

// TurnMeta is one turn: its own tokens, requested output and delay after
// the previous turn's answer.
type TurnMeta struct {
	ISL, MaxTokens int32
	DelayMs        float32
}

type sessionLine struct {
	SessionID string     `json:"session_id"`
	Turns     []fileLine `json:"turns"`
}

type roleOf struct {
	Role string `json:"role"`
}

// indexSessions reads a multi_turn file. Errors name the file, the line
// and the turn; every problem is listed at once (up to 20).
func indexSessions(path string, tok *tokenizer.Tokenizer) (*Sessions, error) {
	return indexSessionsOf(&Sessions{Path: path, tok: orBuiltin(tok)})
}

// indexSessionsOf reads x's multi_turn file into it.
func indexSessionsOf(x *Sessions) (*Sessions, error) {
	path := x.Path
	digest, err := eachLine(path, x.add)
	if err != nil {
		return nil, err
	}
	if len(x.Lines) == 0 {
		return nil, fmt.Errorf("%s: no conversations", path)
	}
	x.Digest = digest
	return x, nil
}

func (x *Sessions) add(line []byte, n int, off int64, size int) error {
	var sl sessionLine
	if err := json.Unmarshal(line, &sl); err != nil {
		return fmt.Errorf("%s:%d: %v", x.Path, n, err)
	}
	var rl struct {
		Turns []roleOf `json:"turns"`
	}
	json.Unmarshal(line, &rl) // (the same turns, their roles)
	m := SessionMeta{Off: off, Len: int32(size), First: int32(len(x.Turns))}
	turns := sl.Turns
	if len(turns) > 0 && len(rl.Turns) > 0 && rl.Turns[0].Role == "system" && turns[0].text() != nil {
		m.SystemISL, m.HasSystem = int32(x.tok.Count(*turns[0].text())), true
		turns = turns[1:]
	}
	if len(turns) == 0 {
		return fmt.Errorf("%s:%d: a conversation with no turns (want \"turns\": [{\"text\": ...}, ...])", x.Path, n)
	}
	for k, t := range turns {
		where := fmt.Sprintf("%s:%d: turn %d", x.Path, n, k+1)
		switch {
		case t.Turns != nil:
			return fmt.Errorf("%s: \"turns\" inside a turn", where)
		case t.Image != nil || t.Images != nil || t.Audio != nil || t.Audios != nil || t.Video != nil || t.Videos != nil:
			return fmt.Errorf("%s: media: only text prompts are sent so far", where)
		case t.Timestamp != nil:
			return fmt.Errorf("%s: \"timestamp\": turns here follow their answers (give \"delay\" in ms)", where)
		case t.text() == nil:
			return fmt.Errorf("%s: want \"text\" (or \"texts\", \"text_input\")", where)
		}
		tm := TurnMeta{ISL: int32(x.tok.Count(*t.text()))}
		if t.Dag != nil && x.ofDag {
			d := DagTurn{Conv: t.Dag.Conv, Wait: t.Dag.Wait, Fork: t.Dag.Fork, OwnSystem: t.Dag.System != nil, Alone: t.Dag.Alone}
			if d.OwnSystem {
				d.SystemISL = int32(x.tok.Count(*t.Dag.System))
			}
			if th := t.Dag.Think; th != nil {
				d.Think, d.ThinkKey, d.ThinkSigma, d.ThinkMinMs, d.ThinkMaxMs = true, th.Key, th.Sigma, th.Min, th.Max
			}
			for _, b := range t.Dag.Before {
				tm.ISL += int32(x.tok.Count(b))
			}
			for len(x.Dag) < len(x.Turns) {
				x.Dag = append(x.Dag, DagTurn{})
			}
			x.Dag = append(x.Dag, d)
		}
		if tm.ISL > MaxInputLength {
			return fmt.Errorf("%s: %d tokens, past %d", where, tm.ISL, MaxInputLength)
		}
		if t.OutputLength != nil {
			if *t.OutputLength < 0 || *t.OutputLength > MaxInputLength {
				return fmt.Errorf("%s: \"output_length\" %d: negative or past %d", where, *t.OutputLength, MaxInputLength)
			}
			tm.MaxTokens = int32(*t.OutputLength)
		}
		if t.Delay != nil {
			var d float64
			if err := json.Unmarshal(t.Delay, &d); err != nil || d < 0 || math.IsInf(d, 0) || d > 86_400_000 {
				return fmt.Errorf("%s: \"delay\" %s: want milliseconds, 0 to a day", where, t.Delay)
			}
			tm.DelayMs = float32(d)
		}
		x.Turns = append(x.Turns, tm)
	}
	m.Count = int32(len(turns))
	x.Lines = append(x.Lines, m)
	return nil
}

// Turn is conversation j's turn k: its text and "extra" fields, and the
// conversation's system prompt (""), read back from f.
func (x *Sessions) Turn(j, k int, f io.ReaderAt) (text, system string, extra map[string]json.RawMessage, err error) {
	if x.weka != nil {
		text, err := x.weka.turn(x.tok.Words(), j, k)
		return text, "", nil, err
	}
	t, system, err := x.turnLine(j, k, f)
	if err != nil {
		return "", "", nil, err
	}
	return *t.text(), system, t.Extra, nil
}

// DagTurnText is a dag_jsonl turn's user messages before its last (its
// Turn text), or its messages as written (raw, sent as they are), and its
// system prompt where it is its own.
func (x *Sessions) DagTurnText(j, k int, f io.ReaderAt) (before []string, raw []json.RawMessage, system string, own bool, err error) {
	t, _, err := x.turnLine(j, k, f)
	if err != nil || t.Dag == nil {
		return nil, nil, "", false, err
	}
	if t.Dag.System != nil {
		system, own = *t.Dag.System, true
	}
	return t.Dag.Before, t.Dag.Raw, system, own, nil
}

// turnLine reads conversation j's turn k back from f, and the
// conversation's system prompt.
func (x *Sessions) turnLine(j, k int, f io.ReaderAt) (*fileLine, string, error) {
	m := x.Lines[j]
	raw := make([]byte, m.Len)
	if _, err := f.ReadAt(raw, m.Off); err != nil && !errors.Is(err, io.EOF) {
		return nil, "", fmt.Errorf("%s: read conversation %d again: %w", x.Path, j+1, err)
	}
	var sl sessionLine
	if err := json.Unmarshal(bytes.TrimSpace(raw), &sl); err != nil {
		return nil, "", fmt.Errorf("%s: the file changed since it was read: %v", x.Path, err)
	}
	turns := sl.Turns
	var system string
	if m.HasSystem {
		system, turns = *turns[0].text(), turns[1:]
	}
	if k >= len(turns) {
		return nil, "", fmt.Errorf("%s: the file changed since it was read", x.Path)
	}
	return &turns[k], system, nil
}
