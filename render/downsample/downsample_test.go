package downsample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// reference is MinMax written as its definition, point by point, with no
// cleverness: for each point, decide whether one of the rules keeps it.
func reference(pts []Point, budget int) []int {
	n := len(pts)
	if n <= budget || budget < 4 {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	buckets := budget / 2
	width := (pts[n-1].X - pts[0].X) / float64(buckets)
	null := func(i int) bool { return pts[i].isNull() }
	var idx []int
	for i := range pts {
		kept := i == 0 || i == n-1 || pts[i].Keep
		// First null of a run of nulls.
		kept = kept || null(i) && (i == 0 || !null(i-1))
		// A valid point next to a null.
		kept = kept || !null(i) && (i > 0 && null(i-1) || i+1 < n && null(i+1))
		if !kept && !null(i) {
			// The first lowest or first highest valid point of its bucket.
			b := Bucket(pts[i].X, pts[0].X, width, buckets)
			firstLow, firstHigh := true, true
			for j := range pts {
				if null(j) || Bucket(pts[j].X, pts[0].X, width, buckets) != b || j == i {
					continue
				}
				if pts[j].Y < pts[i].Y || pts[j].Y == pts[i].Y && j < i {
					firstLow = false
				}
				if pts[j].Y > pts[i].Y || pts[j].Y == pts[i].Y && j < i {
					firstHigh = false
				}
			}
			kept = firstLow || firstHigh
		}
		if kept {
			idx = append(idx, i)
		}
	}
	return idx
}

// series makes a random series of n points: a random walk with spikes,
// runs of nulls, NaNs, Keep flags, repeated x values and jittered cadence.
func series(r *rand.Rand, n int) []Point {
	pts := make([]Point, n)
	x, y := 1.7e9+r.Float64()*1e6, r.Float64()*100
	nullRun := 0
	for i := range pts {
		if r.IntN(20) > 0 { // now and then two polls share a stamp
			x += 2 + r.NormFloat64()*0.05
		}
		y += r.NormFloat64()
		p := Point{X: x, Y: y}
		switch {
		case nullRun > 0:
			nullRun--
			p.Null = true
		case r.IntN(200) == 0:
			nullRun = r.IntN(30)
			p.Null = true
		case r.IntN(500) == 0:
			p.Y = math.NaN()
		case r.IntN(300) == 0:
			p.Y += 1000 * r.NormFloat64() // a spike
		}
		p.Keep = r.IntN(1000) == 0
		pts[i] = p
	}
	return pts
}

func TestMinMaxMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := r.IntN(1500)
		budget := r.IntN(300)
		pts := series(r, n)
		got, want := MinMax(pts, budget), reference(pts, budget)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (n=%d budget=%d): MinMax kept %d points, the reference %d\n got %v\nwant %v",
				trial, n, budget, len(got), len(want), head(got), head(want))
		}
	}
}

func head(s []int) []int { return s[:min(len(s), 40)] }

// TestMinMaxProperties checks what a reader of the chart relies on, for
// random series: nothing invented, nothing moved, extremes and gaps kept.
func TestMinMaxProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		n := 1 + r.IntN(5000)
		budget := 4 + r.IntN(1000)
		pts := series(r, n)
		idx := MinMax(pts, budget)
		check(t, trial, pts, budget, idx)
	}
}

