package sysstat

import (
	"runtime"
	"sort"
	"time"
)

// Witness is a control for timing measurements: a goroutine that wakes
// for a due time every period the way a load generator's scheduler does
// (sleeping to 2 ms before it, then yielding in a loop) and keeps how late
// it got there. What it sees is the host's share of any lateness (other
// processes, a slowed or stolen CPU), steal or no steal, so a tester's own
// lag can be told from the machine's. It costs about 2 ms of CPU a period.
type Witness struct {
	lates      []time.Duration
	stop, done chan struct{}
}

// StartWitness starts a witness; Stop ends it.
func StartWitness(period time.Duration) *Witness {
	w := &Witness{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		next := time.Now()
		for {
			next = next.Add(period)
			if d := time.Until(next) - 2*time.Millisecond; d > 0 {
				select {
				case <-time.After(d):
				case <-w.stop:
					return
				}
			}
			for time.Now().Before(next) {
				runtime.Gosched()
			}
			w.lates = append(w.lates, time.Since(next))
			select {
			case <-w.stop:
				return
			default:
			}
		}
	}()
	return w
}

// Stop ends the witness and returns its lateness at quantile q (0 with no
// wake-ups).
func (w *Witness) Stop(q float64) time.Duration {
	close(w.stop)
	<-w.done
	if len(w.lates) == 0 {
		return 0
	}
	sort.Slice(w.lates, func(i, j int) bool { return w.lates[i] < w.lates[j] })
	i := min(int(q*float64(len(w.lates))), len(w.lates)-1)
	return w.lates[i]
}
