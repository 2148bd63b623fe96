package worker

import (
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
