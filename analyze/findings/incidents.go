package findings

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmrec/llmrec/analyze/internal/par"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Incident rules.
const (
	// HoleFactor: polls further apart than this many intervals leave a hole.
	HoleFactor = 1.5
	// DownIntervals: a hole of failed scrapes at least this many intervals
	// (and DownSeconds) long is the target going down, not a gap.
	DownIntervals = 10
	DownSeconds   = 10.0
	DownRows      = 3
	// maxCells bounds the cells an incident lists.
	maxCells = 10
)

// CauseUnparsed is the cause of a hole of pages the target answered that
// were stored unparsed: the target was up.
const CauseUnparsed = "unparsed"

// StalledPrefix starts the error text of a tick the recorder itself slept
// through.
const StalledPrefix = "recorder stalled"

// hole is a stretch of a target without polls.
type hole struct {
	v             *view
	after, before int     // polls bounding it; -1 at the recording's start or end
	a, b          float64 // its time bounds
	rows          []int
	stalled       int // missed rows the recorder slept through
	failed        int // http_error, error rows
	unparsed      int // parse_error rows: answered, the page stored unparsed
	missed        int // other missed rows: the previous scrape still ran
	stallA        float64
	stallB        float64
	explained     bool // by a host stall
}

func (h *hole) empty() bool { return len(h.rows) == 0 }
func (h *hole) onlyStalled() bool {
	return h.stalled > 0 && h.failed == 0 && h.missed == 0 && h.unparsed == 0
}

// add counts a row of the hole by what it was.
func (h *hole) add(i int) {
	r := &h.v.t.Rows[i]
	h.rows = append(h.rows, i)
	switch {
	case r.Outcome == "missed" && strings.HasPrefix(r.Error, StalledPrefix):
		t := rowTime(r)
		if h.stalled == 0 {
			h.stallA = t
		}
		h.stalled++
		h.stallB = t + h.v.interval
	case r.Outcome == "missed":
		h.missed++
	case r.Outcome == "parse_error":
		h.unparsed++
	default:
		h.failed++
	}
}

// holes finds the target's stretches without polls, and the failed or
// missed rows that left none (those go to loose).
func (v *view) holes() (hs []*hole, loose []looseRun) {
	t := v.t
	prev, prevRow := -1, -1
	flush := func(next, nextRow int) {
		// Built on the stack and copied to the heap only when kept: most
		// polls follow the last one close and leave no hole.
		hv := hole{v: v, after: prev, before: next}
		h := &hv
		for i := prevRow + 1; i < nextRow; i++ {
			if v.rowPoll[i] < 0 {
				h.add(i)
			}
		}
		switch {
		case prev >= 0 && next >= 0:
			h.a, h.b = t.Polls.T(prev), t.Polls.T(next)
			// Polls close enough leave no hole; their failed rows are loose.
			// Nor does a stretch the target was away from the target set:
			// from the tick of the poll before (its answer may come after
			// the leave) to the poll after.
			away := v.absentWithin(rowTime(&t.Rows[v.pollRow[prev]]), h.b)
			if h.b-h.a <= HoleFactor*v.interval || away || v.sentOnCadence(prev, next) {
				if away && !h.empty() {
					loose = append(loose, looseRun{h.rows, "around its absence from the target set"})
					return
				}
				if !h.empty() {
					loose = append(loose, looseRun{h.rows, "between two polls close enough for the windows to span them"})
				}
				return
			}
		case h.empty():
			// Nothing before the first poll or after the last: no hole.
			return
		case prev < 0 && next >= 0:
			h.a, h.b = rowTime(&t.Rows[h.rows[0]]), t.Polls.T(next)
		case prev >= 0:
			h.a, h.b = t.Polls.T(prev), rowTime(&t.Rows[h.rows[len(h.rows)-1]])+v.interval
		default:
			h.a, h.b = rowTime(&t.Rows[h.rows[0]]), rowTime(&t.Rows[h.rows[len(h.rows)-1]])+v.interval
		}
		// Before the first poll or after the last, only the recorder's stall
		// or the target being down is a hole; other rows are loose.
		if (prev < 0 || next < 0) && h.stalled == 0 && !h.down() {
			where := "after the last poll"
			if prev < 0 {
				where = "before the first poll"
			}
			loose = append(loose, looseRun{h.rows, where})
			return
		}
		kept := new(hole)
		*kept = hv
		hs = append(hs, kept)
	}
	for p := range t.Polls.Len() {
		flush(p, v.pollRow[p])
		prev, prevRow = p, v.pollRow[p]
	}
	flush(-1, len(t.Rows))
	return hs, loose
}

