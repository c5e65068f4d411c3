package engine

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/internal/memo"
	"github.com/llmrec/llmrec/analyze/rate"
)

// query is what a reader sees of the poll just observed: the values of its
// series and the estimator's windows. Its helpers return cells with their
// provenance; a reader only chooses series and formulas.
type query struct {
	t   *Tracker
	est *rate.Estimator
	dst Cells
	// put1 has bit i set when canonical cell i was put this poll.
	put1 uint64
	// want has bit i set when canonical cell i is wanted (Tracker.Want).
	want uint64
	// The reader's lookups of name slots, cell positions and histogram
	// positions, by the order it makes them in (see package memo).
	slots     memo.Seq[nameLookup]
	pos, hpos memo.Seq[int]
	// The provenance strings and facts the reader asks for, by the order
	// it asks in: one compare instead of a hash of two strings.
	srcs  keySeq[srcKey, string]
	facts keySeq[factKey, factVal]
	// histTo's last histogram: its poll, base and first cell's position.
	hseq  uint64
	hbase string
	hat   int
	hmade uint8 // the cells it made (bits of rate.HistPtrs)
}

// start starts a poll's queries.
func (q *query) start() {
	q.slots.Start()
	q.pos.Start()
	q.hpos.Start()
	q.srcs.next, q.facts.next = 0, 0
}

// keySeq is memo.Seq for a comparable key: the answers of a sequence of
// questions asked in the same order poll after poll, recalled with one
// compare each.
type keySeq[K comparable, V any] struct {
	asked []keyAnswer[K, V]
	next  int
}

type keyAnswer[K comparable, V any] struct {
	k K
	v V
}

// ask returns the answer to k: the one noted at this point of the last
// sequence when it was asked about k, else answer(k).
func (s *keySeq[K, V]) ask(k K, answer func(K) V) V {
	i := s.next
	s.next++
	if i < len(s.asked) && s.asked[i].k == k {
		return s.asked[i].v
	}
	v := answer(k)
	if i < len(s.asked) {
		s.asked[i] = keyAnswer[K, V]{k, v}
	} else {
		s.asked = append(s.asked, keyAnswer[K, V]{k, v})
	}
	return v
}

// nameLookup is a name's slot, or -1 when it had none while the tracker
// had nslots slots.
type nameLookup struct {
	slot   int32
	nslots int
}

// slotOf returns the name slot of series name; false when it has none.
func (q *query) slotOf(name string) (int32, bool) {
	a, ok := q.slots.Recall(name)
	// Last poll's answer holds, unless it was "none" and a name has had a
	// slot made since.
	if ok && (a.slot >= 0 || a.nslots == len(q.t.slots)) {
		q.slots.Keep()
		return a.slot, a.slot >= 0
	}
	s, found := q.t.names[name]
	if !found {
		s = -1
	}
	a = nameLookup{s, len(q.t.slots)}
	q.slots.Note(name, a)
	return a.slot, a.slot >= 0
}

// at returns index[name], the position of a cell among the canonical
// ones, through seq.
func at(seq *memo.Seq[int], index map[string]int, name string) int {
	return seq.Ask(name, func(n string) int { return index[n] })
}

// canonIndex maps a canonical cell name to its position in a poll's cells.
var canonIndex = func() map[string]int {
	m := make(map[string]int, len(Canonical))
	for i, n := range Canonical {
		m[n] = i
	}
	return m
}()

// notExported is the cell of a quantity the engine does not publish.
var notExported = Cell{Cell: rate.Cell{Reason: ReasonNotExported}}

// put sets canonical cell name.
func (q *query) put(name string, c Cell) {
	*q.cell(name) = c
}

