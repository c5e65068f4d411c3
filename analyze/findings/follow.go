package findings

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// FollowPolls is how many intervals (the run's longest) a Follow looks
// back before its cut, and keeps behind the run's latest row: more than
// any rule reads around a poll (an edge is judged SteadyPolls on, a level
// change read 2·levelPolls wide, a stall's pace SteadyPolls back).
const FollowPolls = 30

// Follow computes the incidents and the fleet's latest tick of a run that
// grows, update after update, at a cost that does not grow with the run.
//
// Each target has a cut: its incidents before it are final, found when
// its polls after them were already read for FollowPolls intervals, and
// none of its incidents or edges straddled the cut. An update analyses
// only each target's polls from FollowPolls intervals before its cut (the
// context the rules read back into) to the end, with what it carries of
// the polls before (the busy signal a target publishes, its tokens counted
// so far), keeps the target's incidents it finds from the cut on, and moves
// the cut up to FollowPolls intervals behind the target's latest row, but
// never past its last poll (the rows after it are not yet a hole or not)
// nor into an incident or edge of the target (with the polls that judge
// it) that straddles it. The incidents of several targets (a host stall)
// bound every cut likewise, are final before the earliest cut, and no cut
// runs more than FollowPolls/2 intervals ahead of the earliest (which
// moves past what straddles it instead): every target's polls are
// analysed wherever such an incident may still be found. A target that
// answers no more (down to the end) holds its cut, the others' a little
// ahead, and the updates grow until it answers again.
//
// The run must grow only at its end: a target's rows and polls are
// appended, never inserted. A run with a target whose interval is not
// known (Target.Interval 0: its cadence is the median over all its rows)
// is analysed whole at every update.
type Follow struct {
	host   float64    // the earliest cut at the last update
	frozen []Incident // the incidents of several targets before host, final
	carry  map[string]*carry
}

// carry is what a Follow keeps of one target.
type carry struct {
	cut            float64    // Unix s; 0 before the first
	frozen         []Incident // the target's incidents before cut, final
	p0             int        // the tail's first poll
	tok            tokenState
	flags          int // polls the flags were read over
	steps, running bool
	end, open      float64
}

// signal is signalOf over every poll so far.
func (c *carry) signal(engine string) signal {
	if decodeMoves[engine] != atCompletion {
		return signalDecode
	}
	switch {
	case c.steps:
		return signalSteps
	case c.running:
		return signalRunning
	}
	return signalDecode
}