// sentOnCadence reports whether polls prev and next were sent close
// enough to leave no hole: an answer that came late (a slow scrape) moves
// its first byte, not the recorder's cadence, and is no gap of the target
// and no stall of the host (a-baseline seq 198: /metrics answered 576 ms
// late while its /slots answered in 1 ms).
func (v *view) sentOnCadence(prev, next int) bool {
	a, b := v.t.Polls.Start(prev), v.t.Polls.Start(next)
	return a > 0 && b > 0 && b-a <= HoleFactor*v.interval
}

// looseRun is failed or missed rows that left no hole, and where they are.
type looseRun struct {
	rows  []int
	where string
}

// span is one target's share of a possible host stall.
type span struct {
	h    *hole
	a, b float64
}

// incidents finds every incident of the run, in time order.
func incidents(views []*view, gates rate.Config, cfSpans []float64) []Incident {
	// Each target's holes, and its incidents that no other target's
	// decide, are found on every core; the host stalls, which read every
	// target's holes, after.
	per := make([]ownIncidents, len(views))
	par.For(len(views), func(_, i int) { per[i] = views[i].ownIncidents(gates, cfSpans) })
	return mergeIncidents(views, per)
}

// ownIncidents are one target's holes and the incidents no other target's
// decide.
type ownIncidents struct {
	holes []*hole
	inc   []Incident
}

// ownIncidents finds the target's holes and its incidents that no other
// target's decide; it reads the view only.
func (v *view) ownIncidents(gates rate.Config, cfSpans []float64) ownIncidents {
	var o ownIncidents
	hs, loose := v.holes()
	o.holes = hs
	firstAfter := map[int]bool{}
	for _, h := range hs {
		if h.before >= 0 {
			firstAfter[h.before] = true
		}
	}
	for _, l := range loose {
		o.inc = append(o.inc, v.looseRows(l)...)
	}
	slow, inc := v.slowScrapes(gates)
	o.inc = append(o.inc, inc...)
	o.inc = append(o.inc, v.refusals(gates, firstAfter, slow)...)
	o.inc = append(o.inc, v.restarts()...)
	o.inc = append(o.inc, v.labelSets()...)
	o.inc = append(o.inc, v.engineStalls(cfSpans)...)
	o.inc = append(o.inc, v.presence()...)
	return o
}

// mergeIncidents finds the host stalls, which read every target's holes,
// and gathers the incidents in time order; per is the views' own, in the
// views' order (the incidents are gathered one target after another: the
// sort is stable).
func mergeIncidents(views []*view, per []ownIncidents) []Incident {
	out := []Incident{}
	var spans []span
	for _, o := range per {
		for _, h := range o.holes {
			switch {
			case h.stalled > 0:
				spans = append(spans, span{h, h.stallA, h.stallB})
			case h.empty():
				spans = append(spans, span{h, h.a, h.b})
			}
		}
	}
	out = append(out, hostStalls(views, spans)...)
	for _, o := range per {
		for _, h := range o.holes {
			if h.explained {
				continue
			}
			out = append(out, h.incidents()...)
		}
	}
	for _, o := range per {
		out = append(out, o.inc...)
	}
	slices.SortStableFunc(out, incidentOrder)
	return out
}

// incidentOrder is the incidents' order: by time, kind and target.
func incidentOrder(a, b Incident) int {
	return cmp.Or(cmp.Compare(cmp.Or(a.Start.V, a.T.V), cmp.Or(b.Start.V, b.T.V)),
		cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), strings.Compare(string(a.Target), string(b.Target)))
}

