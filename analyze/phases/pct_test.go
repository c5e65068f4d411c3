package phases

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// pct selects what sorting would give: the q-quantile interpolated between
// ranks, over random sizes, ties and orders; and so does a distribution's
// p5, p50 and p95, each selected within the median's half.
func TestPctSelectsAsSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + rng.IntN(300)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(rng.IntN(1 + n/3)) // ties
		}
		sorted := slices.Sorted(slices.Values(xs))
		want := func(q float64) float64 {
			pos := q * float64(n-1)
			i := int(pos)
			w := sorted[i]
			if i+1 < n {
				w += (sorted[i+1] - sorted[i]) * (pos - float64(i))
			}
			return w
		}
		for _, q := range []float64{0, 0.05, 0.5, 0.95, 1} {
			if got := pct(slices.Clone(xs), q); got.V != want(q) {
				t.Fatalf("n %d q %g: %v, want %v", n, q, got.V, want(q))
			}
		}
		var p Published
		p.finish(slices.Clone(xs))
		for _, c := range []struct {
			q   float64
			got float64
		}{{0.05, p.P5.V}, {0.5, p.P50.V}, {0.95, p.P95.V}} {
			if c.got != want(c.q) {
				t.Fatalf("n %d: finish's q %g %v, want %v", n, c.q, c.got, want(c.q))
			}
		}
	}
}

// A stretch's figures fill the room made for them (nFigures): no stretch
// grows its array, none leaves room unused.
func TestFiguresFillTheirRoom(t *testing.T) {
	gs := newGaugeStats()
	if out := countedWith(nil, NewLog(0), nil, nil, &gs, true); len(out) != nFigures {
		t.Fatalf("a stretch has %d figures, room is made for %d", len(out), nFigures)
	}
}