func check(t *testing.T, trial int, pts []Point, budget int, idx []int) {
	t.Helper()
	n := len(pts)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("trial %d (n=%d budget=%d): "+format, append([]any{trial, n, budget}, args...)...)
	}
	// A subset of the input, in order, each point once.
	for k := 1; k < len(idx); k++ {
		if idx[k] <= idx[k-1] {
			fail("indices not ascending at %d: %d then %d", k, idx[k-1], idx[k])
		}
	}
	if n > 0 && (idx[0] != 0 || idx[len(idx)-1] != n-1) {
		fail("first or last point dropped: %d..%d", idx[0], idx[len(idx)-1])
	}
	if n <= budget {
		if len(idx) != n {
			fail("a series within budget lost points: %d of %d", len(idx), n)
		}
		return
	}
	kept := make([]bool, n)
	for _, i := range idx {
		kept[i] = true
	}
	nullRuns, keeps := 0, 0
	for i, p := range pts {
		if p.Keep {
			keeps++
			if !kept[i] {
				fail("point %d flagged Keep was dropped", i)
			}
		}
		if p.isNull() && (i == 0 || !pts[i-1].isNull()) {
			nullRuns++
		}
	}
	// Never a segment across a gap: between two consecutive drawn valid
	// points there is no null in the input.
	for k := 1; k < len(idx); k++ {
		a, b := idx[k-1], idx[k]
		if pts[a].isNull() || pts[b].isNull() {
			continue
		}
		for i := a + 1; i < b; i++ {
			if pts[i].isNull() {
				fail("drawn points %d and %d would be joined across null %d", a, b, i)
			}
		}
	}
	// Every run of nulls still has a null drawn.
	for i, p := range pts {
		if p.isNull() && (i == 0 || !pts[i-1].isNull()) {
			found := false
			for j := i; j < n && pts[j].isNull(); j++ {
				found = found || kept[j]
			}
			if !found {
				fail("the run of nulls at %d has no null drawn", i)
			}
		}
	}
	// Extremes: per bucket, the drawn min and max are the input's.
	buckets := budget / 2
	width := (pts[n-1].X - pts[0].X) / float64(buckets)
	inLo, inHi := extremes(pts, buckets, width, func(int) bool { return true })
	outLo, outHi := extremes(pts, buckets, width, func(i int) bool { return kept[i] })
	for b := range buckets {
		if !same(inLo[b], outLo[b]) || !same(inHi[b], outHi[b]) {
			fail("bucket %d: input min/max %v/%v, drawn %v/%v", b, inLo[b], inHi[b], outLo[b], outHi[b])
		}
	}
	if limit := budget + 2 + 3*nullRuns + keeps; len(idx) > limit {
		fail("%d points kept, more than the bound %d", len(idx), limit)
	}
}

func extremes(pts []Point, buckets int, width float64, use func(int) bool) (lo, hi []float64) {
	lo, hi = make([]float64, buckets), make([]float64, buckets)
	for b := range lo {
		lo[b], hi[b] = math.NaN(), math.NaN()
	}
	for i, p := range pts {
		if p.isNull() || !use(i) {
			continue
		}
		b := Bucket(p.X, pts[0].X, width, buckets)
		if math.IsNaN(lo[b]) || p.Y < lo[b] {
			lo[b] = p.Y
		}
		if math.IsNaN(hi[b]) || p.Y > hi[b] {
			hi[b] = p.Y
		}
	}
	return lo, hi
}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// A spike of one poll in 43,200 survives a budget of 1,000.
func TestMinMaxKeepsOneSpike(t *testing.T) {
	pts := make([]Point, 43200)
	for i := range pts {
		pts[i] = Point{X: float64(i) * 2, Y: 10}
	}
	pts[31337].Y = 5000
	pts[777].Y = -3
	idx := MinMax(pts, 1000)
	if !slices.Contains(idx, 31337) || !slices.Contains(idx, 777) {
		t.Fatalf("spike or dip dropped: kept %d points", len(idx))
	}
	if len(idx) > 1002 {
		t.Fatalf("kept %d points for a budget of 1000", len(idx))
	}
}

// A single refused poll in a flat series keeps its gap: the null and both
// neighbours are drawn.
func TestMinMaxKeepsOneNull(t *testing.T) {
	pts := make([]Point, 10000)
	for i := range pts {
		pts[i] = Point{X: float64(i), Y: 1}
	}
	pts[5000].Null = true
	idx := MinMax(pts, 100)
	for _, want := range []int{4999, 5000, 5001} {
		if !slices.Contains(idx, want) {
			t.Errorf("point %d around the null was dropped", want)
		}
	}
}

// Edge cases: empty, one point, all at one x, all null.
func TestMinMaxEdges(t *testing.T) {
	if got := MinMax(nil, 10); len(got) != 0 {
		t.Errorf("nil: %v", got)
	}
	if got := MinMax([]Point{{X: 1, Y: 2}}, 10); !slices.Equal(got, []int{0}) {
		t.Errorf("one point: %v", got)
	}
	same := make([]Point, 100)
	for i := range same {
		same[i] = Point{X: 5, Y: float64(i % 7)}
	}
	got := MinMax(same, 10)
	if want := reference(same, 10); !slices.Equal(got, want) {
		t.Errorf("one x: %v, want %v", got, want)
	}
	nulls := make([]Point, 100)
	for i := range nulls {
		nulls[i] = Point{X: float64(i), Null: true}
	}
	if got := MinMax(nulls, 10); !slices.Equal(got, []int{0, 99}) {
		t.Errorf("all null: %v", got)
	}
}

func BenchmarkMinMax(b *testing.B) {
	pts := series(rand.New(rand.NewPCG(5, 6)), 43200)
	b.ReportAllocs()
	for b.Loop() {
		MinMax(pts, 1000)
	}
}
