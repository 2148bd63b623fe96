package wire

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// MergeStamps sums the workers' stamp counts and merges their read-delay
// histograms into run.json's stamps; nil when no worker reported any.
func MergeStamps(workers []*Stamps) *result.Stamps {
	st := &result.Stamps{}
	var delay *hdr.Histogram
	n := 0
	for _, w := range workers {
		if w == nil {
			continue
		}
		n++
		st.Add(w.Stamps)
		if w.ReadDelay == "" {
			continue
		}
		h, err := hdr.Decode([]byte(w.ReadDelay))
		if err != nil {
			continue // (a worker of this binary encoded it; nothing to show)
		}
		if delay == nil {
			delay = h
		} else {
			delay.Merge(h)
		}
	}
	if n == 0 {
		return nil
	}
	st.Source = st.Stamps.Source()
	if delay != nil {
		st.ReadDelayMs = metrics.HistDist("ms", "us", 1000, delay)
	}
	return st
}
