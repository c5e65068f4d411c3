package rate

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// A merge by the kept plan is the merge a fresh sort makes, bit for bit
// (the sums added in the same order), poll after poll, and a series whose
// bounds change (even to as many) gets a new plan: several label sets of
// rising bounds, some shared, with fractional deltas.
func TestMergeByPlanIsTheSortsMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	fresh := func(bs []bucket) []bucket {
		bs = slices.Clone(bs)
		slices.SortFunc(bs, func(x, y bucket) int { return cmp.Compare(x.le, y.le) })
		out := bs[:0]
		for _, b := range bs {
			if len(out) > 0 && out[len(out)-1].le == b.le {
				out[len(out)-1].n += b.n
				continue
			}
			out = append(out, b)
		}
		return out
	}
	e := New(Config{})
	series := e.seriesOf("h_bucket")
	var les []float64
	for poll := range 3000 {
		if poll%50 == 0 {
			// New bounds: 1–5 label sets of 1–30 rising bounds each.
			les = les[:0]
			for range 1 + rng.IntN(5) {
				n := 1 + rng.IntN(30)
				for k := range n {
					les = append(les, float64(rng.IntN(3)+k*3))
				}
				les = append(les, math.Inf(1))
			}
		}
		if poll%50 == 25 {
			// As many bounds, one of them moved: the plan must not stand.
			les[rng.IntN(len(les))] = float64(rng.IntN(100))
		}
		bs := make([]bucket, len(les))
		for i, le := range les {
			bs[i] = bucket{le, rng.Float64() * 1e3}
		}
		want := fresh(bs)
		got := e.mergeBuckets(series, bs)
		if len(got) != len(want) {
			t.Fatalf("poll %d: %d buckets, want %d", poll, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] || math.Signbit(got[i].n) != math.Signbit(want[i].n) {
				t.Fatalf("poll %d bucket %d: %v, want %v", poll, i, got[i], want[i])
			}
		}
	}
}
