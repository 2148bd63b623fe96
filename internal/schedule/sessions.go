package schedule

import (
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
)

// conversations is the source of a multi_turn file's (or a weka trace's)
// turns: each read back from the file as its request is built.
type conversations struct {
	g *gen
	f *os.File // the file, open while its turns are read back
}

func (s *conversations) prompt(_ int, pos at, keep bool) (prompt, error) {
	g := s.g
	var pr prompt
	j, k := pos.sess, pos.turn
	line := g.convs.Lines[j]
	tm := g.convs.Turns[int(line.First)+k]
	pr.ISL, pr.MaxTokens, pr.SystemISL = int(tm.ISL+line.SystemISL), int(tm.MaxTokens), int(line.SystemISL)
	pr.delayMs = float64(tm.DelayMs)
	var dt *dataset.DagTurn
	if g.convs.Dag != nil {
		dt = &g.convs.Dag[int(line.First)+k]
		pr.dag = &DagStep{Conv: int(dt.Conv), Fork: int(dt.Fork), Alone: dt.Alone}
		for _, w := range dt.Wait {
			pr.dag.Wait = append(pr.dag.Wait, int(w))
		}
		if pr.ownSys = dt.OwnSystem; pr.ownSys {
			pr.ISL += int(dt.SystemISL - line.SystemISL)
			pr.SystemISL = int(dt.SystemISL)
		}
		if dt.Think {
			pr.think = dt
		}
	}
	if keep {
		f, err := openOnce(&s.f, g.convs.Path)
		if err != nil {
			return pr, err
		}
		if pr.Text, pr.System, pr.Extra, err = g.convs.Turn(j, k, f); err != nil {
			return pr, err
		}
		if dt != nil {
			var sys string
			if pr.dag.Before, pr.dag.Raw, sys, _, err = g.convs.DagTurnText(j, k, f); err != nil {
				return pr, err
			}
			if pr.ownSys {
				pr.System = sys
			}
		}
	}
	if n := g.b.p.UserContextPromptLength; n > 0 && k == 0 {
		// The conversation's own context before its first turn (and so in
		// its history), as for a synthetic session.
		pr.ISL += n
		if keep {
			pr.Text = g.userContext(n, j) + " " + pr.Text
		}
	}
	return pr, nil
}

func (s *conversations) close() { closeOnce(&s.f) }

// sessions lays out --conversation-num sessions, each of round(N(turn
// mean, turn stddev)) turns (at least 1; session s's count from its own
// source), stopping at --request-count turns when it was given.
func (g *gen) sessions(p *config.Profile, seed uint64) {
	g.delays = seeds.Root(seed, seeds.StreamTurnDelays)
	total := 0
	take := func(k int) bool { // (false: --request-count reached)
		if p.RequestCountSet && total+k > p.RequestCount {
			k = p.RequestCount - total
		}
		if k <= 0 {
			return false
		}
		g.turns = append(g.turns, k)
		total += k
		return true
	}
	if g.convs != nil { // a multi_turn file's, in file order
		for _, l := range g.convs.Lines {
			if !take(int(l.Count)) {
				break
			}
		}
		return
	}
	n := p.ConversationNum
	switch {
	case n > 0:
	case p.BenchmarkDuration > 0:
		n = p.NumDatasetEntries // (AIPerf's dataset of conversations; the duration stops the run)
	default:
		n = p.RequestCount // (one session per --request-count; that many turns at most)
	}
	mean := max(p.ConversationTurnMean, 1)
	for s := 0; s < n; s++ {
		k := int(math.Round(mean))
		if p.ConversationTurnStddev > 0 {
			k = int(math.Round(mean + p.ConversationTurnStddev*rand.New(seeds.Source(seed, seeds.StreamTurns, uint64(s))).NormFloat64()))
		}
		if !take(max(k, 1)) {
			break
		}
	}
}

// thinkMs is an orchestrator round's think time: a lognormal draw whose
// median is the round's think_time_ms, clamped to its min and max, one
// draw a round (key: the index of the round's first request, so its
// branches start together), from the run's seed (AIPerf's, reproducible
// under it).
func (g *gen) thinkMs(key int, median float64, d *dataset.DagTurn) float64 {
	ms := median
	if d.ThinkSigma > 0 {
		ms = median * math.Exp(float64(d.ThinkSigma)*seeds.Draw(g.delays, uint64(key)).NormFloat64())
	}
	ms = max(ms, float64(d.ThinkMinMs))
	if d.ThinkMaxMs > 0 {
		ms = min(ms, float64(d.ThinkMaxMs))
	}
	return ms
}

// turnDelay is request i's delay after the previous turn's answer: its
// file's "delay" (ms), or N(mean, stddev) ms, not negative; times the
// ratio.
func (g *gen) turnDelay(p *config.Profile, i int, fileMs float64) int64 {
	d := p.TurnDelayMean
	if g.convs != nil {
		d = fileMs
	} else if p.TurnDelayStddev > 0 {
		d += p.TurnDelayStddev * seeds.Draw(g.delays, uint64(i)).NormFloat64()
	}
	ratio := p.TurnDelayRatio
	if ratio == 0 {
		ratio = 1
	}
	return int64(math.Round(max(d, 0) * ratio * float64(time.Millisecond)))
}
