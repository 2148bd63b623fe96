package worker

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
)

// history is a session's turns so far, threaded before its next one.
type history struct {
	turns []endpoint.Turn
	isl   int
}

func (h history) clone() history { return history{turns: slices.Clone(h.turns), isl: h.isl} }

// turn sends session turn e, due at due, after the session's history
// (unless its turns are standalone), and adds it to the history; false
// when its body could not take the history.
func (r *phaseRun) turn(e schedule.Entry, due int64, h *history) bool {
	own := e.ISL
	var before []string
	var raw []json.RawMessage
	msgs := 1 // (the body's last messages that are the turn's own)
	if e.Dag != nil {
		before, raw, msgs = e.Dag.Before, e.Dag.Raw, 1+len(e.Dag.Before)
		if len(raw) > 0 {
			msgs = len(raw)
		}
	}
	alone := r.ph.Standalone || e.Dag != nil && e.Dag.Alone
	if len(h.turns) > 0 && !alone {
		body, err := endpoint.WithHistory(e.Body, h.turns, msgs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "session %s turn %d: %v\n", e.SessionID, e.Turn, err)
			return false
		}
		e.Body, e.ISL = body, e.ISL+h.isl
	}
	rec := r.do(e, due, false)
	if e.Dag != nil && e.Dag.Alone {
		return true // (nothing of it goes into a later turn)
	}
	h.turns = append(h.turns, endpoint.Turn{User: e.Prompt, Assistant: rec.Output, Before: before, Raw: raw})
	h.isl += own - e.SystemISL + rec.OSL // (the system prompt is counted once, in each turn's own)
	return true
}

// tree runs a dag_jsonl tree, the session whose turns are every
// conversation instance's (schedule.DagStep): each conversation in order
// on a goroutine of its own, a turn after the turns it waits for have
// their answers (a FORK child's first with its parent's history to the
// fork, answer and all), and returns when every conversation has ended.
// A conversation that stops early (the sends ended, a body that could
// not take its history) releases the turns waiting for it, which then
// stop or go on as the sends allow.
func (r *phaseRun) tree(turns []schedule.Entry) {
	n := len(turns)
	done := make([]chan struct{}, n)
	for i := range done {
		done[i] = make(chan struct{})
	}
	forked := make([]bool, n) // turns whose history a FORK child takes
	convs := map[int][]int{}
	var order []int
	for p, e := range turns {
		c := e.Dag.Conv
		if _, ok := convs[c]; !ok {
			order = append(order, c)
		}
		convs[c] = append(convs[c], p)
		if f := e.Dag.Fork; f > 0 && f <= n {
			forked[f-1] = true
		}
	}
	hist := make([]history, n) // (written before done[p] closes, read after)
	first := turns[0].DueNs
	var wg sync.WaitGroup
	for _, c := range order {
		wg.Add(1)
		go func(places []int) {
			defer wg.Done()
			k := 0
			defer func() { // (what never ran releases its waiters)
				for _, p := range places[k:] {
					close(done[p])
				}
			}()
			var h history
			for ; k < len(places); k++ {
				p := places[k]
				e := turns[p]
				for _, w := range e.Dag.Wait {
					if w < 0 || w >= n { // (a place the --request-count cut off)
						continue
					}
					select {
					case <-done[w]:
					case <-r.sends.Done():
						return
					}
				}
				if k == 0 && e.Dag.Fork > 0 && e.Dag.Fork <= n {
					h = hist[e.Dag.Fork-1].clone()
				}
				if e.DelayNs > 0 && !sleepUntil(r.sends, time.Now().Add(time.Duration(e.DelayNs))) {
					return
				}
				if r.sends.Err() != nil {
					return
				}
				due := r.clock()
				if p == 0 && r.ph.Rate > 0 {
					due = first
				}
				if !r.turn(e, due, &h) {
					return
				}
				if forked[p] {
					hist[p] = h.clone()
				}
				close(done[p])
			}
		}(convs[c])
	}
	wg.Wait()
}
