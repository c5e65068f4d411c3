// Package downsample picks the points of a long series worth drawing. It is
// for drawing only: the analysis and every table use all points.
//
// MinMax splits the x range into equal buckets and keeps, in each bucket,
// the point with the lowest and the one with the highest value, so no spike
// and no dip is lost at any zoom the buckets resolve. It never interpolates
// and never invents a point: the result is a subset of the input, in order.
// Null points (missing values, refused by the estimator) stay null and keep
// their place, so a line drawn through the result has a gap wherever the
// input has one, never a segment across it. Points flagged Keep (incident
// markers) are always kept, and so are the first and the last point.
package downsample

import "math"

// Point is one point of a series. Null points have no value; Y is ignored
// for them. A point whose Y is NaN or an infinity counts as null.
type Point struct {
	X    float64 // ascending along the series
	Y    float64
	Null bool
	Keep bool // never dropped
}

// isNull reports whether p has no value to draw.
func (p Point) isNull() bool { return p.Null || math.IsNaN(p.Y) || math.IsInf(p.Y, 0) }

// MinMax returns the indices, ascending, of the points of pts to draw with
// at most about budget points. When pts has no more than budget points, or
// budget is below 4, it returns every index.
//
// The x range is split into budget/2 buckets of equal width (x must be
// ascending; equal x values are allowed). The result holds:
//   - the first and the last point;
//   - every point flagged Keep;
//   - in each bucket, the first point with the lowest value and the first
//     point with the highest value;
//   - the first null of every run of nulls, and the valid points on either
//     side of the run, so that a gap starts and ends where it does in pts.
//
// The result has at most budget+2 points plus three per run of nulls and
// one per Keep point.
func MinMax(pts []Point, budget int) []int {
	n := len(pts)
	// Nothing to save: draw every point.
	if n <= budget || budget < 4 {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	buckets := budget / 2
	x0, x1 := pts[0].X, pts[n-1].X
	width := (x1 - x0) / float64(buckets)

	keep := make([]bool, n)
	keep[0], keep[n-1] = true, true
	// Per bucket, the index of the lowest and highest valid point so far.
	lo, hi := -1, -1
	cur := -1
	flush := func() {
		if lo >= 0 {
			keep[lo], keep[hi] = true, true
		}
		lo, hi = -1, -1
	}
	for i, p := range pts {
		b := Bucket(p.X, x0, width, buckets)
		if b != cur {
			flush()
			cur = b
		}
		if p.Keep {
			keep[i] = true
		}
		if p.isNull() {
			// A run of nulls: its first null and the valid points around it.
			if i == 0 || !pts[i-1].isNull() {
				keep[i] = true
				if i > 0 {
					keep[i-1] = true
				}
			}
			if i+1 < n && !pts[i+1].isNull() {
				keep[i+1] = true
			}
			continue
		}
		if lo < 0 || p.Y < pts[lo].Y {
			lo = i
		}
		if hi < 0 || p.Y > pts[hi].Y {
			hi = i
		}
	}
	flush()

	count := 0
	for _, k := range keep {
		if k {
			count++
		}
	}
	idx := make([]int, 0, count)
	for i, k := range keep {
		if k {
			idx = append(idx, i)
		}
	}
	return idx
}

// Bucket returns the bucket of x among buckets buckets of the given width
// starting at x0: 0 to buckets-1, the last one closed at its right end.
// MinMax uses it; it is exported so that tests and callers can find the
// bucket a point fell in.
func Bucket(x, x0, width float64, buckets int) int {
	// All points at one x, or a single bucket: everything is bucket 0.
	if !(width > 0) {
		return 0
	}
	b := int(math.Floor((x - x0) / width))
	return min(max(b, 0), buckets-1)
}