var kindOrder = map[string]int{
	KindHostStall: 0, KindDown: 1, KindGap: 2, KindScrapeErr: 3, KindMissedTick: 4, KindSlow: 5,
	KindRestart: 6, KindLabelJoin: 7, KindLabelLeave: 8, KindRefused: 9, KindUp: 10, KindEngineStall: 11,
	KindTargetLeave: 12, KindTargetJoin: 13,
}

// hostStalls groups the stretches every target spent without polls at
// once, for a reason on the recorder's side: its own "recorder stalled"
// ticks, or no rows at all (it was not running).
func hostStalls(views []*view, spans []span) []Incident {
	slices.SortFunc(spans, func(x, y span) int { return cmp.Compare(x.a, y.a) })
	var out []Incident
	for i := 0; i < len(spans); {
		j, end := i+1, spans[i].b
		for j < len(spans) && spans[j].a < end {
			end = max(end, spans[j].b)
			j++
		}
		if inc, ok := hostStall(views, spans[i:j]); ok {
			out = append(out, inc)
		}
		i = j
	}
	return out
}

// hostStall makes one host stall of overlapping spans, if it is one.
func hostStall(views []*view, group []span) (Incident, bool) {
	stalled := false
	start, end := group[0].a, group[0].b
	for _, s := range group {
		stalled = stalled || s.h.stalled > 0
		start, end = min(start, s.a), max(end, s.b)
	}
	involved := map[*view]bool{}
	for _, s := range group {
		involved[s.h.v] = true
	}
	// Every target recording at the time must be in it.
	all := true
	for _, v := range views {
		if involved[v] || !v.activeOver(start, end) {
			continue
		}
		all = false
	}
	// Empty holes on some targets only are those targets' gaps; the
	// recorder's own word makes a stall wherever it is.
	if !stalled && (!all || len(involved) < 2 && len(views) > 1) {
		return Incident{}, false
	}
	if !stalled {
		// Not recording: the stretch no target was polled.
		start, end = group[0].h.a, group[0].h.b
		for _, s := range group {
			start, end = max(start, s.h.a), min(end, s.h.b)
		}
	}
	inc := Incident{Kind: KindHostStall, Start: rate.Some(start), End: rate.Some(end), Targets: []string{},
		Cells: []CellRef{}, Rows: map[string]int{}, Errors: map[string]int{}}
	var cf []string
	for _, s := range group {
		h := s.h
		// Only a hole the stall alone explains is the stall's.
		if h.onlyStalled() || h.empty() {
			h.explained = true
		}
		inc.Targets = append(inc.Targets, h.v.t.Name)
		for _, i := range h.rows {
			r := &h.v.t.Rows[i]
			inc.Rows[r.Outcome]++
			inc.Errors[errorKey(r.Error)]++
		}
		if c, text, ok := h.after1(); ok {
			inc.Cells = append(inc.Cells, c)
			cf = append(cf, text)
			if inc.Gate == "" && gateReasons[c.Reason] {
				inc.Gate = Name(c.Reason)
			}
		}
	}
	slices.Sort(inc.Targets)
	inc.Targets = slices.Compact(inc.Targets)
	if !all || len(views) == 1 {
		inc.Target = Name(inc.Targets[0])
	}
	inc.Counterfactual = strings.Join(cf, "; ")
	if stalled {
		inc.Cause = "recorder_stalled"
		inc.Detail = fmt.Sprintf("the recorder itself stalled for %s: %s missed their ticks at once with the recorder's own %q error; the recording host, not the engines",
			secs(end-start), targetsText(inc.Targets, len(views)), StalledPrefix)
	} else {
		inc.Cause, inc.Rows, inc.Errors = "not_recording", nil, nil
		inc.Detail = fmt.Sprintf("no target has a row for %s: the recorder was not running", secs(end-start))
	}
	return inc, true
}

// targetsText names the targets of a host stall.
func targetsText(ts []string, total int) string {
	switch {
	case len(ts) == total && total == 2:
		return fmt.Sprintf("both targets (%s)", strings.Join(ts, ", "))
	case len(ts) == total && total > 2:
		return fmt.Sprintf("all %d targets (%s)", total, strings.Join(ts, ", "))
	}
	return strings.Join(ts, ", ")
}