// cell returns canonical cell name of the poll, zeroed, to be written in
// place (a cell built apart and copied in was copied two or three times);
// it counts as put.
func (q *query) cell(name string) *Cell {
	// at, with the memo's calls inlined: a cell is put ~35 times a poll.
	i, ok := q.pos.Recall(name)
	if ok {
		q.pos.Keep()
	} else {
		i = canonIndex[name]
		q.pos.Note(name, i)
	}
	q.put1 |= 1 << i
	c := &q.dst[i].Cell
	*c = Cell{}
	return c
}

// histIndex maps a canonical histogram base to the position of its first cell.
var histIndex = func() map[string]int {
	m := make(map[string]int, len(Histograms))
	for _, h := range Histograms {
		m[h] = canonIndex[h+SuffixCount]
	}
	return m
}()

// hname is a histogram's series names, built once.
type hname struct{ base, bucket, count, sum string }

func hn(base string) hname { return hname{base, base + "_bucket", base + "_count", base + "_sum"} }

// sel selects label sets by one label's value. The zero sel, and a nil one,
// select every set.
type sel struct {
	label, value string
	orMissing    bool   // sets without the label are selected too
	text         string // {label="value"}, for provenance
	fn           func(labels string) bool
}

// newSel selects the sets whose label is value (or lacks the label, with
// orMissing).
func newSel(label, value string, orMissing bool) *sel {
	s := &sel{label: label, value: value, orMissing: orMissing, text: "{" + label + `="` + value + `"}`}
	s.fn = func(labels string) bool {
		if hasLabel(labels, label, value) {
			return true
		}
		if !orMissing {
			return false
		}
		_, ok := labelOf(labels, label)
		return !ok
	}
	return s
}

func (s *sel) match() func(string) bool {
	if s == nil {
		return nil
	}
	return s.fn
}

func (s *sel) ok(labels string) bool { return s == nil || s.fn(labels) }

// strictFeeds makes a query of a series that is not fed to the estimator
// panic. The package's tests set it: a reader reading a family its catalog
// says feeds no cell would read a series without history (see
// Tracker.classify).
var strictFeeds bool

// fed checks, under strictFeeds, that the counters of names present in
// the poll are fed to the estimator.
func (q *query) fed(names ...string) {
	if !strictFeeds {
		return
	}
	for _, n := range names {
		for _, id := range q.keys(n) {
			if q.t.keys[id].counter && q.t.vals[id].est < 0 {
				panic("engine: the " + q.t.rd.id + " reader reads " + n + ", of a family its catalog says feeds no cell")
			}
		}
	}
}

// present reports whether series name has a label set in the poll.
func (q *query) present(name string) bool {
	s, ok := q.slotOf(name)
	return ok && q.t.slots[s].seq == q.t.seq
}

// pick returns the first of names present in the poll; else the first name
// and false.
func (q *query) pick(names ...string) (string, bool) {
	for _, n := range names {
		if q.present(n) {
			return n, true
		}
	}
	return names[0], false
}

// pickKeys is pick with the picked name's series in the poll (keys): one
// lookup of the name instead of two.
func (q *query) pickKeys(names ...string) (string, []int32, bool) {
	for _, n := range names {
		if ids := q.keys(n); len(ids) > 0 {
			return n, ids, true
		}
	}
	return names[0], nil, false
}

// keys returns the series of name present in the poll.
func (q *query) keys(name string) []int32 {
	s, ok := q.slotOf(name)
	if !ok || q.t.slots[s].seq != q.t.seq {
		return nil
	}
	return q.t.slots[s].keys
}

// srcKey names a cached provenance string.
type srcKey struct {
	kind byte
	a, b string
}

// src returns a provenance string built once per tracker.
func (q *query) src(kind byte, a, b string) string {
	return q.srcs.ask(srcKey{kind, a, b}, q.newSrc)
}

