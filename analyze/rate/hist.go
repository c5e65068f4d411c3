package rate

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// bucket is one cumulative histogram bucket: observations ≤ le.
type bucket struct {
	le, n float64
}

// addBucket adds Δn at st's le bound to the scratch buckets; a key without a
// parseable le label adds nothing.
func (e *Estimator) addBucket(st *keyState, n float64) {
	if st.leState == 0 {
		st.leState = -1
		if le, ok := parseLe(st.key.Labels); ok {
			st.le, st.leState = le, 1
		}
	}
	if st.leState > 0 {
		e.buckets = append(e.buckets, bucket{st.le, n})
	}
}

// parseLe returns the le bound of a bucket's canonical label set; ok
// false when it has none or it is not a number.
func parseLe(labels string) (float64, bool) {
	if s, ok := labelValue(labels, "le"); ok {
		if le, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(le) {
			return le, true
		}
	}
	return 0, false
}

// Histogram returns the histogram named base (series base_bucket, base_count
// and base_sum) over the window of the poll just observed, summed over the
// label sets match accepts (nil accepts all; it sees the le label too).
// Count is the number of new observations, Mean Δsum/Δcount, and the
// quantiles are interpolated linearly within the bucket deltas as
// Prometheus' histogram_quantile does (BucketQuantile), each with the
// bucket it fell in and its flags. Every gate but the jump gate applies.
func (e *Estimator) Histogram(base string, match func(labels string) bool) Hist {
	var h Hist
	e.HistogramTo(&h, base, match)
	return h
}

// HistogramTo is Histogram written into *h, which it overwrites whole: a
// Hist is five cells, and a caller that keeps one for every histogram
// of every poll saves copying them.
func (e *Estimator) HistogramTo(h *Hist, base string, match func(labels string) bool) {
	e.HistogramCells(&HistPtrs{&h.Count, &h.Mean, &h.P50, &h.P95, &h.P99}, base, match)
}

// HistPtrs are the five cells a histogram is written into, in the order
// of a Hist: count, mean, p50, p95, p99. A nil pointer is a cell the
// caller does not want: it is not made (HistogramCells).
type HistPtrs [5]*Cell