// errorKey groups error texts: every "recorder stalled: tick due 3s ago"
// is one kind.
func errorKey(e string) string {
	if strings.HasPrefix(e, StalledPrefix) {
		return StalledPrefix
	}
	return e
}

// activeOver reports whether the target was being recorded over [a, b]:
// it has rows on both sides.
func (v *view) activeOver(a, b float64) bool {
	rs := v.t.Rows
	return len(rs) > 0 && rowTime(&rs[0]) <= a && rowTime(&rs[len(rs)-1]) >= b-v.interval && v.presentOver(a, b-v.interval)
}

// after1 is the decode cell of the first poll after the hole, and what a
// naive Δ/Δt over the hole would have printed.
func (h *hole) after1() (CellRef, string, bool) {
	if h.before < 0 {
		return CellRef{}, "", false
	}
	v := h.v
	p := v.t.Polls.At(h.before)
	c := v.ref(h.before, Decode)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", v.t.Name)
	if n := v.naive(h.before, Decode); n.Valid {
		fmt.Fprintf(&b, "naive %s tok/s over the %s between polls", rateText(n.V), secs(p.T-h.a))
	} else {
		b.WriteString("no naive value (no counter before the hole)")
	}
	d := p.Rates[Decode]
	switch {
	case d.V.Valid:
		fmt.Fprintf(&b, "; published %s over a %s window", rateText(d.V.V), secs(d.Window.V))
		if d.Window.Valid && d.Window.V > v.gates.Span {
			fmt.Fprintf(&b, " (an average over the hole, under the %s ceiling)", secs(v.gates.CeilingFactor*v.gates.Span))
		}
	default:
		fmt.Fprintf(&b, "; published null (%s)", d.Reason)
	}
	return c, b.String(), true
}

// ref is the published rate cell k of poll i.
func (v *view) ref(i, k int) CellRef {
	p := v.t.Polls.At(i)
	c := p.Rates[k]
	return CellRef{Target: v.t.Name, T: p.T, Cell: RateCells[k], Value: c.V, Window: c.Window, Reason: c.Reason}
}

// incidents of a hole no host stall explains: a gap, or the target going
// down and coming back.
func (h *hole) incidents() []Incident {
	v := h.v
	name := v.t.Name
	rows, errs := map[string]int{}, map[string]int{}
	first := math.Inf(1)
	for _, i := range h.rows {
		r := &v.t.Rows[i]
		rows[r.Outcome]++
		if r.Error != "" {
			errs[errorKey(r.Error)]++
		}
		if r.Outcome != "missed" {
			first = min(first, rowTime(r))
		}
	}
	down := h.down()
	cells, cf, gate := []CellRef{}, "", Name("")
	if c, text, ok := h.after1(); ok {
		cells, cf = append(cells, c), text
		if gateReasons[c.Reason] {
			gate = Name(c.Reason)
		}
	}
	if down {
		at := min(first, h.b)
		inc := Incident{Kind: KindDown, Target: Name(name), Targets: []string{name}, T: rate.Some(at),
			Cells: []CellRef{}, Rows: rows, Errors: errs, Cause: cause(h),
			Counterfactual: "no poll, no number: nothing was published while it was down"}
		inc.Detail = fmt.Sprintf("%s stopped answering: %d scrape(s) failed (%s)", name, h.failed, countsText(errs))
		out := []Incident{inc}
		if h.before >= 0 {
			out = append(out, Incident{Kind: KindUp, Target: Name(name), Targets: []string{name},
				T: rate.Some(h.b), Cells: cells, Gate: gate, Counterfactual: cf,
				Detail: fmt.Sprintf("%s answered again after %s down", name, secs(h.b-at))})
		}
		return out
	}
	inc := Incident{Kind: KindGap, Target: Name(name), Targets: []string{name}, Start: rate.Some(h.a),
		End: rate.Some(h.b), Cells: cells, Gate: gate, Counterfactual: cf, Cause: cause(h), Rows: rows, Errors: errs}
	what := "no row at all"
	if len(h.rows) > 0 {
		what = countsText(rows)
		if len(errs) > 0 {
			what += ": " + countsText(errs)
		}
	}
	if h.unparsed > 0 {
		what += fmt.Sprintf("; it answered %d time(s), each page stored unparsed (over a parse limit, or malformed: llmrec inspect names why): up, unparsed", h.unparsed)
	}
	inc.Detail = fmt.Sprintf("%s has no poll for %s (%.3g intervals; more than %g is a gap): %s",
		name, secs(h.b-h.a), (h.b-h.a)/v.interval, HoleFactor, what)
	// Scrapes that got no answer (timeouts) and a target that answered
	// again with its counters continuing: the target stalled (a SIGSTOP, a
	// hang), it did not restart.
	if rows["error"] > 0 && rows["http_error"] == 0 && h.after >= 0 && h.before >= 0 && v.t.Polls.At(h.before).Restart == "" {
		inc.Detail += "; it answered again with its counters continuing: a stall of the target, not a restart (the phases are differenced across it)"
	}
	return []Incident{inc}
}