// newSrc looks up or builds the provenance string k names.
func (q *query) newSrc(k srcKey) string {
	if s, ok := q.t.sources[k]; ok {
		return s
	}
	kind, a, b := k.kind, k.a, k.b
	var s string
	switch kind {
	case 'r': // a rate over selected sets
		s = "computed:Δ" + a + b + "/Δt"
	case 'd': // a difference of rates
		s = "computed:(Δ" + a + " − Δ" + b + ")/Δt"
	case 'c': // the counters' life ratio
		s = "computed:" + a + " / " + b
	case 'h': // hit share with two denominators
		s = "computed:Δ" + a + "/(Δ" + a + " + Δ" + b + ")"
	case 'H':
		s = "computed:" + a + " / (" + a + " + " + b + ")"
	case 'i': // 1 / mean of a histogram
		s = "computed:Δ" + a + "_count/Δ" + a + "_sum"
	case 'I':
		s = "computed:" + a + "_count / " + a + "_sum"
	case 's': // a series with a selector
		s = a + b
	case '+':
		s = "computed:" + a + " + " + b
	case '*':
		s = "computed:" + a + " × " + b
	case 'u': // cumulative µs per event
		s = "computed:Δ" + a + "/Δ" + b + " × 1e-6"
	}
	q.t.sources[k] = s
	return s
}

// Aggregations of a gauge over its label sets.
const (
	aggSum = iota // counts: requests running over engines
	aggMax        // fractions: a cache's pressure is its fullest part, never a sum
)

// aggregate is acc, the aggregate of n values, with x added to it.
func aggregate(agg, n int, acc, x float64) float64 {
	switch {
	case n == 0:
		return x
	case agg == aggMax:
		return max(acc, x)
	}
	return acc + x
}

// gauge reads the first present of names, summed (or maxed) over the label
// sets s selects. Absent is null with no source.
func (q *query) gauge(agg int, s *sel, names ...string) Cell {
	var c Cell
	q.gaugeTo(&c, agg, s, names...)
	return c
}

// gaugeTo is gauge written into *c, which is zero.
func (q *query) gaugeTo(c *Cell, agg int, s *sel, names ...string) {
	name, ids, ok := q.pickKeys(names...)
	// Nothing to read is absent, never 0.
	if !ok {
		c.Reason = rate.ReasonAbsent
		return
	}
	v, n, labelled := q.fold(agg, s, ids)
	if n == 0 {
		c.Reason = rate.ReasonAbsent
		return
	}
	src := name
	// The selector is part of the source only when it selected something.
	if s != nil && (!s.orMissing || labelled) {
		src = q.src('s', name, s.text)
	}
	c.Value, c.Source = rate.Some(v), src
	if agg == aggMax && n > 1 {
		c.Notes = noteMax
	}
}

var noteMax = []string{"max over label sets"}

// fold sums or maxes the values of the selected sets of ids (a name's
// series in the poll); n counts them, and labelled says whether one of
// them carried the selector's label.
func (q *query) fold(agg int, s *sel, ids []int32) (v float64, n int, labelled bool) {
	for _, id := range ids {
		// A nil selector selects every set with no label read: a key's
		// state is out of the cache by the next poll, and each histogram's
		// count and sum are folded this way.
		if s != nil {
			l := q.t.keys[id].rkey.Labels
			if !s.fn(l) {
				continue
			}
			if !labelled {
				_, labelled = labelOf(l, s.label)
			}
		}
		v = aggregate(agg, n, v, q.t.vals[id].v)
		n++
	}
	return v, n, labelled
}

func absent() Cell { return Cell{Cell: rate.Cell{Reason: rate.ReasonAbsent}} }

// kv reads a KV-cache usage gauge (0..1, maxed over label sets) with its
// severity.
func (q *query) kv(s *sel, names ...string) Cell {
	var c Cell
	q.kvTo(&c, s, names...)
	return c
}

// kvTo is kv written into *c, which is zero.
func (q *query) kvTo(c *Cell, s *sel, names ...string) {
	q.gaugeTo(c, aggMax, s, names...)
	// Absent gets no verdict.
	if !c.Value.Valid {
		return
	}
	notes := c.Notes
	c.Cell = rate.KVCell(c.Source, c.Value)
	c.Notes = notes
}

