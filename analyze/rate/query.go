package rate

// gatherMode says what gather sums over a series' label sets.
type gatherMode uint8

const (
	modeRate    gatherMode = iota // Σ per-set Δ/Δt; the jump gate applies
	modeDelta                     // Σ per-set Δ; the jump gate does not
	modeBuckets                   // modeDelta, plus each set's (le, Δ) into e.buckets
)

// agg is what gather found for one series on the current poll.
type agg struct {
	sum         float64
	window      float64 // the widest window a contributing set used
	present     int     // label sets in the poll
	contributed int     // label sets with an accepted window
	refused     string  // reason of the first set that refuses the cell
	refusedWin  Num     // and its window, when it kept one
	quiet       string  // reason of the first refused set that was not at the previous poll
	quietWin    Num     // and its window
	notes       []string
}

func (a *agg) note(reason, labels string) {
	if labels == "" {
		labels = "{}"
	}
	a.notes = append(a.notes, reason+" "+ClipLabels(labels))
}

// gather sums series over the label sets match accepts (nil accepts all), on
// the poll just observed. It is the one place the label-set rules live.
// It writes into *a, which it overwrites whole: an agg is 120 bytes, and
// returning it by value copied it once a call.
func (e *Estimator) gather(a *agg, series *seriesState, match func(labels string) bool, mode gatherMode) {
	keys := series.keys
	// One key of its own, accepted (a counter with one label set, a
	// histogram's _count or _sum): the loop's sums, without the loop.
	if len(keys) == 1 && match == nil && mode != modeBuckets {
		if st := &e.keys[keys[0]]; st.grp == 0 && st.lastSeq == e.seq && st.reason == "" &&
			(mode != modeRate || !st.jump) {
			var sum float64
			if mode == modeRate {
				sum += st.delta / st.window
			} else {
				sum += st.delta
			}
			*a = agg{sum: sum, window: maxOf(0, st.window), present: 1, contributed: 1}
			return
		}
	}
	*a = agg{}
	// The running sum, window and counts stay in registers, not in *a.
	var sum, window float64
	present, contributed := 0, 0
	for i := 0; i < len(keys); i++ {
		st := &e.keys[keys[i]]
		// A histogram label set's buckets stepped together are read in one run.
		if mode == modeBuckets && match == nil && st.grp != 0 && st.member == 0 {
			if n := e.gatherRun(st.grp, keys[i:], &sum, &window); n > 0 {
				present, contributed, i = present+n, contributed+n, i+n-1
				continue
			}
		}
		if match != nil && !match(st.key.Labels) {
			continue
		}
		// A bucket's verdict may be kept in its group alone.
		if st.grp != 0 {
			e.sync(st)
		}
		if st.lastSeq != e.seq {
			// A set that vanished adds nothing, and says so.
			if st.lastSeq != 0 && st.lastSeq == e.seq-1 {
				a.note(ReasonAbsent, st.key.Labels)
			}
			continue
		}
		present++
		reason := st.reason
		if reason == "" && mode == modeRate && st.jump {
			reason = ReasonJump
		}
		switch {
		case reason == ReasonNoBaseline:
			// A set without a baseline contributes 0, noted.
			a.note(reason, st.key.Labels)
			if mode == modeBuckets {
				e.addBucket(st, 0)
			}
			continue
		case reason != "":
			// A refused set that was there at the previous poll refuses the cell;
			// one that was not contributes 0, noted.
			var win Num
			if st.hasWin {
				win = Some(st.window)
			}
			if st.prevSeq != 0 && st.prevSeq == e.seq-1 && a.refused == "" {
				a.refused, a.refusedWin = reason, win
				continue
			}
			if a.quiet == "" {
				a.quiet, a.quietWin = reason, win
			}
			a.note(reason, st.key.Labels)
			continue
		}
		contributed++
		window = maxOf(window, st.window)
		switch mode {
		case modeRate:
			sum += st.delta / st.window
		case modeBuckets:
			e.addBucket(st, st.delta)
			fallthrough
		default:
			sum += st.delta
		}
	}
	a.sum, a.window, a.present, a.contributed = sum, window, present, contributed
}

// cellTo finishes *c from a: the value and window, or the reason there is
// none. In place: a cell passed and returned by value was copied twice.
func (a *agg) cellTo(c *Cell) {
	c.Notes = a.notes
	switch {
	case a.present == 0:
		// Nothing to read is absent, never 0.
		c.Reason = ReasonAbsent
	case a.refused != "":
		// A sum missing one term is not the sum.
		c.Reason, c.Window = a.refused, a.refusedWin
	case a.contributed == 0 && a.quiet != "":
		// With nothing contributing, a refused set's reason is the cell's.
		c.Reason, c.Window = a.quiet, a.quietWin
	case a.contributed == 0:
		// Sets that all lack a baseline give no value; the reason says it for each.
		c.Reason, c.Notes = ReasonNoBaseline, nil
	default:
		c.Value, c.Window = Some(a.sum), Some(a.window)
	}
}

