package wire

import (
	"fmt"
	"math"
)

// Clock offsets. Before the shard, the controller sends each worker
// SyncRounds SYNC{t1} messages, one at a time; the worker answers each at
// once with SYNC_ACK{t1, t2, t3} (t2 when it read the SYNC, t3 when it
// answered, by its own clock) and the controller stamps t4 when the
// answer arrived. A sample's round trip is (t4 − t1) − (t3 − t2), and the
// worker's clock ahead of the controller's by ((t2 − t1) + (t3 − t4))/2,
// exact to within half the round trip whatever the two directions' delays
// (NTP's on-wire estimate). The sample of the least round trip is kept:
// its half round trip bounds the offset's error, which run.json records.
// Each worker's START then carries the phase's instant in that worker's
// clock, so that workers on hosts whose clocks disagree start together and
// their records' due times, lag and windows are in one frame.

// SyncRounds is how many SYNC round trips a worker answers before its shard.
const SyncRounds = 8

// SyncSample is one round trip: t1 and t4 by the controller's clock, t2
// and t3 by the worker's, unix ns.
type SyncSample struct{ T1, T2, T3, T4 int64 }

// ClockOffset is a worker's clock against the controller's.
type ClockOffset struct {
	// OffsetNs: the worker's clock minus the controller's.
	OffsetNs int64 `json:"offset_ns"`
	// UncertaintyNs: the offset is within ± this (half the least round
	// trip's network time).
	UncertaintyNs int64 `json:"uncertainty_ns"`
	RTTNs         int64 `json:"rtt_ns"` // the least round trip, less the worker's time to answer
	Samples       int   `json:"samples"`
}

// EstimateOffset is the offset of the sample with the least round trip;
// an error when no sample is consistent (a round trip below zero means a
// clock stepped during it).
func EstimateOffset(ss []SyncSample) (ClockOffset, error) {
	best := ClockOffset{RTTNs: math.MaxInt64}
	for _, s := range ss {
		rtt := (s.T4 - s.T1) - (s.T3 - s.T2)
		if rtt < 0 || s.T4 < s.T1 || s.T3 < s.T2 {
			continue
		}
		if rtt < best.RTTNs {
			best.RTTNs = rtt
			best.OffsetNs = ((s.T2 - s.T1) + (s.T3 - s.T4)) / 2
			best.UncertaintyNs = (rtt + 1) / 2
		}
		best.Samples++
	}
	if best.Samples == 0 {
		return ClockOffset{}, fmt.Errorf("none of %d clock samples is consistent (a clock stepped while they were taken)", len(ss))
	}
	return best, nil
}