// rate is the rate of the first present of names over the selected sets.
func (q *query) rate(s *sel, names ...string) Cell {
	var c Cell
	q.rateTo(&c, s, names...)
	return c
}

// rateTo is rate written into *c, which is zero.
func (q *query) rateTo(c *Cell, s *sel, names ...string) {
	q.fed(names...)
	name, _ := q.pick(names...)
	q.est.RateTo(&c.Cell, name, s.match())
	if s != nil {
		c.Source = q.src('r', name, s.text)
	}
}

// ratio is ΣΔnum/ΣΔden over the window, each the first present of its names.
func (q *query) ratio(num, den []string) Cell {
	var c Cell
	q.ratioTo(&c, num, den)
	return c
}

// ratioTo is ratio written into *c, which is zero.
func (q *query) ratioTo(c *Cell, num, den []string) {
	q.fed(num...)
	q.fed(den...)
	n, _ := q.pick(num...)
	d, _ := q.pick(den...)
	q.est.RatioTo(&c.Cell, n, d, nil)
}

// pickHist returns the first of hs whose histogram is in the poll, else the
// first.
func (q *query) pickHist(hs ...hname) hname { return hs[q.pickHistAt(hs)] }

// pickHistAt is pickHist's index in hs: a caller reading the name in place
// does not copy its four strings through the stack.
func (q *query) pickHistAt(hs []hname) int {
	for i := range hs {
		if h := &hs[i]; q.present(h.bucket) || q.present(h.count) {
			return i
		}
	}
	return 0
}

// histTo writes the windowed histogram of the first present of hs into
// the wanted cells of the five of canonical histogram base (Tracker.Want),
// in place, and returns the mean's cell (in the poll's cells: valid until
// the reader appends one of its own; made only when wanted) and the name
// read.
func (q *query) histTo(base string, hs ...hname) (*rate.Cell, hname) {
	return q.histWith(base, 0, hs...)
}

// histMean is the mean's bit among a histogram's five cells (in the
// order of rate.HistPtrs: count, mean, p50, p95, p99).
const histMean = 1 << 1

// histWants are the wanted cells of canonical histogram base, as bits of
// its five.
func (q *query) histWants(base string) uint8 {
	return uint8(q.want>>histIndex[base]) & 0x1f
}

// histWith is histTo making the cells of extra (histCount, histMean) too,
// wanted or not: the mean of a speed made from it.
func (q *query) histWith(base string, extra uint8, hs ...hname) (*rate.Cell, hname) {
	h := &hs[q.pickHistAt(hs)]
	i := at(&q.hpos, histIndex, base)
	m := uint8(q.want>>i)&0x1f | extra
	for k := range hs {
		q.fed(hs[k].bucket, hs[k].count)
		// The sum is read for the mean alone (and fed for it alone).
		if m&histMean != 0 {
			q.fed(hs[k].sum)
		}
	}
	q.put1 |= uint64(m) << i
	d := q.dst[i : i+5]
	// One histogram read as two cells' (vLLM's pre-0.11
	// time_per_output_token_seconds, its ITL and its TPOT) is computed
	// once a poll: the second's cells are the first's, when the first
	// made every cell the second makes (its reader asks the first for
	// them: histWants).
	if q.hseq == q.t.seq && q.hbase == h.base && m&^q.hmade == 0 {
		for k, c := range q.dst[q.hat : q.hat+5] {
			if m&(1<<k) != 0 {
				d[k].Cell = c.Cell
			}
		}
		return &d[1].Cell.Cell, *h
	}
	// Element by element: a composite literal was built aside and copied
	// in wider loads than it was stored with (a stalled copy). A cell not
	// made stays nil: the reader's cells make it not computed.
	var hp rate.HistPtrs
	for k := range d {
		if m&(1<<k) != 0 {
			d[k].Cell.By = nil
			hp[k] = &d[k].Cell.Cell
		}
	}
	q.est.HistogramCells(&hp, h.base, nil)
	q.hseq, q.hbase, q.hat, q.hmade = q.t.seq, h.base, i, m
	return &d[1].Cell.Cell, *h
}