// HistogramCells is Histogram written into the five cells of *hp, each
// overwritten whole: a caller whose cells are not a Hist (a poll's row
// of cells) is written in place, not copied into. hp is a pointer: five
// pointers passed by value went through the stack in a stalled copy.
// A nil cell of *hp is not made, nor what only it needs (the sum for
// the mean, the buckets' monotonic pass for the quantiles, the count);
// every cell made is what it is when all five are.
func (e *Estimator) HistogramCells(hp *HistPtrs, base string, match func(labels string) bool) {
	src := e.histSources(base)
	var own Cell // the count, when the caller wants the mean alone
	count, mean, p50, p95, p99 := hp[0], hp[1], hp[2], hp[3], hp[4]
	quantiles := p50 != nil || p95 != nil || p99 != nil
	if count == nil && mean != nil {
		count = &own
	}
	if count != nil {
		*count = Cell{Source: src.count, Derived: true}
	}
	if mean != nil {
		*mean = Cell{Source: src.mean, Derived: true}
	}
	if p50 != nil {
		*p50 = Cell{Source: src.p50, Derived: true}
	}
	if p95 != nil {
		*p95 = Cell{Source: src.p95, Derived: true}
	}
	if p99 != nil {
		*p99 = Cell{Source: src.p99, Derived: true}
	}
	// A refused poll measured nothing.
	if e.disordered {
		for _, c := range hp {
			if c != nil {
				c.Reason = ReasonOrder
			}
		}
		return
	}
	var b, cnt, sum agg
	var les, ns, deltas []float64
	readable, malformed, mixed := false, false, false
	var g *group
	var g2 *group
	if match == nil {
		if g = e.wholeRun(src.bucket); g == nil {
			g, g2 = e.twoRuns(src.bucket)
		}
	}
	if g2 != nil {
		// Two label sets' buckets (vLLM's data-parallel engines), each
		// set stepped together, with the same rising bounds: merged by
		// le as prepareBuckets would (a sum of two is the same in either
		// order), without the copies, the sort check and the merge.
		M := len(g.members)
		sums := e.merged2[:0]
		for m, d := range g.delta[:M] {
			sums = append(sums, d+g2.delta[m])
		}
		e.merged2 = sums
		b.window = maxOf(maxOf(0, g.dt), g2.dt)
		b.present, b.contributed = 2*M, 2*M
		les, deltas = g.les[:M], sums
		readable = true
	} else if g != nil {
		// One label set's buckets, stepped together and rising: the
		// bounds are read from the group in place and the counts from
		// its deltas, as gather and prepareBuckets would have copied
		// them (b's sum is not read when the buckets are readable).
		// The monotonic pass waits until a cell reads the counts.
		b.window = maxOf(0, g.dt)
		b.present, b.contributed = len(g.members), len(g.members)
		les, deltas = g.les, g.delta
		readable = true
	} else {
		e.buckets = e.buckets[:0]
		e.gather(&b, src.bucket, match, modeBuckets)
		var bs []bucket
		if b.usable() {
			bs, readable, mixed = e.prepareBuckets(src.bucket, e.buckets)
			malformed = !readable
		}
		les, ns = e.split(bs)
	}
	if count != nil {
		e.gather(&cnt, src.countName, match, modeDelta)
	}
	if mean != nil {
		e.gather(&sum, src.sumName, match, modeDelta)
	}
	// The counts made monotonic, for a count read from the +Inf bucket
	// or a quantile.
	if deltas != nil && (quantiles || (count != nil && cnt.present == 0)) {
		ns = e.monotonic(deltas)
	}

	// Count: Δ_count, or the +Inf bucket's Δ when the engine has no _count.
	switch {
	case count == nil:
	case cnt.present > 0:
		cnt.cellTo(count)
	case readable:
		count.Source = src.countInf
		count.Value, count.Window = Some(ns[len(ns)-1]), Some(b.window)
	case malformed:
		count.Reason, count.Window = ReasonBuckets, Some(b.window)
	default:
		b.cellTo(count)
	}

	// Mean: Δsum over the count, when both can be read.
	switch {
	case mean == nil:
	case !count.Value.Valid:
		mean.Reason, mean.Window, mean.Notes = count.Reason, count.Window, count.Notes
	case !sum.usable():
		sum.cellTo(mean)
	case count.Value.V == 0:
		// A window with no new observations has no mean, not a mean of 0.
		mean.Reason, mean.Window = ReasonEmpty, Some(max(count.Window.V, sum.window))
	default:
		mean.Value = Some(sum.sum / count.Value.V)
		mean.Window = Some(max(count.Window.V, sum.window))
	}

	if !quantiles {
		return
	}
	k, lastRank := 0, math.Inf(-1) // risingQuantile's search
	for _, q := range [...]struct {
		c *Cell
		q float64
	}{{p50, 0.5}, {p95, 0.95}, {p99, 0.99}} {
		c := q.c
		switch {
		case c == nil:
		case !b.usable():
			b.cellTo(c)
		case malformed:
			// Quantiles need a +Inf bucket and a finite one to interpolate in.
			c.Reason, c.Window = ReasonBuckets, Some(b.window)
		case mixed:
			// Label sets with different bounds: a seam no quantile crosses.
			c.Reason, c.Window = ReasonEdges, Some(b.window)
		case ns[len(ns)-1] == 0:
			// A window with no new observations has no quantile, not a quantile of 0.
			c.Reason, c.Window = ReasonEmpty, Some(b.window)
		default:
			c.Value, c.Window = Some(risingQuantile(q.q, les, ns, &k, &lastRank, &c.Bucket)), Some(b.window)
		}
	}
}

// twoRuns returns the two groups whose members are series' keys, the
// first's then the second's, each as wholeRun reads one (in step this
// poll, every window accepted, bounds strictly rising with +Inf last),
// with the same bounds; nil, nil otherwise.
func (e *Estimator) twoRuns(series *seriesState) (*group, *group) {
	keys := series.keys
	// Fewer than two buckets a set: no run to read.
	if len(keys) < 4 {
		return nil, nil
	}
	st := &e.keys[keys[0]]
	if st.grp == 0 || st.member != 0 {
		return nil, nil
	}
	g1 := &e.groups[st.grp-1]
	M := len(g1.members)
	if len(keys) != 2*M {
		return nil, nil
	}
	st2 := &e.keys[keys[M]]
	if st2.grp == 0 || st2.member != 0 || st2.grp == st.grp {
		return nil, nil
	}
	g2 := &e.groups[st2.grp-1]
	for _, g := range [2]*group{g1, g2} {
		if len(g.members) != M || !g.rising || !math.IsInf(g.les[M-1], 1) || !g.inStep || g.vseq != e.seq ||
			g.reason != "" || !g.hasWin || !g.lesOK {
			return nil, nil
		}
	}
	if !slices.Equal(g1.les[:M], g2.les[:M]) || !slices.Equal(g1.members, keys[:M]) || !slices.Equal(g2.members, keys[M:]) {
		return nil, nil
	}
	return g1, g2
}

// split returns the bounds and counts of bs apart, for BucketQuantile,
// the counts made monotonic on the way (monotonic).
func (e *Estimator) split(bs []bucket) (les, ns []float64) {
	les, ns = e.qles[:0], e.qn[:0]
	var prev float64
	for i, x := range bs {
		n := x.n
		if i > 0 {
			n = maxOf(n, prev)
		}
		prev = n
		les, ns = append(les, x.le), append(ns, n)
	}
	e.qles, e.qn = les, ns
	return les, ns
}

