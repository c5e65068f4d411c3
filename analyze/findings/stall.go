package findings

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Engine stall rules.
const (
	// FrozenFraction: an interval whose progress counter moved less than
	// this fraction of the engine's busy pace is frozen.
	FrozenFraction = 0.01
	// StallSeconds is the shortest engine stall: the counter frozen this
	// long (placed inside the intervals at its ends by the busy pace).
	StallSeconds = 2.0
)

// stall is a stretch of polls a..b whose progress counter did not move
// while requests ran.
type stall struct {
	a, b       int     // the polls reading the frozen counter
	start, end float64 // the freeze, placed by the busy pace
	pace       float64 // the busy pace before it, per second
	throughGap bool    // its start was placed across a hole
}

// progress is the counter an engine moves on every step, at poll i: the
// step counter, or the decode counter of an engine that counts on every
// step; null when the target has neither.
func (v *view) progress(i int) rate.Num {
	switch {
	case v.signal == signalSteps:
		return v.t.Polls.Steps(i)
	case v.stepDecode:
		return v.t.Polls.Total(i, Decode)
	}
	return rate.Num{}
}

// progressName names the progress counter.
func (v *view) progressName() string {
	if v.signal == signalSteps {
		return "engine-step counter"
	}
	return "decode counter"
}

// interval is poll i's interval of the progress counter: its rise and
// length; ok is false across a restart, a hole or a missing reading.
func (v *view) progressInterval(i int) (d, dt float64, ok bool) {
	if v.ivs != nil {
		x := &v.ivs[i]
		return x.d, x.dt, x.ok
	}
	return v.readInterval(i)
}

// progIv is a poll's progressInterval, and whether requests ran at it.
type progIv struct {
	d, dt       float64
	ok, running bool
}

// readInterval is progressInterval read from the polls.
func (v *view) readInterval(i int) (d, dt float64, ok bool) {
	ps := &v.t.Polls
	if i < 1 || ps.Restarted(i) {
		return 0, 0, false
	}
	a, b := v.progress(i-1), v.progress(i)
	dt = ps.T(i) - ps.T(i-1)
	if !a.Valid || !b.Valid || b.V < a.V || dt <= 0 {
		return 0, 0, false
	}
	return b.V - a.V, dt, true
}

// stalls finds the stretches where the progress counter was frozen for at
// least StallSeconds while requests ran and scrapes answered: the engine
// stalled, not the recorder (host_stall) and not the scrape (gap).
func (v *view) stalls() []stall {
	ps := &v.t.Polls
	// Without a counter that moves on every step, a flat counter is normal.
	if ps.Len() < 3 || !v.progress(0).Valid && !v.progress(ps.Len()-1).Valid {
		return nil
	}
	var out []stall
	// Each poll's interval is read once: a poll's pace looks back over a
	// few. They are dropped after.
	v.ivs = make([]progIv, ps.Len())
	defer func() { v.ivs = nil }()
	for i := range v.ivs {
		x := &v.ivs[i]
		x.d, x.dt, x.ok = v.readInterval(i)
		r := ps.Running(i)
		x.running = r.Valid && r.V > 0
	}
	running := func(i int) bool { return v.ivs[i].running }
	for i := 1; i < ps.Len(); i++ {
		// No requests running, or no interval to freeze: no stall, and no
		// pace to look back for (a dozen intervals a poll).
		if !running(i-1) || !running(i) {
			continue
		}
		if _, dt, ok := v.progressInterval(i); !ok || dt > HoleFactor*v.interval {
			continue
		}
		pace := v.paceAround(i, -1)
		if !v.frozen(i, pace) {
			continue
		}
		j := i
		for j+1 < ps.Len() && v.frozen(j+1, pace) && running(j+1) {
			j++
		}
		s := stall{a: i - 1, b: j, pace: pace, start: ps.T(i - 1), end: ps.T(j)}
		// The interval before the first frozen one moved for its rise at
		// the busy pace: the freeze began after that.
		if d, dt, ok := v.progressInterval(i - 1); ok {
			s.start = ps.T(i-1) - dt + min(dt, d/pace)
			s.throughGap = dt > HoleFactor*v.interval
		}
		// The last frozen interval's rise is the engine resuming at its
		// new pace just before that poll.
		if d, _, ok := v.progressInterval(j); ok && d > 0 {
			if after := v.paceAround(j, 1); after > 0 {
				s.end = ps.T(j) - min(ps.T(j)-ps.T(j-1), d/after)
			}
		}
		if s.end-s.start >= StallSeconds {
			out = append(out, s)
		}
		i = j
	}
	return out
}