// Update returns the incidents of run so far, as Analyze finds them, and
// the fleet's totals at its latest tick (nil without an engine or a tick).
// Each run passed is the previous one grown at its end.
func (f *Follow) Update(run *Run) ([]Incident, *FleetPoint) {
	gates := run.Gates.WithDefaults()
	iv := 0.0
	for _, t := range run.Targets {
		// Without a stated interval the cadence is read from every row.
		if t.Interval <= 0 {
			all := Analyze(&Run{Targets: run.Targets, Gates: run.Gates, Spans: run.Spans, Caps: run.Caps, KeepPolls: true})
			return all.Incidents, lastPoint(all.Fleet.Polls)
		}
		iv = max(iv, t.Interval)
	}
	if f.carry == nil {
		f.carry = map[string]*carry{}
	}
	margin := FollowPolls * iv
	earliest := math.Inf(1)
	views := make([]*view, 0, len(run.Targets))
	for _, t := range run.Targets {
		c := f.carry[t.Name]
		if c == nil {
			c = &carry{}
			f.carry[t.Name] = c
		}
		// A target with no cut yet is analysed whole: it bounds none.
		if c.cut > 0 {
			earliest = min(earliest, c.cut)
		}
		for ; c.flags < t.Polls.Len(); c.flags++ {
			c.steps = c.steps || t.Polls.Steps(c.flags).Valid
			c.running = c.running || t.Polls.Running(c.flags).Valid
		}
		// The tail keeps at least the last poll: rows after it are read
		// against it, as in the whole run.
		for c.cut > 0 && c.p0 < t.Polls.Len()-1 && t.Polls.T(c.p0) < c.cut-margin {
			c.p0++
		}
		for c.tok.n < c.p0 {
			c.tok.add(t.Polls.TokensTotal(c.tok.n), t.Polls.Restarted(c.tok.n))
		}
		sub := *t
		if c.p0 > 0 {
			r0 := t.Polls.At(c.p0).Row
			sub.Rows = t.Rows[r0:]
			sub.Polls = t.Polls.Tail(c.p0, r0)
		}
		c.end, c.open = 0, math.Inf(1)
		if n := len(t.Rows); n > 0 {
			c.end = rowTime(&t.Rows[n-1])
		}
		// The rows after a target's last poll are not yet a hole or not
		// (the next poll tells): its cut stays before them.
		switch {
		case t.Polls.Len() > 0:
			c.open = t.Polls.T(t.Polls.Len() - 1)
		case len(t.Rows) > 0:
			c.open = rowTime(&t.Rows[0])
		}
		views = append(views, newViewFrom(&sub, gates, c))
	}
	slices.SortFunc(views, func(a, b *view) int { return strings.Compare(a.t.Name, b.t.Name) })
	for _, v := range views {
		v.findEdges(run.Spans, v.decodeSpan())
	}
	found := incidents(views, gates, run.Spans)
	out := slices.Clone(f.frozen)
	for _, v := range views {
		out = append(out, f.carry[v.t.Name].frozen...)
	}
	for _, in := range found {
		if c := f.carry[string(in.Target)]; in.Target == "" && key(&in) >= f.host || c != nil && key(&in) >= c.cut {
			out = append(out, in)
		}
	}
	slices.SortStableFunc(out, incidentOrder)
	cuts := math.Inf(1)
	for _, v := range views {
		c := f.carry[v.t.Name]
		limit := min(c.end-margin, c.open)
		c.advance(v.t.Name, out, v.edges, min(limit, earliest+margin/2), limit, c.cut <= earliest, iv)
		cuts = min(cuts, c.cut)
	}
	if len(views) > 0 && cuts > f.host {
		f.host, f.frozen = cuts, f.frozen[:0]
		for _, in := range out {
			if in.Target == "" && key(&in) < cuts {
				f.frozen = append(f.frozen, in)
			}
		}
	}
	// The fleet's latest tick reads each engine's latest row: the others
	// make only the ticks before it.
	lasts := make([]*view, len(views))
	for i, v := range views {
		w := *v
		if n := len(v.t.Rows); n > 0 {
			t := *v.t
			t.Rows = v.t.Rows[n-1:]
			w.t, w.rowPoll = &t, v.rowPoll[n-1:]
		}
		lasts[i] = &w
	}
	return out, lastPoint(fleet(lasts, true).Polls)
}

// advance moves the target's cut up to cand, or back from it to where no
// incident of the target or of several targets, nor edge of the target,
// straddles it, and freezes the target's incidents before it. A target
// that holds the earliest cut moves past what straddles cand instead, up
// to limit: the others wait on it. out are the update's incidents, in
// Analyze's order; an edge covers the polls that judge it, after (iv is
// the run's longest interval).
func (c *carry) advance(name string, out []Incident, edges []Edge, cand, limit float64, earliest bool, iv float64) {
	// straddled is the span of the first thing found straddling x.
	straddled := func(x float64) (a, b float64, ok bool) {
		for i := range out {
			in := &out[i]
			if in.Target != "" && string(in.Target) != name {
				continue
			}
			if k := key(in); k < x && extent(in) >= x {
				return k, extent(in), true
			}
		}
		for i := range edges {
			e := &edges[i]
			if a := min(e.T, cmp.Or(e.Between[0], e.T)); a < x && e.T+SteadyPolls*iv >= x {
				return a, e.T + SteadyPolls*iv, true
			}
		}
		return 0, 0, false
	}
	back := cand
	for a, _, ok := straddled(back); ok; a, _, ok = straddled(back) {
		back = a
	}
	if back <= c.cut && earliest {
		fwd := cand
		for _, b, ok := straddled(fwd); ok; _, b, ok = straddled(fwd) {
			fwd = b + 1e-6
		}
		if fwd <= limit {
			back = fwd
		}
	}
	// The cut only moves on.
	if back <= c.cut {
		return
	}
	c.frozen = c.frozen[:0]
	for i := range out {
		if string(out[i].Target) == name && key(&out[i]) < back {
			c.frozen = append(c.frozen, out[i])
		}
	}
	c.cut = back
}

// key is the instant incidents are ordered by.
func key(in *Incident) float64 { return cmp.Or(in.Start.V, in.T.V) }

// extent is the latest instant an incident covers.
func extent(in *Incident) float64 {
	x := math.Inf(-1)
	for _, n := range []rate.Num{in.T, in.Start, in.End} {
		if n.Valid {
			x = max(x, n.V)
		}
	}
	return x
}

func lastPoint(ps []FleetPoint) *FleetPoint {
	if len(ps) == 0 {
		return nil
	}
	p := ps[len(ps)-1]
	return &p
}