// down reports whether the hole is the target going down: failed scrapes
// only, for DownIntervals intervals (and DownSeconds), or at least
// DownRows of them at the recording's start or end.
func (h *hole) down() bool {
	// A page stored unparsed (over a parse limit) was answered: up.
	if h.failed == 0 || h.missed > 0 || h.stalled > 0 || h.unparsed > 0 {
		return false
	}
	edge := h.after < 0 || h.before < 0
	return h.b-h.a >= max(DownIntervals*h.v.interval, DownSeconds) || (edge && h.failed >= DownRows)
}

// cause names what a hole's rows were.
func cause(h *hole) string {
	var parts []string
	if h.failed > 0 {
		parts = append(parts, KindScrapeErr)
	}
	if h.missed > 0 {
		parts = append(parts, KindMissedTick)
	}
	if h.stalled > 0 {
		parts = append(parts, "recorder_stalled")
	}
	if h.unparsed > 0 {
		parts = append(parts, CauseUnparsed)
	}
	if len(parts) == 0 {
		return "no_rows"
	}
	return strings.Join(parts, "+")
}

// looseRows are failed or missed rows that left no hole: grouped by kind.
func (v *view) looseRows(l looseRun) []Incident {
	rows := l.rows
	var out []Incident
	for i := 0; i < len(rows); {
		kind := looseKind(&v.t.Rows[rows[i]])
		j := i + 1
		for j < len(rows) && looseKind(&v.t.Rows[rows[j]]) == kind {
			j++
		}
		counts, errs := map[string]int{}, map[string]int{}
		for _, k := range rows[i:j] {
			r := &v.t.Rows[k]
			counts[r.Outcome]++
			if r.Error != "" {
				errs[errorKey(r.Error)]++
			}
		}
		a, b := rowTime(&v.t.Rows[rows[i]]), rowTime(&v.t.Rows[rows[j-1]])
		inc := Incident{Kind: kind, Target: Name(v.t.Name), Targets: []string{v.t.Name}, Cells: []CellRef{},
			Rows: counts, Errors: errs, Counterfactual: "no window rests on them: nothing published changed"}
		if a == b {
			inc.T = rate.Some(a)
		} else {
			inc.Start, inc.End = rate.Some(a), rate.Some(b)
		}
		inc.Detail = fmt.Sprintf("%s: %s %s", v.t.Name, countsText(counts), l.where)
		if len(errs) > 0 {
			inc.Detail += " (" + countsText(errs) + ")"
		}
		out = append(out, inc)
		i = j
	}
	return out
}

func looseKind(r *Row) string {
	if r.Outcome == "missed" {
		return KindMissedTick
	}
	return KindScrapeErr
}

// slowLimit is the request-to-first-byte time above which a poll's stamp is
// blurred: the stale fraction of one interval.
func (v *view) slowLimit(gates rate.Config) float64 {
	f := gates.StaleFraction
	// With the stale gate off, a quarter of an interval still blurs.
	if !finite(f) || f <= 0 {
		f = rate.DefaultStaleFraction
	}
	return f * v.interval
}

