package sweep

import (
	"math"
	"slices"
)

// Slope is an ordinary least-squares line through a gauge's values over
// time, with the t statistic of its slope.
type Slope struct {
	PerSecond float64 `json:"per_second"`
	T         float64 `json:"t"` // slope ÷ its standard error; ±Inf when the points lie on the line
	N         int     `json:"n"` // points fitted
	Rise      float64 `json:"rise"`
}

// MinSlopePoints is the fewest points a slope is fitted to.
const MinSlopePoints = 5

// FitSlope fits a line to (ts, vs); ok is false with fewer than
// MinSlopePoints points or no spread in time.
func FitSlope(ts, vs []float64) (Slope, bool) {
	n := len(ts)
	// Too few points for a slope and its error.
	if n < MinSlopePoints || n != len(vs) {
		return Slope{}, false
	}
	var mt, mv float64
	for i := range ts {
		mt, mv = mt+ts[i], mv+vs[i]
	}
	mt, mv = mt/float64(n), mv/float64(n)
	var stt, stv float64
	for i := range ts {
		stt += (ts[i] - mt) * (ts[i] - mt)
		stv += (ts[i] - mt) * (vs[i] - mv)
	}
	// All points at one time: no slope.
	if stt == 0 {
		return Slope{}, false
	}
	b := stv / stt
	var sse float64
	for i := range ts {
		r := vs[i] - (mv + b*(ts[i]-mt))
		sse += r * r
	}
	s := Slope{PerSecond: b, N: n, Rise: b * (ts[n-1] - ts[0])}
	se := math.Sqrt(sse / float64(n-2) / stt)
	switch {
	case se > 0:
		s.T = b / se
	case b > 0:
		s.T = math.Inf(1)
	case b < 0:
		s.T = math.Inf(-1)
	}
	return s, true
}

// Isotonic is the least-squares non-increasing fit of ys (in the order of
// their x): the pool-adjacent-violators algorithm, every point weighted
// alike.
func Isotonic(ys []float64) []float64 {
	type block struct {
		sum float64
		n   int
	}
	var bs []block
	for _, y := range ys {
		bs = append(bs, block{y, 1})
		// Pool while a block is above the one before it.
		for len(bs) > 1 {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			if a.sum/float64(a.n) >= b.sum/float64(b.n) {
				break
			}
			bs = append(bs[:len(bs)-2], block{a.sum + b.sum, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(ys))
	for _, b := range bs {
		for range b.n {
			out = append(out, b.sum/float64(b.n))
		}
	}
	return out
}

// PCHIP is the monotone piecewise cubic Hermite interpolant through
// (xs, ys), xs strictly rising (Fritsch–Carlson slopes): it never
// overshoots its points, so a monotone input stays monotone.
type PCHIP struct {
	xs, ys, ds []float64
}

// NewPCHIP builds the interpolant; it needs two points or more.
func NewPCHIP(xs, ys []float64) *PCHIP {
	n := len(xs)
	h := make([]float64, n-1)
	del := make([]float64, n-1)
	for i := range n - 1 {
		h[i] = xs[i+1] - xs[i]
		del[i] = (ys[i+1] - ys[i]) / h[i]
	}
	ds := make([]float64, n)
	if n == 2 {
		ds[0], ds[1] = del[0], del[0]
		return &PCHIP{xs, ys, ds}
	}
	for i := 1; i < n-1; i++ {
		// A turn or a flat side: a flat tangent keeps it monotone.
		if del[i-1]*del[i] <= 0 {
			continue
		}
		w1, w2 := 2*h[i]+h[i-1], h[i]+2*h[i-1]
		ds[i] = (w1 + w2) / (w1/del[i-1] + w2/del[i])
	}
	ds[0] = endSlope(h[0], h[1], del[0], del[1])
	ds[n-1] = endSlope(h[n-2], h[n-3], del[n-2], del[n-3])
	return &PCHIP{xs, ys, ds}
}

// endSlope is the one-sided three-point slope at an end, kept monotone.
func endSlope(h0, h1, d0, d1 float64) float64 {
	d := ((2*h0+h1)*d0 - h0*d1) / (h0 + h1)
	switch {
	case math.Signbit(d) != math.Signbit(d0):
		return 0
	case math.Signbit(d0) != math.Signbit(d1) && math.Abs(d) > math.Abs(3*d0):
		return 3 * d0
	}
	return d
}

// At is the interpolant's value at x, inside [xs[0], xs[n-1]].
func (p *PCHIP) At(x float64) float64 {
	i, _ := slices.BinarySearch(p.xs, x)
	i = min(max(i, 1), len(p.xs)-1)
	x0, x1 := p.xs[i-1], p.xs[i]
	h := x1 - x0
	t := (x - x0) / h
	h00 := (1 + 2*t) * (1 - t) * (1 - t)
	h10 := t * (1 - t) * (1 - t)
	h01 := t * t * (3 - 2*t)
	h11 := t * t * (t - 1)
	return h00*p.ys[i-1] + h10*h*p.ds[i-1] + h01*p.ys[i] + h11*h*p.ds[i]
}

// Root is where the interpolant crosses 0 inside [a, b] (a value at a
// ≥ 0 and at b < 0), by bisection to a millionth of the interval.
func (p *PCHIP) Root(a, b float64) float64 {
	for range 60 {
		m := (a + b) / 2
		if p.At(m) >= 0 {
			a = m
		} else {
			b = m
		}
		if b-a < 1e-6*math.Max(1, math.Abs(b)) {
			break
		}
	}
	return (a + b) / 2
}
