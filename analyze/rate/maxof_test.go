package rate

import (
	"math"
	"testing"
)

// maxOf must be the builtin max on every pair of special and ordinary values.
func TestMaxOfIsMax(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 2.5, -2.5, math.MaxFloat64, -math.MaxFloat64,
		math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	same := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
	}
	for _, a := range vals {
		for _, b := range vals {
			if got, want := maxOf(a, b), max(a, b); !same(got, want) {
				t.Errorf("maxOf(%v, %v) = %v (bits %#x), want %v (bits %#x)", a, b, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
}