// monotonic returns the counts ns made monotonic, in the scratch qn:
// cumulative counts cannot fall with le; float noise across label sets
// can.
func (e *Estimator) monotonic(ns []float64) []float64 {
	out := e.qn[:0]
	var prev float64
	for i, n := range ns {
		if i > 0 {
			n = maxOf(n, prev)
		}
		prev = n
		out = append(out, n)
	}
	e.qn = out
	return out
}

// risingQuantile is BucketQuantile for one of a histogram's quantiles
// asked in rising order: the search for its bucket starts where the last
// one's ended (*k) when its rank is no lower than the last one's
// (*lastRank; −Inf before the first). Counts can be negative float noise,
// and NaN never compares: then it searches from the first bucket.
func risingQuantile(q float64, les, n []float64, k *int, lastRank *float64, b *Bucket) float64 {
	rank := q * n[len(n)-1]
	// A lower rank (or NaN) may lie below the last one's bucket.
	if !(rank >= *lastRank) {
		*k = 0
	}
	v, at := bucketQuantileFrom(q, les, n, *k, b)
	*k, *lastRank = at, rank
	return v
}

// prepareBuckets sorts the gathered bucket deltas of series, merges equal
// bounds (one per label set); Histogram makes the counts monotonic. It reports
// false when the buckets lack a +Inf bucket or a finite one, and mixed when
// the label sets have different bounds (MixedEdges).
func (e *Estimator) prepareBuckets(series *seriesState, bs []bucket) (out []bucket, ok, mixed bool) {
	// Targets print one label set's buckets by rising le: the sort and the
	// merge are skipped when they are strictly in order, which leaves
	// nothing to merge.
	out = bs
	for i := 1; i < len(bs); i++ {
		if !(bs[i-1].le < bs[i].le) {
			out = e.mergeBuckets(series, bs)
			mixed = series.merge.mixed
			break
		}
	}
	// Quantiles need a +Inf bucket and a finite one to interpolate in.
	if len(out) < 2 || !math.IsInf(out[len(out)-1].le, 1) {
		return nil, false, mixed
	}
	return out, true, mixed
}

// mergePlan is how one sequence of bounds is merged: the order a sort by le
// puts them in.
type mergePlan struct {
	les   []float64 // the bounds, as gathered
	order []int32   // the gathered indices, sorted by le
	mixed bool      // the label sets have different bounds (MixedEdges)
}

// mergeBuckets sorts bucket deltas by le and sums those of equal bounds.
// A series gathers the same bounds in the same order poll after poll
// (several label sets, each rising): the sort's order is kept per series
// and used again while the bounds are the same. The sort's order depends
// on the bounds alone, so the sums are added in the same order either way.
func (e *Estimator) mergeBuckets(series *seriesState, bs []bucket) []bucket {
	p := series.merge
	if p == nil || !sameBounds(p.les, bs) {
		p = &mergePlan{les: make([]float64, len(bs)), order: make([]int32, len(bs))}
		for i, b := range bs {
			p.les[i], p.order[i] = b.le, int32(i)
		}
		slices.SortFunc(p.order, func(x, y int32) int { return cmp.Compare(p.les[x], p.les[y]) })
		p.mixed = MixedEdges(p.les)
		series.merge = p
	}
	out := e.merged[:0]
	for _, i := range p.order {
		b := bs[i]
		if len(out) > 0 && out[len(out)-1].le == b.le {
			out[len(out)-1].n += b.n
			continue
		}
		out = append(out, b)
	}
	e.merged = out
	return out
}

// MixedEdges reports whether bounds gathered from several label sets (each
// set's bounds once) come from sets with different bounds: every distinct
// bound must appear as often as the others. Summing such sets by le puts
// one set's observations below a bound the other does not have, so no
// quantile is taken across them (two builds of an engine in one fleet, a
// build change): a seam.
func MixedEdges(les []float64) bool {
	n := map[float64]int{}
	for _, le := range les {
		n[le]++
	}
	k := -1
	for _, c := range n {
		if k >= 0 && c != k {
			return true
		}
		k = c
	}
	return false
}

// sameBounds reports whether bs has the bounds les, in order.
func sameBounds(les []float64, bs []bucket) bool {
	if len(les) != len(bs) {
		return false
	}
	for i, b := range bs {
		if les[i] != b.le {
			return false
		}
	}
	return true
}

// maxOf is max(a, b), the builtin's rules included (NaN wins; +0 is
// above −0), with the common case, b ≤ a and no NaN, in one compare:
// the builtin spends a branch on each of its rules every call, and the
// monotonic pass over a histogram's buckets calls it for every bucket.
func maxOf(a, b float64) float64 {
	if b > a || b != b {
		return b
	}
	// Equal zeros: +0 is the larger.
	if a == 0 && b == 0 && math.Signbit(a) && !math.Signbit(b) {
		return b
	}
	return a
}