// total is the lifetime value of the first present of names: its counters
// as read, summed over the selected sets.
func (q *query) total(s *sel, names ...string) Cell {
	return q.gauge(aggSum, s, names...)
}

// totalTo is total written into *c, which is zero.
func (q *query) totalTo(c *Cell, s *sel, names ...string) {
	q.gaugeTo(c, aggSum, s, names...)
}

// sumTotals is a + b as read (b may be absent when optional).
func (q *query) sumTotals(a, b Cell, optional bool) Cell {
	var c Cell
	q.sumTotalsTo(&c, &a, &b, optional)
	return c
}

// sumTotalsTo is sumTotals written into *c (which is zero) from *a and *b.
func (q *query) sumTotalsTo(c, a, b *Cell, optional bool) {
	switch {
	case !a.Value.Valid:
		*c = *a
		return
	case !b.Value.Valid && !optional:
		*c = *b
		return
	case !b.Value.Valid:
		*c = *a
		return
	}
	src := q.src('+', strings.TrimPrefix(a.Source, "computed:"), b.Source)
	c.Value, c.Source, c.Derived = rate.Some(a.Value.V+b.Value.V), src, true
}

// lifetimeShare is hit/(hit + miss) of two totals as read.
func (q *query) lifetimeShare(hit, miss Cell) Cell {
	if !hit.Value.Valid {
		return hit
	}
	if !miss.Value.Valid {
		return miss
	}
	c := Cell{Cell: rate.Cell{Source: q.src('H', hit.Source, miss.Source), Derived: true}}
	// Nothing looked up in the counters' life: no ratio, not 0.
	if hit.Value.V+miss.Value.V == 0 {
		c.Reason = rate.ReasonEmpty
		return c
	}
	c.Value = rate.Some(hit.Value.V / (hit.Value.V + miss.Value.V))
	return c
}

// lifetimeRatio is num/den of two totals as read.
func (q *query) lifetimeRatio(num, den Cell) Cell {
	var c Cell
	q.lifetimeRatioTo(&c, &num, &den)
	return c
}

// totalsRatioTo is lifetimeRatioTo of the totals of the series num and den.
func (q *query) totalsRatioTo(c *Cell, num, den []string) {
	var n, d Cell
	q.totalTo(&n, nil, num...)
	q.totalTo(&d, nil, den...)
	q.lifetimeRatioTo(c, &n, &d)
}

// lifetimeRatioTo is lifetimeRatio written into *c (which is zero) from
// *num and *den.
func (q *query) lifetimeRatioTo(c, num, den *Cell) {
	if !num.Value.Valid {
		*c = *num
		return
	}
	if !den.Value.Valid {
		*c = *den
		return
	}
	c.Source, c.Derived = q.src('c', num.Source, den.Source), true
	// No denominator events in the counters' life: no ratio, not 0.
	if den.Value.V == 0 {
		c.Reason = rate.ReasonEmpty
		return
	}
	c.Value = rate.Some(num.Value.V / den.Value.V)
}

// diffRates is Δa/Δt − Δb/Δt, each over its own window: a rate net of a
// part of it (prompt tokens net of cache hits). It is never negative.
func (q *query) diffRates(a, b Cell, an, bn string) Cell {
	var c Cell
	q.diffRatesTo(&c, &a, &b, an, bn)
	return c
}

