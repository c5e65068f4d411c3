package order

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// nth selects the value a sort puts at k, whatever the input's shape: few
// distinct values (gauges), sorted and reversed runs, NaNs, and an input
// built to defeat the pivot (it falls back to a sort).
func TestNth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(i, n int) float64{
		"random":   func(i, n int) float64 { return rng.NormFloat64() },
		"few":      func(i, n int) float64 { return float64(rng.IntN(3)) },
		"equal":    func(i, n int) float64 { return 7 },
		"sorted":   func(i, n int) float64 { return float64(i) },
		"reversed": func(i, n int) float64 { return float64(n - i) },
		"organ":    func(i, n int) float64 { return float64(min(i, n-i)) },
		"nan": func(i, n int) float64 {
			if i%5 == 0 {
				return math.NaN()
			}
			return rng.Float64()
		},
	}
	for name, f := range shapes {
		for _, n := range []int{1, 2, 3, 17, 18, 100, 1001, 4096} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = f(i, n)
			}
			want := slices.Clone(xs)
			slices.Sort(want)
			for _, k := range []int{0, n / 3, n / 2, n - 1} {
				ys := slices.Clone(xs)
				got := Nth(ys, k)
				if !same(got, want[k]) || !same(ys[k], want[k]) {
					t.Fatalf("%s n=%d: nth %d = %v, sort says %v", name, n, k, got, want[k])
				}
				for i := range ys {
					if (i < k && cmp.Less(ys[k], ys[i])) || (i > k && cmp.Less(ys[i], ys[k])) {
						t.Fatalf("%s n=%d k=%d: %v at %d is on the wrong side", name, n, k, ys[i], i)
					}
				}
			}
		}
	}
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// BenchmarkNth selects the median, then the 95th and 5th percentiles in
// its halves (the phases' published distributions), of a day's values of
// one cell at 2 s: 43,200 rates around a level.
func BenchmarkNth(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 43200)
	for i := range xs {
		xs[i] = 1000 + 50*rng.NormFloat64()
	}
	ys := make([]float64, len(xs))
	b.ReportAllocs()
	for b.Loop() {
		copy(ys, xs)
		n := len(ys)
		Nth(ys, n/2)
		Nth(ys[n/2+1:], int(0.95*float64(n-1))-n/2-1)
		Nth(ys[:n/2+1], int(0.05*float64(n-1)))
	}
}
