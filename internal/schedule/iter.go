package schedule

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
)

// Iter yields a phase's entries in order, each made when it is asked for.
// It is not safe for concurrent use.
type Iter struct {
	ph     *Phase
	share  *RoundRobin // when set, only the entries it deals to me
	me     int
	i      int
	src    source // the phase's prompts, this iterator's own
	ids    *rand.Rand
	dues   *dueSpec
	pos    at     // multi-turn: the next entry's session and its turn there
	sessID string // the session's id (its first turn's)
	mine   bool   // the session is this worker's share
	e      Entry
	err    error
}

// Iter returns an iterator over the phase's entries from the first: those
// of a hand-made phase (Entries), or those its plan generates.
func (ph *Phase) Iter() *Iter {
	it := &Iter{ph: ph}
	if g := ph.gen; ph.generated() {
		it.ids = seeds.Stream(g.ids, seeds.StreamIDs)
		it.src = g.source()
		if g.arrivals != nil {
			d := *g.arrivals
			it.dues = &d
		}
	}
	return it
}

// Next makes the next entry, which Entry then returns; false when the
// entries have run out or one could not be made (see Err). With keep false
// it makes the same draws but not the request body (Entry has the index
// and lengths only), for a worker passing over another worker's share.
func (it *Iter) Next(keep bool) bool {
	if it.share == nil {
		return it.next(keep)
	}
	for {
		// A multi-turn session is dealt whole, at its first turn.
		if g := it.ph.gen; g == nil || g.turns == nil || it.pos.turn == 0 {
			it.mine = it.share.Next() == it.me
		}
		mine := it.mine
		if !it.next(keep && mine) {
			return false
		}
		if mine {
			return true
		}
	}
}

// Entry is the entry the last Next made.
func (it *Iter) Entry() Entry { return it.e }

// Err is why Next stopped early, or nil.
func (it *Iter) Err() error { return it.err }

// next makes entry i: its prompt from the source, then its ids, its due
// time, whether it is cancelled, and its body.
func (it *Iter) next(keep bool) bool {
	ph := it.ph
	if it.err != nil {
		return false
	}
	if !ph.generated() {
		if it.i >= len(ph.Entries) {
			return false
		}
		it.e = ph.Entries[it.i]
		it.i++
		return true
	}
	if it.i >= ph.Count {
		it.src.close()
		return false
	}
	g, i := ph.gen, it.i
	it.i++
	pr, err := it.src.prompt(i, it.pos, keep)
	if err != nil {
		it.err = err
		return false
	}
	g.finish(&pr, i)
	e := it.identify(i, keep, pr)
	if !it.due(&e) {
		return false
	}
	if !ph.Cycle && Cancelled(ph.Seed, i, ph.CancelPct) {
		e.CancelAfterNs = ph.CancelDelay
	}
	if keep {
		if it.err = g.body(&e, pr, ph.Cycle); it.err != nil {
			return false
		}
	}
	it.e = e
	return true
}

// finish applies what every source's prompt takes from the profile: a
// media-only type sends no text, and a file's line without an output
// length takes --osl's (AIPerf's precedence), drawn for request i from its
// own source.
func (g *gen) finish(pr *prompt, i int) {
	b := g.b
	if b.imagesOnly || b.audioOnly {
		pr.Text, pr.ISL, pr.MaxTokens, pr.own = "", 0, 0, "" // (its media alone)
		return
	}
	if n := b.systemISL; n > 0 {
		// --system-prompt: the system message of every request (and of
		// every turn, so counted in each turn's tokens before its own).
		pr.System = b.p.SystemPrompt
		pr.ISL += n
		pr.SystemISL += n
	}
	raw := g.raw()
	if pr.MaxTokens == 0 && !g.synthetic && b.p.OSLMean > 0 && !raw {
		pr.MaxTokens = drawOSL(b.p, seeds.Draw(g.oslRoot, uint64(i)))
	}
}

// before is a dag_jsonl turn's user messages before its text.
func before(pr prompt) []string {
	if pr.dag == nil {
		return nil
	}
	return pr.dag.Before
}

// authored is a dag_jsonl turn's messages as written.
func authored(pr prompt) []json.RawMessage {
	if pr.dag == nil {
		return nil
	}
	return pr.dag.Raw
}