// diffRatesTo is diffRates written into *c (which is zero) from *a and *b.
func (q *query) diffRatesTo(c, a, b *Cell, an, bn string) {
	c.Source, c.Derived = q.src('d', an, bn), true
	for _, x := range [2]*Cell{a, b} {
		// A difference with a refused term is refused with that term's reason.
		if !x.Value.Valid {
			c.Reason, c.Window, c.Notes = x.Reason, x.Window, x.Notes
			return
		}
	}
	c.Value = rate.Some(max(0, a.Value.V-b.Value.V))
	c.Window = rate.Some(max(a.Window.V, b.Window.V))
}

// perRequest is 1 / the mean of a windowed time-per-token histogram.
func (q *query) perRequest(mean *rate.Cell, name hname) Cell {
	var c Cell
	q.perRequestTo(&c, mean, name)
	return c
}

// perRequestTo is perRequest written into *c, which is zero; m is the
// histogram's mean cell.
func (q *query) perRequestTo(c *Cell, m *rate.Cell, name hname) {
	c.Source, c.Derived, c.Window = q.src('i', name.base, ""), true, m.Window
	// No mean, no speed: the mean's reason is the cell's.
	if !m.Value.Valid {
		c.Reason, c.Notes = m.Reason, m.Notes
		return
	}
	// A zero mean time per token is no speed anyone can state.
	if m.Value.V <= 0 {
		c.Reason = rate.ReasonEmpty
		return
	}
	c.Value = rate.Some(1 / m.Value.V)
}

// perRequestLifetime is count/sum of a time-per-token histogram as read.
func (q *query) perRequestLifetime(hs ...hname) Cell {
	var c Cell
	q.perRequestLifetimeTo(&c, hs...)
	return c
}

// perRequestLifetimeTo is perRequestLifetime written into *c, which is zero.
func (q *query) perRequestLifetimeTo(c *Cell, hs ...hname) {
	h := q.pickHist(hs...)
	cnt, nc, _ := q.fold(aggSum, nil, q.keys(h.count))
	sum, ns, _ := q.fold(aggSum, nil, q.keys(h.sum))
	// Nothing to read is absent, never 0.
	if nc == 0 || ns == 0 {
		c.Reason = rate.ReasonAbsent
		return
	}
	c.Source, c.Derived = q.src('I', h.base, ""), true
	// No time observed yet: no speed.
	if sum <= 0 || cnt == 0 {
		c.Reason = rate.ReasonEmpty
		return
	}
	c.Value = rate.Some(cnt / sum)
}

// hitShare is Δhit/(Δhit + Δmiss) over the window, for engines that count
// cache hits and evaluated tokens apart (llama.cpp forks): both ratios of
// the two deltas, so that a window of hits only reads 1.
func (q *query) hitShare(hit, miss string) Cell {
	q.fed(hit, miss)
	c := Cell{Cell: rate.Cell{Source: q.src('h', hit, miss), Derived: true}}
	r := q.est.Ratio(hit, miss, nil)
	switch {
	case r.Value.Valid:
		c.Value, c.Window = rate.Some(r.Value.V/(1+r.Value.V)), r.Window
	case r.Reason == rate.ReasonEmpty:
		// No evaluated tokens in the window: all hits, or nothing at all.
		back := q.est.Ratio(miss, hit, nil)
		c.Window = back.Window
		if back.Value.Valid {
			c.Value = rate.Some(1 / (1 + back.Value.V))
		} else {
			c.Reason = back.Reason
		}
	default:
		c.Reason, c.Window, c.Notes = r.Reason, r.Window, r.Notes
	}
	return c
}

// scale multiplies a cell's value (µs → s).
func scale(c Cell, f float64) Cell {
	if c.Value.Valid {
		c.Value.V *= f
	}
	return c
}