// slowScrapes groups polls whose first byte came late.
func (v *view) slowScrapes(gates rate.Config) (map[int]bool, []Incident) {
	limit := v.slowLimit(gates)
	ps := &v.t.Polls
	slow := map[int]bool{}
	var out []Incident
	for i := 0; i < ps.Len(); {
		if !v.isSlow(i, limit) {
			i++
			continue
		}
		j := i + 1
		for j < ps.Len() && v.isSlow(j, limit) {
			j++
		}
		inc := Incident{Kind: KindSlow, Target: Name(v.t.Name), Targets: []string{v.t.Name}, Cells: []CellRef{}}
		worst := 0.0
		refused := 0
		first, last := ps.T(i), ps.T(i)
		for k := i; k < j; k++ {
			slow[k] = true
			worst = max(worst, ps.T(k)-ps.Start(k))
			// Overlapping slow scrapes may answer out of order.
			first, last = min(first, ps.T(k)), max(last, ps.T(k))
			if ps.Reasons(k)[Decode] == rate.ReasonStale {
				refused++
				inc.Gate = rate.ReasonStale
			}
			if len(inc.Cells) < maxCells {
				inc.Cells = append(inc.Cells, v.ref(k, Decode))
			}
		}
		if j-i == 1 {
			inc.T = rate.Some(ps.T(i))
		} else {
			inc.Start, inc.End = rate.Some(first), rate.Some(last)
		}
		inc.Counterfactual = fmt.Sprintf("the body may be up to %s older than its stamp; %d of %d decode value(s) refused as stale",
			secs(worst), refused, j-i)
		if n := v.naive(i, Decode); n.Valid {
			inc.Naive = n
			inc.Counterfactual = fmt.Sprintf("naive %s tok/s; ", rateText(n.V)) + inc.Counterfactual
		}
		inc.Detail = fmt.Sprintf("%s: %d poll(s) answered up to %s after the request, above %s (%g of the %s interval)",
			v.t.Name, j-i, secs(worst), secs(limit), limit/v.interval, secs(v.interval))
		out = append(out, inc)
		i = j
	}
	return slow, out
}

func (v *view) isSlow(i int, limit float64) bool {
	st := v.t.Polls.Start(i)
	return st > 0 && v.t.Polls.T(i)-st > limit
}

// refusals groups polls whose rate cells a gate refused, except where
// another incident or an edge explains them: the first poll after a hole,
// a restart, a slow scrape's stale refusal, a load start's jump hold.
func (v *view) refusals(gates rate.Config, firstAfter, slow map[int]bool) []Incident {
	ps := &v.t.Polls
	refused := func(i int) []int {
		var ks []int
		rs := ps.Reasons(i)
		for k := range NRates {
			// Most polls' cells have a value: no reason to look up.
			r := rs[k]
			if r == "" || !gateReasons[r] || r == rate.ReasonReset || (r == rate.ReasonStale && slow[i]) {
				continue
			}
			ks = append(ks, k)
		}
		// The maps are read only for the few polls a gate refused.
		if len(ks) > 0 && (firstAfter[i] || v.held[i]) {
			return nil
		}
		return ks
	}
	var out []Incident
	for i := 0; i < ps.Len(); {
		ks := refused(i)
		if len(ks) == 0 {
			i++
			continue
		}
		inc := Incident{Kind: KindRefused, Target: Name(v.t.Name), Targets: []string{v.t.Name}, Cells: []CellRef{}}
		reasons := map[string]int{}
		cellsSeen := map[string]bool{}
		j := i
		for ; j < ps.Len(); j++ {
			ks := refused(j)
			if len(ks) == 0 {
				break
			}
			rs := ps.Reasons(j)
			for _, k := range ks {
				reasons[rs[k]]++
				cellsSeen[RateCells[k]] = true
				if len(inc.Cells) < maxCells {
					inc.Cells = append(inc.Cells, v.ref(j, k))
				}
				if k == Decode && inc.Gate == "" {
					inc.Gate = Name(rs[k])
					inc.Naive = v.naive(j, Decode)
					inc.Counterfactual = v.refusedText(j, gates)
				}
			}
		}
		if inc.Gate == "" {
			c := inc.Cells[0]
			inc.Gate = Name(c.Reason)
			inc.Counterfactual = fmt.Sprintf("%s refused: %s", c.Cell,
				gateText(c.Reason, Value{V: c.Value, Window: c.Window, Reason: c.Reason}, gates, v.windowLatency(i, c.Window)))
		}
		if j-i == 1 {
			inc.T = rate.Some(ps.T(i))
		} else {
			inc.Start, inc.End = rate.Some(ps.T(i)), rate.Some(ps.T(j-1))
		}
		names := make([]string, 0, len(cellsSeen))
		for c := range cellsSeen {
			names = append(names, c)
		}
		slices.Sort(names)
		inc.Detail = fmt.Sprintf("%s: %d poll(s) refused by the gates (%s): %s", v.t.Name, j-i, countsText(reasons),
			strings.Join(names, ", "))
		out = append(out, inc)
		i = j
	}
	return out
}