// frozen reports whether poll i's interval of the progress counter moved
// less than FrozenFraction of pace, on adjacent polls.
func (v *view) frozen(i int, pace float64) bool {
	d, dt, ok := v.progressInterval(i)
	return ok && pace > 0 && dt <= HoleFactor*v.interval && d <= FrozenFraction*pace*dt
}

// paceAround is the slowest pace of the progress counter over the up to
// SteadyPolls-1 moving, adjacent intervals before poll i (dir -1) or
// after it (dir 1); 0 when there are fewer than two.
func (v *view) paceAround(i, dir int) float64 {
	// At most SteadyPolls-1 intervals: on the stack, not a slice a poll.
	var buf [SteadyPolls]float64
	xs := buf[:0]
	for k := i + dir; k >= 1 && k < v.t.Polls.Len() && len(xs) < SteadyPolls-1; k += dir {
		d, dt, ok := v.progressInterval(k)
		if !ok || dt > HoleFactor*v.interval || d <= 0 {
			if len(xs) > 0 {
				break
			}
			continue
		}
		xs = append(xs, d/dt)
	}
	// One interval is no pace: it may be a catch-up or a jump.
	if len(xs) < 2 {
		return 0
	}
	// The slowest: a freeze is frozen against every interval of the pace,
	// and a jump among them does not make a slow engine look stalled.
	return slices.Min(xs)
}

// engineStalls are the target's engine stalls as incidents, with what
// the published decode cell (and the longest counterfactual span) printed
// over them; spans are the run's counterfactual spans.
func (v *view) engineStalls(spans []float64) []Incident {
	var out []Incident
	for _, s := range v.stalled {
		ps := &v.t.Polls
		inc := Incident{Kind: KindEngineStall, Target: Name(v.t.Name), Targets: []string{v.t.Name},
			Start: rate.Some(s.start), End: rate.Some(s.end), Cells: []CellRef{}}
		var pub []string
		for k := s.a; k <= s.b && k < ps.Len(); k++ {
			if len(inc.Cells) < maxCells {
				inc.Cells = append(inc.Cells, v.ref(k, Decode))
			}
			pub = append(pub, valueText(ps.At(k).Rates[Decode]))
		}
		var b strings.Builder
		fmt.Fprintf(&b, "the engine produced nothing for %s; published decode over the %s span: %s",
			secs(s.end-s.start), secs(v.decodeSpan()), strings.Join(pub, " → "))
		if j, sp := longest(spans); j >= 0 && sp != v.decodeSpan() {
			var cf []string
			for k := s.a; k <= s.b && k < ps.Len(); k++ {
				x := rate.Num{}
				if j < len(ps.At(k).Spans) {
					x = ps.At(k).Spans[j]
				}
				cf = append(cf, numText(x))
			}
			fmt.Fprintf(&b, "; a %s span would have printed %s", secs(sp), strings.Join(cf, " → "))
		}
		inc.Counterfactual = b.String()
		run := "requests running"
		if r := ps.Running(s.a); r.Valid {
			run = fmt.Sprintf("%s requests running", num(r.V))
		}
		if w := ps.At(s.a).Waiting; w.Valid && w.V > 0 {
			run += fmt.Sprintf(" and %s waiting", num(w.V))
		}
		inc.Detail = fmt.Sprintf("%s: its %s did not move from %s to %s (%d polls answered, %s) with %s, after %s/s: the engine stalled, not the recorder or the scrape",
			v.t.Name, v.progressName(), stamp(s.start), stamp(s.end), s.b-s.a+1, secs(ps.T(s.b)-ps.T(s.a)), run, num(math.Round(s.pace)))
		if s.throughGap {
			inc.Detail += "; its start was placed inside the hole before its first answered poll, at the busy pace"
		}
		out = append(out, inc)
	}
	return out
}

// longest is the index and value of the longest span; -1 for none.
func longest(spans []float64) (int, float64) {
	j, sp := -1, 0.0
	for i, s := range spans {
		if s > sp {
			j, sp = i, s
		}
	}
	return j, sp
}

// valueText is a published value in a few characters: "1724", "null (jump)".
func valueText(c Value) string {
	if !c.V.Valid {
		return "null (" + c.Reason + ")"
	}
	return rateText(c.V.V)
}
