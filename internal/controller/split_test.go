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