// latency is poll i's request-to-first-byte time; 0 when unknown.
func (v *view) latency(i int) float64 {
	p := v.t.Polls.At(i)
	if p.Start <= 0 {
		return 0
	}
	return p.T - p.Start
}

// windowLatency is the larger request-to-first-byte time of a window's
// two samples: poll i's and its base's, the poll window seconds before it.
// A stale refusal rests on either.
func (v *view) windowLatency(i int, window rate.Num) float64 {
	l := v.latency(i)
	if !window.Valid {
		return l
	}
	ps := &v.t.Polls
	base := ps.T(i) - window.V
	// Back from poll i to the base; polls of one target come in time order.
	for k := i - 1; k >= 0 && ps.T(k) > base-1e-6; k-- {
		if math.Abs(ps.T(k)-base) < 1e-6 {
			l = max(l, v.latency(k))
		}
	}
	return l
}

// refusedText is the counterfactual of a refused decode cell at poll i.
func (v *view) refusedText(i int, gates rate.Config) string {
	d := v.t.Polls.At(i).Rates[Decode]
	s := "refused: " + gateText(d.Reason, d, gates, v.windowLatency(i, d.Window))
	if n := v.naive(i, Decode); n.Valid {
		return fmt.Sprintf("naive %s tok/s; %s", rateText(n.V), s)
	}
	return s
}

// gateText says why a gate refused a cell.
func gateText(reason string, c Value, gates rate.Config, latency float64) string {
	switch reason {
	case rate.ReasonFloor:
		return fmt.Sprintf("%s window below the %s floor", secs(c.Window.V), secs(gates.MinWindow))
	case rate.ReasonCeiling:
		return fmt.Sprintf("window longer than the %s ceiling (%g × the %s span)", secs(gates.CeilingFactor*gates.Span),
			gates.CeilingFactor, secs(gates.Span))
	case rate.ReasonStale:
		return fmt.Sprintf("a sample of its %s window was answered %s after its request, above %g of the window",
			secs(c.Window.V), secs(latency), gates.StaleFraction)
	case rate.ReasonJump:
		return fmt.Sprintf("above %g × the last accepted rate; held until a window on another base sample confirms it",
			gates.JumpFactor)
	case rate.ReasonReset:
		return "the counter reset"
	case rate.ReasonOrder:
		return "the poll is not later than the previous one"
	}
	return reason
}