// byTo reads a gauge split by one label into *c, which is zero: the
// value is the sum, By the parts.
func (q *query) byTo(c *Cell, name, label string) {
	ids := q.keys(name)
	// Nothing to read is absent, never 0.
	if len(ids) == 0 {
		c.Reason = rate.ReasonAbsent
		return
	}
	last := q.t.lastBy[name]
	if last == nil {
		last = &bySplit{}
		q.t.lastBy[name] = last
	}
	// The same series at the same values as when the last split was
	// made: that split and sum, as adding them up again would give (a
	// zero's sign aside, which a sum from +0 loses anyway).
	if last.parts != nil && slices.Equal(ids, last.ids) && q.sameVals(ids, last.vals) {
		c.Value, c.Source, c.By = rate.Some(last.sum), name, last.parts
		return
	}
	// The split is built in scratch space; a split that did not change is
	// the last one, which kept polls share, and only a new one is kept.
	parts := q.t.byScratch
	if parts == nil {
		parts = make(map[string]float64, 2)
	}
	clear(parts)
	var sum float64
	last.ids, last.vals = append(last.ids[:0], ids...), last.vals[:0]
	for _, id := range ids {
		v, _ := q.t.label(id, label)
		parts[v] += q.t.vals[id].v
		sum += q.t.vals[id].v
		last.vals = append(last.vals, q.t.vals[id].v)
	}
	if last.parts != nil && maps.Equal(last.parts, parts) {
		q.t.byScratch = parts
		parts = last.parts
	} else {
		last.parts, q.t.byScratch = parts, nil
	}
	last.sum = sum
	c.Value, c.Source, c.By = rate.Some(sum), name, parts
}

// bySplit is a by-label cell's last split (query.byTo), shared by the
// polls it did not change in: never modified once published; ids and
// vals are the series it was made of, sum their sum.
type bySplit struct {
	parts map[string]float64
	ids   []int32
	vals  []float64
	sum   float64
}

// sameVals reports whether series ids read vals in the poll (== of
// floats: a set value is never NaN).
func (q *query) sameVals(ids []int32, vals []float64) bool {
	for i, id := range ids {
		if q.t.vals[id].v != vals[i] {
			return false
		}
	}
	return true
}

// factTo reads, into *c (which is zero), a configuration fact from an
// info series' labels, summed over its label sets (aggSum: a capacity) or
// their largest (aggMax: a flag is on when any set has it on).
// A series' labels do not change, so a fact is read once per series and kind.
func (q *query) factTo(c *Cell, agg int, name, kind string, fn func(label func(string) (string, bool)) (float64, bool)) {
	ids := q.keys(name)
	// Nothing to read is absent, never 0.
	if len(ids) == 0 {
		c.Reason = rate.ReasonAbsent
		return
	}
	var sum float64
	n := 0
	for _, id := range ids {
		f := q.facts.ask(factKey{id, kind}, func(k factKey) factVal {
			f, ok := q.t.facts[k]
			if !ok {
				f.v, f.ok = fn(func(l string) (string, bool) { return q.t.label(id, l) })
				q.t.facts[k] = f
			}
			return f
		})
		if v, ok := f.v, f.ok; ok {
			sum = aggregate(agg, n, sum, v)
			n++
		}
	}
	if n == 0 {
		c.Reason = rate.ReasonAbsent
		return
	}
	c.Value, c.Source, c.Derived = rate.Some(sum), name, true
}

// factKey caches a fact of one series.
type factKey struct {
	id   int32
	kind string
}

type factVal struct {
	v  float64
	ok bool
}

// labelNumber parses a label as a number.
func labelNumber(label func(string) (string, bool), name string) (float64, bool) {
	s, ok := label(name)
	if !ok {
		return 0, false
	}
	v, err := parseFloat(s)
	if err != nil || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// labelBool parses a Python or Go boolean label.
func labelBool(label func(string) (string, bool), name string) (float64, bool) {
	s, ok := label(name)
	if !ok {
		return 0, false
	}
	switch strings.ToLower(s) {
	case "true", "1":
		return 1, true
	case "false", "0":
		return 0, true
	}
	return 0, false
}