// usable reports whether a yields a value.
func (a *agg) usable() bool { return a.present > 0 && a.refused == "" && a.contributed > 0 }

// Rate returns the per-second rate of series on the poll just observed: the
// sum of the rates of the label sets match accepts (nil accepts all), each
// over its own window, every gate applied. Source is computed:Δ<series>/Δt.
func (e *Estimator) Rate(series string, match func(labels string) bool) Cell {
	var c Cell
	e.RateTo(&c, series, match)
	return c
}

// RateTo is Rate written into *c, which it overwrites whole: a Cell
// returned by value was built on the stack and copied.
func (e *Estimator) RateTo(c *Cell, series string, match func(labels string) bool) {
	ss := e.queried(series)
	if ss.rateSrc == "" {
		ss.rateSrc = "computed:Δ" + series + "/Δt"
	}
	*c = Cell{Source: ss.rateSrc, Derived: true}
	// A refused poll measured nothing.
	if e.disordered {
		c.Reason = ReasonOrder
		return
	}
	var a agg
	e.gather(&a, ss, match, modeRate)
	a.cellTo(c)
}

// Ratio returns ΣΔnum / ΣΔden over the window of the poll just observed,
// summed over the label sets match accepts in each series (nil accepts all):
// a prefix-cache hit ratio (hits over queries) or a speculative acceptance
// ratio (accepted over drafted tokens). Every gate but the jump gate applies;
// a window without denominator events is null with reason empty.
func (e *Estimator) Ratio(num, den string, match func(labels string) bool) Cell {
	var c Cell
	e.RatioTo(&c, num, den, match)
	return c
}

// RatioTo is Ratio written into *c, which it overwrites whole.
func (e *Estimator) RatioTo(c *Cell, num, den string, match func(labels string) bool) {
	ns, ds := e.queried(num), e.queried(den)
	*c = Cell{Source: ns.ratioSource(num, den), Derived: true}
	// A refused poll measured nothing.
	if e.disordered {
		c.Reason = ReasonOrder
		return
	}
	var n, d agg
	e.gather(&n, ns, match, modeDelta)
	e.gather(&d, ds, match, modeDelta)
	// The side that cannot be read decides the cell, numerator first.
	if !n.usable() {
		n.cellTo(c)
		return
	}
	if !d.usable() {
		d.cellTo(c)
		return
	}
	c.Notes = append(n.notes, d.notes...)
	c.Window = Some(max(n.window, d.window))
	// A window without denominator events has no ratio, not a ratio of 0.
	if d.sum == 0 {
		c.Reason = ReasonEmpty
		return
	}
	c.Value = Some(n.sum / d.sum)
}

// histSources are a histogram's provenance strings and the names of its
// series, built once per base name so that queries neither allocate nor
// hash more than once.
type histSources struct {
	count, countInf, mean, p50, p95, p99 string // provenance
	bucket, countName, sumName           *seriesState
}

func (e *Estimator) histSources(base string) *histSources {
	return e.hasked.Ask(base, e.newHistSources)
}

func (e *Estimator) newHistSources(base string) *histSources {
	if h, ok := e.histSrc[base]; ok {
		return h
	}
	q := func(x string) string { return "computed:histogram_quantile(" + x + ", Δ" + base + "_bucket)" }
	h := &histSources{
		count: "computed:Δ" + base + "_count", countInf: "computed:Δ" + base + `_bucket{le="+Inf"}`,
		mean: "computed:Δ" + base + "_sum/Δ" + base + "_count",
		p50:  q("0.5"), p95: q("0.95"), p99: q("0.99"),
		bucket: e.seriesOf(base + "_bucket"), countName: e.seriesOf(base + "_count"), sumName: e.seriesOf(base + "_sum"),
	}
	e.histSrc[base] = h
	return h
}

// ratioSource is computed:Δ<num>/Δ<den>, built once per pair.
func (s *seriesState) ratioSource(num, den string) string {
	for _, r := range s.ratioSrc {
		if r.den == den {
			return r.src
		}
	}
	src := "computed:Δ" + num + "/Δ" + den
	s.ratioSrc = append(s.ratioSrc, ratioSource{den, src})
	return src
}