// restarts finds the polls where the target's counters reset or its
// process start time changed.
func (v *view) restarts() []Incident {
	ps := &v.t.Polls
	var out []Incident
	lastProc := rate.Num{}
	for i := range ps.Len() {
		var reset []int
		for k, r := range ps.Reasons(i) {
			if r == rate.ReasonReset {
				reset = append(reset, k)
			}
		}
		pst := ps.ProcessStart(i)
		procMoved := pst.Valid && lastProc.Valid && pst.V != lastProc.V
		if pst.Valid {
			lastProc = pst
		}
		// Neither a reset, a new process nor other evidence: no restart.
		if i == 0 || (len(reset) == 0 && !procMoved && !ps.Restarted(i)) {
			continue
		}
		p := ps.At(i)
		inc := Incident{Kind: KindRestart, Target: Name(v.t.Name), Targets: []string{v.t.Name},
			Start: rate.Some(ps.T(i - 1)), End: rate.Some(p.T), Gate: rate.ReasonReset, Cells: []CellRef{}}
		for _, k := range reset {
			inc.Cells = append(inc.Cells, v.ref(i, k))
		}
		ps0 := rate.Num{}
		if procMoved {
			ps0 = p.ProcessStart
		}
		inc.ProcessStart = &ps0
		before, after := ps.At(i - 1).Totals[Decode], p.Totals[Decode]
		if n := v.naive(i, Decode); n.Valid {
			inc.Naive = n
			inc.Counterfactual = fmt.Sprintf("naive %s tok/s (the summed counter went from %s to %s); refused: counter reset, the next poll measures again",
				rateText(n.V), num(before.V), num(after.V))
		} else {
			inc.Counterfactual = "refused: counter reset, the next poll measures again"
		}
		when := "the engine publishes no process_start_time_seconds: found by its counters falling"
		switch {
		case procMoved:
			when = "its process started at " + stamp(p.ProcessStart.V)
		case p.Restart != "":
			when = "found by " + p.Restart + "; every window across it refused"
		}
		inc.Detail = fmt.Sprintf("%s restarted between %s and %s: %s", v.t.Name, stamp(ps.T(i-1)), stamp(p.T), when)
		out = append(out, inc)
	}
	return out
}

// labelSets finds label sets joining and leaving the decode counter after
// the first poll.
func (v *view) labelSets() []Incident {
	ps := &v.t.Polls
	var out []Incident
	for i := 1; i < ps.Len(); i++ {
		for _, note := range ps.Notes(i) {
			reason, labels, _ := strings.Cut(note, " ")
			var kind, gate, what string
			switch reason {
			case rate.ReasonNoBaseline:
				kind, gate = KindLabelJoin, rate.ReasonNoBaseline
				what = "the joining set adds 0 until it has a baseline"
			case rate.ReasonAbsent:
				kind, what = KindLabelLeave, "the set that left adds nothing"
			default:
				continue
			}
			p := ps.At(i)
			inc := Incident{Kind: kind, Target: Name(v.t.Name), Targets: []string{v.t.Name}, T: rate.Some(p.T),
				Labels: labels, Gate: Name(gate), Cells: []CellRef{v.ref(i, Decode)}}
			pub := "null (" + p.Rates[Decode].Reason + ")"
			if p.Rates[Decode].V.Valid {
				pub = rateText(p.Rates[Decode].V.V) + " tok/s"
			}
			if n := v.naive(i, Decode); n.Valid {
				inc.Naive = n
				inc.Counterfactual = fmt.Sprintf("naive %s tok/s (Δ of the counter summed over label sets: %s tokens in %s); published %s: %s",
					rateText(n.V), num(p.Totals[Decode].V-ps.At(i - 1).Totals[Decode].V), secs(p.T-ps.T(i-1)), pub, what)
			} else {
				inc.Counterfactual = "published " + pub + ": " + what
			}
			verb := "joined"
			if kind == KindLabelLeave {
				verb = "left"
			}
			inc.Detail = fmt.Sprintf("%s: label set %s %s the decode counter; not a restart", v.t.Name, labels, verb)
			out = append(out, inc)
		}
	}
	return out
}

// countsText renders counts by decreasing count, then name: "http_error 4".
func countsText(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// rateText formats a rate with one decimal under 10 000, else in %g.
func rateText(x float64) string {
	if math.Abs(x) < 1e4 {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.4g", x)
}

// stamp formats a Unix time in UTC to the millisecond.
func stamp(t float64) string {
	return time.Unix(0, int64(math.Round(t*1e9))).UTC().Format("15:04:05.000")
}
