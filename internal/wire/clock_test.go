package wire

import (
	"math/rand/v2"
	"testing"
)

// The estimate against a known offset: ±1 s, with each direction's delay
// drawn apart (asymmetric, as a loaded host's are) and the worker's time to
// answer: the truth is always within the stated uncertainty, the sample of
// the least round trip is the one kept, and samples from a stepped clock
// (a round trip below zero) are refused.
func TestEstimateOffset(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, offset := range []int64{1e9, -1e9, 0, 123456789} {
		for trial := 0; trial < 200; trial++ {
			var ss []SyncSample
			now := int64(1_700_000_000_000_000_000)
			for i := 0; i < SyncRounds; i++ {
				up, down, answer := r.Int64N(2_000_000), r.Int64N(200_000), r.Int64N(50_000)
				t1 := now
				t2 := t1 + up + offset
				t3 := t2 + answer
				t4 := t3 - offset + down
				ss = append(ss, SyncSample{t1, t2, t3, t4})
				now = t4 + r.Int64N(1_000_000)
			}
			c, err := EstimateOffset(ss)
			if err != nil {
				t.Fatal(err)
			}
			if d := c.OffsetNs - offset; d > c.UncertaintyNs || -d > c.UncertaintyNs {
				t.Fatalf("offset %d: estimated %d ± %d", offset, c.OffsetNs, c.UncertaintyNs)
			}
			least := int64(1 << 62)
			for _, s := range ss {
				least = min(least, (s.T4-s.T1)-(s.T3-s.T2))
			}
			if c.RTTNs != least || c.Samples != SyncRounds {
				t.Fatalf("kept a round trip of %d, the least is %d (%d samples)", c.RTTNs, least, c.Samples)
			}
		}
	}
	if _, err := EstimateOffset([]SyncSample{{T1: 10, T2: 5, T3: 6, T4: 9}}); err == nil {
		t.Error("a sample whose round trip is below zero was taken")
	}
}
