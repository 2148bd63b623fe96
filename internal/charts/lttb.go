package charts

import (
	"math"

	"gonum.org/v1/plot/plotter"
)

// LTTB thins points sorted by X to at most n by largest-triangle-three-
// buckets (Steinarsson 2013): the first and last points stay, and from
// each of n−2 buckets the point making the largest triangle with the point
// kept before it and the mean of the next bucket, so a spike or a dip
// stays drawn where a mean or a stride would lose it. Fewer than n points
// come back as they are.
func LTTB(pts plotter.XYs, n int) plotter.XYs {
	if n < 3 || len(pts) <= n {
		return pts
	}
	out := make(plotter.XYs, 0, n)
	out = append(out, pts[0])
	every := float64(len(pts)-2) / float64(n-2)
	a := 0
	for i := 0; i < n-2; i++ {
		lo := int(math.Floor(float64(i)*every)) + 1
		hi := int(math.Floor(float64(i+1)*every)) + 1
		// The next bucket's mean (the last point for the last bucket).
		nlo, nhi := hi, int(math.Floor(float64(i+2)*every))+1
		if nhi > len(pts)-1 {
			nhi = len(pts) - 1
		}
		if nlo >= nhi {
			nlo, nhi = len(pts)-1, len(pts)
		}
		var mx, my float64
		for _, p := range pts[nlo:nhi] {
			mx += p.X
			my += p.Y
		}
		mx /= float64(nhi - nlo)
		my /= float64(nhi - nlo)
		best, area := lo, -1.0
		for j := lo; j < hi && j < len(pts)-1; j++ {
			ar := math.Abs((pts[a].X-mx)*(pts[j].Y-pts[a].Y) - (pts[a].X-pts[j].X)*(my-pts[a].Y))
			if ar > area {
				best, area = j, ar
			}
		}
		out = append(out, pts[best])
		a = best
	}
	return append(out, pts[len(pts)-1])
}
