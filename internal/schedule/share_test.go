package schedule

import "testing"

// A RoundRobin deals in proportion to the weights, interleaved.
func TestRoundRobinProportionalAndInterleaved(t *testing.T) {
	t.Parallel()
	rr := NewRoundRobin([]int{3, 2})
	got := make([]int, 10)
	for i := range got {
		got[i] = rr.Next()
	}
	count := map[int]int{}
	for _, w := range got {
		count[w]++
	}
	if count[0] != 6 || count[1] != 4 {
		t.Fatalf("counts %v for %v", count, got)
	}
	// Interleaved: no worker gets more than 2 requests in a row with weights 3:2.
	run := 1
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			run++
			if run > 2 {
				t.Fatalf("not interleaved: %v", got)
			}
		} else {
			run = 1
		}
	}
}
