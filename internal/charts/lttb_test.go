package charts

import (
	"math"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// LTTB keeps the ends and the spikes a stride would lose, and is given no
// more points than asked.
func TestLTTBKeepsExtremes(t *testing.T) {
	pts := make(plotter.XYs, 100000)
	for i := range pts {
		pts[i] = plotter.XY{X: float64(i), Y: math.Sin(float64(i) / 5000)}
	}
	pts[31337].Y = 40   // a spike
	pts[77777].Y = -25  // a dip
	out := LTTB(pts, 500)
	if len(out) != 500 || out[0] != pts[0] || out[len(out)-1] != pts[len(pts)-1] {
		t.Fatalf("%d points, ends %v %v", len(out), out[0], out[len(out)-1])
	}
	hi, lo := false, false
	for i, p := range out {
		hi = hi || p.Y == 40
		lo = lo || p.Y == -25
		if i > 0 && p.X <= out[i-1].X {
			t.Fatalf("out of order at %d", i)
		}
	}
	if !hi || !lo {
		t.Errorf("spike kept %v, dip kept %v", hi, lo)
	}
	if got := LTTB(pts[:10], 500); len(got) != 10 {
		t.Errorf("short input: %d", len(got))
	}
}
