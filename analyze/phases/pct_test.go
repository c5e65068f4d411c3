package phases

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// pct selects what sorting would give: the q-quantile interpolated between
// ranks, over random sizes, ties and orders.
func TestPctSelectsAsSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + rng.IntN(300)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(rng.IntN(1 + n/3)) // ties
		}
		sorted := slices.Sorted(slices.Values(xs))
		for _, q := range []float64{0, 0.05, 0.5, 0.95, 1} {
			pos := q * float64(n-1)
			i := int(pos)
			want := sorted[i]
			if i+1 < n {
				want += (sorted[i+1] - sorted[i]) * (pos - float64(i))
			}
			if got := pct(slices.Clone(xs), q); got.V != want {
				t.Fatalf("n %d q %g: %v, want %v", n, q, got.V, want)
			}
		}
	}
}
