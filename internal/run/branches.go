package run

import (
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
)

// branchTally counts a dag_jsonl run's branches as AIPerf's branch_stats
// does, from the profiling phase's records set against its plan.
type branchTally struct {
	got map[string]map[int]byte // session → place → what came of it
}

// What came of a planned turn.
const (
	turnOK byte = iota + 1
	turnFailed
	turnUnsent
)

// newBranchTally is a tally for ph, or nil when its sessions are not
// dag_jsonl trees.
func newBranchTally(ph *schedule.Phase) *branchTally {
	if !ph.Branches() {
		return nil
	}
	return &branchTally{got: map[string]map[int]byte{}}
}

func (t *branchTally) add(rec *record.Record) {
	if t == nil || rec.Warmup {
		return
	}
	s := t.got[rec.SessionID]
	if s == nil {
		s = map[int]byte{}
		t.got[rec.SessionID] = s
	}
	switch {
	case rec.OK():
		s[rec.Turn] = turnOK
	case rec.ErrKind == record.ErrCancelled && rec.CancelCause == record.CancelUnsent:
		s[rec.Turn] = turnUnsent
	default:
		s[rec.Turn] = turnFailed
	}
}

// stats walks the plan's trees: a child (any conversation instance but a
// tree's root) is spawned when one of its turns was sent, completed when
// all were and answered, errored when one failed, truncated when it was
// spawned and some were never sent, and delayed when its first turn had a
// delay; a parent is suspended at a join (a turn, not its conversation's
// first, that waits for other turns) when the turn before it was sent,
// resumed when the join was sent, and the join suppressed when it was
// not. No run here stops a parent for a child's error (AIPerf's
// AIPERF_DAG_FAIL_FAST), so that count is 0.
func (t *branchTally) stats(ph *schedule.Phase) (*result.BranchStats, error) {
	if t == nil {
		return nil, nil
	}
	type conv struct {
		places  []int
		delayed bool
	}
	var st result.BranchStats
	var sess string
	convs := map[int]*conv{}
	var order []int
	flush := func() {
		got := t.got[sess]
		for _, c := range order {
			cv := convs[c]
			sent, ok, failed := 0, 0, 0
			for _, p := range cv.places {
				switch got[p] {
				case turnOK:
					sent, ok = sent+1, ok+1
				case turnFailed:
					sent, failed = sent+1, failed+1
				}
			}
			if c == 0 || sent == 0 {
				continue
			}
			st.ChildrenSpawned++
			if ok == len(cv.places) {
				st.ChildrenCompleted++
			}
			if failed > 0 {
				st.ChildrenErrored++
			}
			if sent < len(cv.places) {
				st.ChildrenTruncated++
			}
			if cv.delayed {
				st.ChildrenDelayed++
			}
		}
		clear(convs)
		order = order[:0]
	}
	sentAt := func(p int) bool { g := t.got[sess][p]; return g == turnOK || g == turnFailed }
	it := ph.Iter()
	var joins [][2]int // (the turn before, the join) in this session
	for it.Next(false) {
		e := it.Entry()
		if e.Dag == nil {
			continue
		}
		if e.Turn == 0 {
			t.joinsOf(&st, joins, sentAt)
			flush()
			joins = joins[:0]
			sess = e.SessionID
		}
		cv := convs[e.Dag.Conv]
		if cv == nil {
			cv = &conv{delayed: e.DelayNs > 0}
			convs[e.Dag.Conv] = cv
			order = append(order, e.Dag.Conv)
		} else if len(e.Dag.Wait) > 0 {
			joins = append(joins, [2]int{cv.places[len(cv.places)-1], e.Turn})
		}
		cv.places = append(cv.places, e.Turn)
	}
	t.joinsOf(&st, joins, sentAt)
	flush()
	return &st, it.Err()
}

// into sets run's branch_stats (or says in its warnings why it could not).
func (t *branchTally) into(run *result.Run, ph *schedule.Phase) {
	bs, err := t.stats(ph)
	if err != nil {
		run.ToolHealth.Warnings = append(run.ToolHealth.Warnings, "branch_stats: "+err.Error())
		return
	}
	run.BranchStats = bs
}

func (t *branchTally) joinsOf(st *result.BranchStats, joins [][2]int, sent func(int) bool) {
	for _, j := range joins {
		if !sent(j[0]) {
			continue
		}
		st.ParentsSuspended++
		if sent(j[1]) {
			st.ParentsResumed++
		} else {
			st.JoinsSuppressed++
		}
	}
}