// identify makes entry i's ids: a session's turns share its first turn's
// id (drawn once a session) and are numbered from 0, each after its delay.
func (it *Iter) identify(i int, keep bool, pr prompt) Entry {
	g := it.ph.gen
	var id string
	turn := 0
	if g.turns != nil {
		turn = it.pos.turn
		if turn == 0 {
			it.sessID = uuid(it.ids)
		}
		id = it.sessID
		if it.pos.turn++; it.pos.turn == g.turns[it.pos.sess] {
			it.pos = at{sess: it.pos.sess + 1}
		}
	} else if keep {
		id = uuid(it.ids)
	} else {
		it.ids.Uint64()
		it.ids.Uint64()
	}
	e := Entry{Index: i, SessionID: id, ISL: pr.ISL, MaxTokens: pr.MaxTokens, Turn: turn, Dag: pr.dag}
	if turn > 0 || pr.think != nil { // (an orchestrator's first round thinks too)
		ms := pr.delayMs
		if pr.think != nil {
			ms = g.thinkMs(i-turn+int(pr.think.ThinkKey), ms, pr.think)
		}
		e.DelayNs = g.turnDelay(g.b.p, i, ms)
	}
	if g.turns != nil {
		e.SystemISL = pr.SystemISL
		if keep {
			e.Prompt = pr.Text
		}
	}
	return e
}

// due sets e's due offset: a fixed schedule's, or the arrival process's
// next (a session's start, not its later turns). False, with Err set, when
// the process ran out early.
func (it *Iter) due(e *Entry) bool {
	g, ph := it.ph.gen, it.ph
	switch {
	case g.dues != nil:
		e.DueNs = seconds(g.dues[e.Index])
	case it.dues != nil && (g.turns == nil || e.Turn == 0):
		t, ok := it.dues.next()
		if !ok {
			it.err = fmt.Errorf("%s phase: the arrival process ended after %d of %d requests", ph.Name, e.Index, ph.Count)
			return false
		}
		e.DueNs = seconds(t)
	}
	return true
}

// body builds e's request body from its prompt: the endpoint type's
// codec over the prompt, its system prompt and media, --extra-inputs with
// a line's own extra over them (as AIPerf does), and a tokens-in type's
// ids; a raw line is its own body.
func (g *gen) body(e *Entry, pr prompt, cycle bool) error {
	b := g.b
	extra := b.extra
	if len(pr.Extra) > 0 {
		extra = maps.Clone(b.extra)
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		maps.Copy(extra, pr.Extra)
	}
	system := g.system
	if pr.System != "" || pr.ownSys {
		system = pr.System
	}
	raw := g.raw()
	if pr.dag != nil && (len(pr.dag.Before) > 0 || len(pr.dag.Raw) > 0) && b.p.EndpointType != endpoint.TypeChat {
		return fmt.Errorf("build request %d: a dag_jsonl turn of several messages, or of messages written as they are sent, is a chat's messages: it needs --endpoint-type chat", e.Index)
	}
	build := b.kind.Build
	if raw {
		build = func(endpoint.Input) ([]byte, error) { return []byte(pr.Text), nil } // (the line is the body)
	}
	var ids []int
	if b.traits.TokenIn && !raw {
		// The system prompt's ids, then the prompt's, each encoded on its
		// own as the client counts them.
		for _, text := range []string{system, pr.Text} {
			more, err := b.tok.Encode(text)
			if err != nil {
				return fmt.Errorf("build request %d: tokenize its prompt: %w", e.Index, err)
			}
			ids = append(ids, more...)
		}
	}
	req, err := build(endpoint.Input{Model: g.model(e.Index), Prompt: pr.Text, System: system, MaxTokens: pr.MaxTokens, Stream: b.p.Streaming,
		Usage: b.p.UseServerTokenCount, Extra: extra, Query: pr.query, Passages: pr.passages, Batch: pr.batch, Before: before(pr), Messages: authored(pr), Images: pr.images, Audios: pr.audios, Videos: pr.videos, TokenIDs: ids})
	if err != nil {
		return fmt.Errorf("build request %d: %w", e.Index, err)
	}
	e.Body = req
	if cycle && g.synthetic {
		locateFresh(e, req, pr.Text, pr.own, ids, b.tok.Words())
	}
	return nil
}

// model is the model request i names: the one model, or with several,
// AIPerf's --model-selection-strategy: round_robin (i mod n) or random
// (request i's own seeded draw).
func (g *gen) model(i int) string {
	p := g.b.p
	if len(p.MoreModels) == 0 {
		return p.Model
	}
	ms := p.Models()
	if p.ModelSelection == config.ModelRandom {
		return ms[seeds.Draw(g.modelRoot, uint64(i)).IntN(len(ms))]
	}
	return ms[i%len(ms)]
}

// uuid draws a version-4-shaped UUID from r.
func uuid(r *rand.Rand) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// raw reports prompts that are whole request bodies, sent as they are: a
// raw_payload file's lines, or a raw_payload folder's turns.
func (g *gen) raw() bool {
	return g.index != nil && g.index.Raw() || g.convs != nil && g.convs.Raw()
}
