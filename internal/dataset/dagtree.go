package dataset

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// dagTrees checks the branches (every target declared, a FORK target
// forked from one place, bare forks terminal, joins inside the
// conversation, no cycle, no pre-session FORK target) and lays out each
// root's tree.
func dagTrees(convs []*dagConv, byID map[string]*dagConv) ([]dagOut, error) {
	ref := func(from *dagConv, at string, id string, fork bool) error {
		c, ok := byID[id]
		if !ok {
			return fmt.Errorf("line %d: session %s %s: branch target %q is not a session of the file", from.line, from.id, at, id)
		}
		if c.orchestrator {
			return fmt.Errorf("line %d: session %s: %q is an orchestrator, a root of its own, not a branch", from.line, from.id, id)
		}
		c.users++
		if fork {
			if c.forkParents++; c.forkParents > 1 {
				return fmt.Errorf("line %d: session %s: %q is forked from more than one place (AIPerf allows one FORK parent: its history would be ambiguous)", from.line, from.id, id)
			}
		}
		return nil
	}
	for _, c := range convs {
		n := len(c.turns)
		for k := range c.turns {
			for _, f := range c.forks[k] {
				if c.isolated {
					return nil, fmt.Errorf("line %d: session %s turn %d: a FORK child inherits its parent's history, and a message_array_with_responses conversation keeps none (its turns carry their own): give the child its messages and spawn it", c.line, c.id, k+1)
				}
				if !f.background && k != n-1 {
					return nil, fmt.Errorf("line %d: session %s turn %d: a bare fork ends the conversation, so it goes on the last turn (give {\"child\": %q, \"background\": true} to keep going)", c.line, c.id, k+1, f.child)
				}
				if err := ref(c, fmt.Sprintf("turn %d", k+1), f.child, true); err != nil {
					return nil, err
				}
			}
			for _, s := range c.spawns[k] {
				if s.joinAt <= k || s.joinAt >= n && s.explicit {
					return nil, fmt.Errorf("line %d: session %s turn %d: \"join_at\" %d: want a later turn of the conversation (%d to %d, from 0)", c.line, c.id, k+1, s.joinAt, k+1, n-1)
				}
				for _, ch := range s.children {
					if err := ref(c, fmt.Sprintf("turn %d", k+1), ch, false); err != nil {
						return nil, err
					}
				}
			}
		}
		for _, id := range c.pre {
			if err := ref(c, "pre_session_spawns", id, false); err != nil {
				return nil, err
			}
		}
		for _, r := range c.rounds {
			for _, id := range r.spawns {
				if err := ref(c, "spawns", id, false); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, c := range convs {
		for _, id := range c.pre {
			if byID[id].forkParents > 0 {
				return nil, fmt.Errorf("line %d: session %s: %q is in pre_session_spawns and also a FORK target (a pre-session child has no parent history)", c.line, c.id, id)
			}
		}
		for _, fs := range c.forks {
			for _, f := range fs {
				if byID[f.child].isolated {
					return nil, fmt.Errorf("line %d: session %s: FORK child %q is message_array_with_responses, which would drop the parent history the fork carries (AIPerf's rule: such a conversation is a SPAWN target)", byID[f.child].line, byID[f.child].id, f.child)
				}
				if byID[f.child].system != nil {
					return nil, fmt.Errorf("line %d: session %s: FORK child %q has a system message; it inherits its parent's, and a second would be dropped by the chat template (AIPerf's rule)", byID[f.child].line, byID[f.child].id, f.child)
				}
			}
		}
	}
	var out []dagOut
	branches := false
	for _, c := range convs {
		if c.users > 0 {
			branches = true
			continue
		}
		l := &layout{byID: byID, rootSys: c.system}
		if _, err := l.instance(c, nil, 0, c.system, nil); err != nil {
			return nil, err
		}
		if len(l.turns) == 0 {
			return nil, fmt.Errorf("line %d: session %s: no turn is sent", c.line, c.id)
		}
		turns := l.turns
		if c.system != nil {
			turns = append([]map[string]any{{"role": "system", "text": *c.system}}, turns...)
		}
		out = append(out, dagOut{SessionID: c.id, Turns: turns})
		for _, t := range l.turns {
			m := t["dag"].(*dagMeta)
			branches = branches || len(m.Before) > 0 || len(m.Raw) > 0 || m.Alone
		}
		branches = branches || c.orchestrator || len(c.pre) > 0
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("every conversation is a branch of another: no root (a cycle)")
	}
	if !branches { // linear conversations of one user message a turn: plain multi_turn sessions
		for i := range out {
			for _, t := range out[i].Turns {
				delete(t, "dag")
			}
		}
	}
	return out, nil
}

// layout lays out one tree's turns.
type layout struct {
	byID    map[string]*dagConv
	rootSys *string // the root's system prompt: the session's
	turns   []map[string]any
	convs   int32
	path    []string // the conversations being laid out, for cycles
	// roundKey is the place the orchestrator round being laid out starts
	// at: its think time's one draw is keyed by it.
	roundKey int32
}

// instance lays out an instance of c and what its branches reach: its
// first turn waits for wait (and inherits the history to turn fork−1
// when fork > 0), after think th when given; sys is the system prompt
// its turns send. It returns its last turn's place (−1: it has none).
func (l *layout) instance(c *dagConv, wait []int32, fork int32, sys *string, th *dagThink) (int32, error) {
	if slices.Contains(l.path, c.id) {
		return 0, fmt.Errorf("line %d: a cycle of branches: %s -> %s", c.line, strings.Join(l.path, " -> "), c.id)
	}
	l.path = append(l.path, c.id)
	defer func() { l.path = l.path[:len(l.path)-1] }()
	conv := l.convs
	l.convs++
	if c.orchestrator {
		return -1, l.rounds(c, wait)
	}
	for _, id := range c.pre { // (before its first turn, fire-and-forget)
		ch := l.byID[id]
		if _, err := l.instance(ch, wait, 0, ch.system, nil); err != nil {
			return 0, err
		}
	}
	first := int32(len(l.turns))
	if int(first)+len(c.turns) > dagMaxTurns {
		return 0, fmt.Errorf("line %d: session %s: a tree of more than %d turns (its branches' instances multiply)", c.line, c.id, dagMaxTurns)
	}
	for k, t := range c.turns {
		m := dagMeta{Conv: conv, Before: c.before[k], Raw: c.authored[k], Alone: c.isolated}
		if k == 0 {
			m.Wait, m.Fork = wait, fork
		}
		if c.isolated {
			sys = nil // (its system prompt is in its messages)
		}
		if (sys == nil) != (l.rootSys == nil) || sys != nil && *sys != *l.rootSys {
			s := ""
			if sys != nil {
				s = *sys
			}
			m.System = &s
		}
		turn := maps.Clone(t)
		if k == 0 && th != nil && th.Ms != nil {
			turn["delay"] = *th.Ms
			m.Think = &think{Key: l.roundKey, Sigma: f32(th.Sigma), Min: f32(th.Min), Max: f32(th.Max)}
		}
		turn["dag"] = &m
		l.turns = append(l.turns, turn)
	}
	for k := range c.turns {
		at := first + int32(k)
		for _, f := range c.forks[k] {
			if _, err := l.instance(l.byID[f.child], []int32{at}, at+1, sys, nil); err != nil {
				return 0, err
			}
		}
		for _, s := range c.spawns[k] {
			for _, id := range s.children {
				ch := l.byID[id]
				last, err := l.instance(ch, []int32{at}, 0, ch.system, nil)
				if err != nil {
					return 0, err
				}
				if j := s.joinAt; j < len(c.turns) && last >= 0 {
					m := l.turns[first+int32(j)]["dag"].(*dagMeta)
					m.Wait = append(m.Wait, last)
				}
			}
		}
	}
	return first + int32(len(c.turns)) - 1, nil
}

// rounds lays out an orchestrator's rounds: each round's branches start
// together, after the previous round's have all ended and, with "rounds",
// the round's think time (the first round's too, as AIPerf's spine delays
// its first turn); without "rounds", at once.
func (l *layout) rounds(c *dagConv, wait []int32) error {
	prev := wait
	for _, round := range c.rounds {
		th := c.think
		if round.think != nil {
			th.Ms = round.think
		}
		var t *dagThink
		if c.spine {
			t = &th
		}
		l.roundKey = int32(len(l.turns))
		var lasts []int32
		for _, id := range round.spawns {
			ch := l.byID[id]
			last, err := l.instance(ch, prev, 0, ch.system, t)
			if err != nil {
				return err
			}
			if last >= 0 {
				lasts = append(lasts, last)
			}
		}
		prev = lasts
	}
	return nil
}

func f32(v *float64) float32 {
	if v == nil {
		return 0
	}
	return float32(*v)
}
