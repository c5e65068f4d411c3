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
// The incidents before its cut are final: each was found when the polls
// after it were already read for FollowPolls intervals, and no incident
// or edge straddled the cut. An update analyses only each
// target's polls from FollowPolls intervals before the cut (the context
// the rules read back into) to the end, with what it carries of the polls
// before (the busy signal a target publishes, its tokens counted so far),
// keeps the incidents it finds from the cut on, and moves the cut up to
// FollowPolls intervals behind the latest row, but never past a target's
// last poll (the rows after it are not yet a hole or not) nor into an
// incident or edge (with the polls that judge it) that straddles it. An
// incident that stays open, or a target that answers no more (down to
// the end), holds the cut, and the updates grow until it closes.
//
// The run must grow only at its end: a target's rows and polls are
// appended, never inserted. A run with a target whose interval is not
// known (Target.Interval 0: its cadence is the median over all its rows)
// is analysed whole at every update.
type Follow struct {
	cut    float64    // Unix s; 0 before the first cut
	frozen []Incident // the incidents keyed before cut, final
	carry  map[string]*carry
}

// carry is what a Follow keeps of one target's polls before its tail.
type carry struct {
	p0             int // the tail's first poll
	tok            tokenState
	flags          int // polls the flags were read over
	steps, running bool
	polls          []Poll // the tail's polls, rows rebased
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
	from := f.cut - margin
	views := make([]*view, 0, len(run.Targets))
	end, open := 0.0, math.Inf(1)
	for _, t := range run.Targets {
		c := f.carry[t.Name]
		if c == nil {
			c = &carry{}
			f.carry[t.Name] = c
		}
		for ; c.flags < len(t.Polls); c.flags++ {
			c.steps = c.steps || t.Polls[c.flags].Steps.Valid
			c.running = c.running || t.Polls[c.flags].Running.Valid
		}
		// The tail keeps at least the last poll: rows after it are read
		// against it, as in the whole run.
		for f.cut > 0 && c.p0 < len(t.Polls)-1 && t.Polls[c.p0].T < from {
			c.p0++
		}
		for c.tok.n < c.p0 {
			c.tok.add(&t.Polls[c.tok.n])
		}
		sub := *t
		if c.p0 > 0 {
			r0 := t.Polls[c.p0].Row
			sub.Rows = t.Rows[r0:]
			c.polls = append(c.polls[:0], t.Polls[c.p0:]...)
			for i := range c.polls {
				c.polls[i].Row -= r0
			}
			sub.Polls = c.polls
		}
		if n := len(t.Rows); n > 0 {
			end = max(end, rowTime(&t.Rows[n-1]))
		}
		// The rows after a target's last poll are not yet a hole or not
		// (the next poll tells): the cut stays before them.
		switch {
		case len(t.Polls) > 0:
			open = min(open, t.Polls[len(t.Polls)-1].T)
		case len(t.Rows) > 0:
			open = min(open, rowTime(&t.Rows[0]))
		}
		views = append(views, newViewFrom(&sub, gates, c))
	}
	slices.SortFunc(views, func(a, b *view) int { return strings.Compare(a.t.Name, b.t.Name) })
	var edges []Edge
	for _, v := range views {
		v.findEdges(run.Spans, v.decodeSpan())
		edges = append(edges, v.edges...)
	}
	found := incidents(views, gates, run.Spans)
	out := slices.Clip(f.frozen)
	for _, in := range found {
		if key(&in) >= f.cut {
			out = append(out, in)
		}
	}
	f.advance(out, edges, min(end-margin, open), iv)
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

// advance moves the cut up to cand, or back from it to where no incident
// or edge straddles it, and freezes the incidents before it. out are the
// update's incidents, in Analyze's order; an edge covers the polls that
// judge it, after (iv is the run's longest interval).
func (f *Follow) advance(out []Incident, edges []Edge, cand, iv float64) {
	for moved := true; moved; {
		moved = false
		for i := range out {
			in := &out[i]
			if k := key(in); k < cand && extent(in) >= cand {
				cand, moved = k, true
			}
		}
		for i := range edges {
			e := &edges[i]
			if a := min(e.T, cmp.Or(e.Between[0], e.T)); a < cand && e.T+SteadyPolls*iv >= cand {
				cand, moved = a, true
			}
		}
	}
	// The cut only moves on.
	if cand <= f.cut {
		return
	}
	n := 0
	for n < len(out) && key(&out[n]) < cand {
		n++
	}
	f.frozen, f.cut = slices.Clone(out[:n]), cand
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
