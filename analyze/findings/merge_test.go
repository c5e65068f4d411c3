package findings

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergeTicksIsStableSort checks that merging runs in order gives what
// a stable sort of their concatenation gives, ties (and NaN) included.
func TestMergeTicksIsStableSort(t *testing.T) {
	type x = fleetTick // t, run (v), seq (poll)
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		var xs []x
		var ends []int
		for run := range 1 + r.IntN(9) {
			var ts []float64
			for range r.IntN(40) {
				v := float64(r.IntN(20)) / 2 // many ties within and across runs
				if r.IntN(50) == 0 {
					v = math.NaN()
				}
				ts = append(ts, v)
			}
			slices.SortFunc(ts, cmp.Compare[float64])
			for _, v := range ts {
				xs = append(xs, x{t: v, v: run, poll: len(xs)})
			}
			ends = append(ends, len(xs))
		}
		by := func(a, b x) int { return cmp.Compare(a.t, b.t) }
		want := slices.Clone(xs)
		slices.SortStableFunc(want, by)
		got := mergeTicks(xs, ends)
		if !slices.EqualFunc(got, want, func(a, b x) bool { return a.poll == b.poll }) {
			t.Fatalf("trial %d: merged %v, stable sort %v", trial, got, want)
		}
	}
}

// TestMedianInIsSortedMiddle checks medianIn against the middle of the
// values sorted, odd and even counts, ties and NaN included.
func TestMedianInIsSortedMiddle(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 500 {
		xs := make([]float64, 1+r.IntN(80))
		for i := range xs {
			xs[i] = float64(r.IntN(30)) - 10
			if r.IntN(20) == 0 {
				xs[i] = math.NaN()
			}
		}
		s := slices.Clone(xs)
		slices.Sort(s)
		n := len(s)
		want := s[n/2]
		if n%2 == 0 {
			want = (s[n/2-1] + s[n/2]) / 2
		}
		got := medianIn(nil, xs)
		if !got.Valid || math.Float64bits(got.V) != math.Float64bits(want) && !(math.IsNaN(got.V) && math.IsNaN(want)) {
			t.Fatalf("trial %d: medianIn %v, sorted middle %v (%v)", trial, got, want, xs)
		}
	}
}

// BenchmarkMergeTicks merges the fleet's ticks of an hour of 8 engines
// polled every 2 s, each at its own offset (14,400 ticks).
func BenchmarkMergeTicks(b *testing.B) {
	xs, ends := hourOfTicks()
	b.ReportAllocs()
	for b.Loop() {
		mergeTicks(xs, ends)
	}
}

// hourOfTicks are 8 engines' ticks of an hour at 2 s, each engine's run
// in time order, the engines at offsets of 0.25 s.
func hourOfTicks() ([]fleetTick, []int) {
	var xs []fleetTick
	var ends []int
	for v := range 8 {
		for i := range 1800 {
			xs = append(xs, fleetTick{t: 1.7e9 + 2*float64(i) + 0.25*float64(v), v: v, poll: i})
		}
		ends = append(ends, len(xs))
	}
	return xs, ends
}
