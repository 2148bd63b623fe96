package controller

import (
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		c, n int
		want []int
	}{
		{8, 2, []int{4, 4}},
		{7, 3, []int{3, 2, 2}},
		{2, 5, []int{1, 1}}, // never more workers than streams
		{1, 0, []int{1}},
	}
	for _, c := range cases {
		if got := Split(c.c, c.n); !slices.Equal(got, c.want) {
			t.Errorf("Split(%d,%d) = %v, want %v", c.c, c.n, got, c.want)
		}
	}
}

func TestAssignProportionalAndInterleaved(t *testing.T) {
	t.Parallel()
	got := Assign(10, []int{3, 2})
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
