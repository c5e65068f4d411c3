package findings

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Settling and steadiness rules.
const (
	// SettleLn is how close a published rate must come to the new level,
	// as |ln(value/level)|, to have settled.
	SettleLn = 0.1
	// SteadyPolls is how many polls the new regime must hold for the edge
	// to be judged: poll 1 carries the edge, polls 2..SteadyPolls read
	// the new level.
	SteadyPolls = 5
)

// findEdges finds the load edges on the per-interval decode series and
// judges them under the published span and each counterfactual one.
func (v *view) findEdges(spans []float64, published float64) {
	ps := &v.t.Polls
	last := -1 // the last poll with a known state
	for i := 1; i < ps.Len(); i++ {
		s := v.state[i]
		if s == unknown {
			continue
		}
		if last < 0 || v.state[last] == s {
			last = i
			continue
		}
		adjacent := last == i-1
		var e Edge
		if s == grow {
			e = v.startEdge(i)
		} else {
			e = v.endEdge(i, last)
		}
		if !adjacent {
			e.Judged, e.Why = false, fmt.Sprintf("the edge fell in %s without a usable interval (a hole or a reset)",
				secs(ps.T(i)-ps.T(last)))
			e.Between = [2]float64{ps.T(last), ps.T(i)}
			e.T = min(max(e.T, e.Between[0]), e.Between[1])
		}
		v.edges = append(v.edges, e)
		last = i
	}
	v.edges = append(v.edges, v.levelEdges()...)
	slices.SortStableFunc(v.edges, func(a, b Edge) int { return cmp.Compare(a.T, b.T) })
	for k := range v.edges {
		e := &v.edges[k]
		next := math.Inf(1)
		if k+1 < len(v.edges) {
			next = v.edges[k+1].T
		}
		p1 := v.pollAfter(e.T)
		e.EdgeSpan = v.settle(e, p1, next, published, func(i int) rate.Num { return ps.Rate(i, Decode) })
		e.Counterfactual = make([]EdgeSpan, len(spans))
		for j, sp := range spans {
			e.Counterfactual[j] = v.settle(e, p1, next, sp, func(i int) rate.Num { return ps.Span(i, j) })
		}
		// A load start or a level change is what the jump gate holds: its
		// holds are the edge's, from the poll before its first (a prompt
		// counter moves at prefill, before the decode rate rises) and, for
		// a level edge, the stray polls it allows before that.
		from := p1 - 1
		if e.Kind == EdgeLevel {
			from -= levelStray
		}
		for j := max(from, 0); e.Kind != EdgeEnd && p1 >= 0 && j < min(p1+SteadyPolls, ps.Len()) && ps.T(j) < next; j++ {
			for _, r := range ps.Reasons(j) {
				if r == rate.ReasonJump {
					e.Held++
					v.held[j] = true
					break
				}
			}
		}
	}
}

// pollAfter is the index of the first poll later than t; -1 for none.
func (v *view) pollAfter(t float64) int {
	ps := &v.t.Polls
	i := sort.Search(ps.Len(), func(i int) bool { return ps.T(i) > t })
	if i == ps.Len() {
		return -1
	}
	return i
}

// levelOf is the level of polls from..to (inclusive) that are of state s
// (see level), the median pace of the signal over them, how many of them
// hold the level (all of state s, adjacent and, for growth, within SettleLn
// of it) and how many hold the state.
func (v *view) levelOf(from, to int, s state) (level, pace rate.Num, steady, held int) {
	var idx []int
	for i := from; i <= to && i < v.t.Polls.Len(); i++ {
		if v.state[i] != s {
			break
		}
		idx = append(idx, i)
	}
	level, pace = v.level(idx)
	for _, i := range idx {
		x := v.t.Polls.IntervalV(i).V
		if s == flat || (level.V > 0 && math.Abs(math.Log(x/level.V)) <= SettleLn) {
			steady++
			continue
		}
		break
	}
	return level, pace, steady, len(idx)
}

// paceBefore is the level and the median pace of the signal over the up to
// SteadyPolls-1 growing polls right before poll j.
func (v *view) paceBefore(j int) (level, pace rate.Num) {
	var idx []int
	for k := j - 1; k >= 1 && k >= j-SteadyPolls+1 && v.state[k] == grow; k-- {
		idx = append(idx, k)
	}
	return v.level(idx)
}

// level is the decode level of polls idx, and the median pace of the
// signal over them. A counter that moves every step has the median of its
// per-interval rates; one that moves at request completion reads 0 in most
// intervals while busy, so its level is the mean: Δtokens over Δt.
func (v *view) level(idx []int) (level, pace rate.Num) {
	ps := &v.t.Polls
	var xs, ys []float64
	tokens, dt := 0.0, 0.0
	for _, i := range idx {
		d := ps.T(i) - ps.T(i-1)
		xs, ys = append(xs, ps.IntervalV(i).V), append(ys, v.pace[i])
		tokens, dt = tokens+ps.IntervalV(i).V*d, dt+d
	}
	pace = median(ys)
	if v.signal == signalDecode || dt == 0 {
		return median(xs), pace
	}
	return rate.Some(tokens / dt), pace
}

// levelSource says how level measured the polls it names.
func (v *view) levelSource(polls string) string {
	if v.signal == signalDecode {
		return "median of the per-interval decode rates of " + polls
	}
	return "Δdecode/Δt over " + polls + " (the decode counter moves " + atCompletion + ")"
}

// startEdge is the start found where poll i's interval grew after a flat
// one. Its partial tokens over the new level place it in the interval.
func (v *view) startEdge(i int) Edge {
	ps := &v.t.Polls
	a, b := ps.T(i-1), ps.T(i)
	level, pace, steady, held := v.levelOf(i+1, i+SteadyPolls-1, grow)
	e := Edge{Target: v.t.Name, Kind: EdgeStart, Between: [2]float64{a, b}, From: rate.Some(0), Level: level,
		LevelSource: v.levelSource(fmt.Sprintf("polls 2-%d", SteadyPolls)),
		Signal:      signalNames[v.signal]}
	// The interval's partial pace over the new one places the start.
	e.T = a
	if pace.Valid && pace.V > 0 {
		e.T = max(a, b-v.pace[i]*(b-a)/pace.V)
	}
	e.Poll1 = b
	e.Judged = steady >= SteadyPolls-1
	if !e.Judged {
		e.Why = v.unsteady(i, steady, held)
	}
	return e
}

// endEdge is the end found where poll i's interval was flat after growth
// ending at poll j: the last growing interval's tokens over the old level
// place it.
func (v *view) endEdge(i, j int) Edge {
	ps := &v.t.Polls
	a, b := ps.T(j-1), ps.T(j)
	old, pace := v.paceBefore(j)
	if !old.Valid {
		old, pace = ps.IntervalV(j), rate.Some(v.pace[j])
	}
	// The last growing interval's pace over the old one places the end.
	frac := 1.0
	if pace.V > 0 {
		frac = min(1, v.pace[j]/pace.V)
	}
	e := Edge{Target: v.t.Name, Kind: EdgeEnd, Between: [2]float64{a, b}, From: old, Level: rate.Some(0),
		LevelSource: "an end's level is 0; the old level is the " + v.levelSource(fmt.Sprintf("up to %d growing polls before it", SteadyPolls-1)),
		Signal:      signalNames[v.signal]}
	e.T = a + frac*(b-a)
	p1 := j
	if frac >= 1 {
		p1 = i
	}
	e.Poll1 = ps.T(p1)
	_, _, steady, held := v.levelOf(p1+1, p1+SteadyPolls-1, flat)
	e.Judged = steady >= SteadyPolls-1
	if !e.Judged {
		e.Why = v.unsteady(p1, steady, held)
	}
	return e
}

// unsteady says why the regime after poll p1 did not hold: steady polls
// after it held the level, held the busy state.
func (v *view) unsteady(p1, steady, held int) string {
	n := steady + 1
	switch {
	case held >= SteadyPolls-1 && v.signal != signalDecode:
		// Busy throughout, but the decode counter moves when requests complete.
		return fmt.Sprintf("busy for %d polls, but the per-interval decode rate held a level for %d: this engine's decode counter moves %s",
			SteadyPolls, n, atCompletion)
	case held >= SteadyPolls-1:
		return fmt.Sprintf("the per-interval decode rate held a level (|ln| ≤ %g) for %d poll(s); %d are needed", SettleLn, n, SteadyPolls)
	case p1+held+1 >= v.t.Polls.Len():
		return fmt.Sprintf("the recording ends %d poll(s) after the edge; %d are needed", held+1, SteadyPolls)
	}
	return fmt.Sprintf("the new regime held %d poll(s); %d are needed", held+1, SteadyPolls)
}

// settle measures how the values of one span caught up with edge e, from
// poll index p1 until the next edge.
func (v *view) settle(e *Edge, p1 int, next, span float64, value func(i int) rate.Num) EdgeSpan {
	out := EdgeSpan{Span: span, Values: []rate.Num{}}
	ps := &v.t.Polls
	// No poll after the edge: nothing caught up.
	if p1 < 0 {
		return out
	}
	for k := 0; p1+k < ps.Len() && ps.T(p1+k) < next; k++ {
		x := value(p1 + k)
		if k < SteadyPolls {
			out.Values = append(out.Values, x)
		}
		if k == 1 {
			out.LnErrPoll2, out.ResidualPoll2 = poll2(e, x)
		}
		if out.SettlePoll == nil && e.Judged && settled(e, x) {
			n := k + 1
			out.SettlePoll = &n
			out.SettleAfter = rate.Some(ps.T(p1+k) - e.T)
		}
		if out.SettlePoll != nil && k >= SteadyPolls {
			break
		}
	}
	return out
}

// settled reports whether x is at e's new level: within SettleLn for a
// start, exactly 0 for an end.
func settled(e *Edge, x rate.Num) bool {
	if !x.Valid {
		return false
	}
	if e.Kind == EdgeEnd {
		return x.V == 0
	}
	return e.Level.Valid && e.Level.V > 0 && x.V > 0 && math.Abs(math.Log(x.V/e.Level.V)) <= SettleLn
}

// poll2 is the error at poll 2: |ln(x/level)| for a start, x as a
// fraction of the old level for an end.
func poll2(e *Edge, x rate.Num) (lnErr, residual rate.Num) {
	// No value at poll 2: no error to state.
	if !x.Valid {
		return rate.Num{}, rate.Num{}
	}
	if e.Kind == EdgeEnd {
		if e.From.Valid && e.From.V > 0 {
			return rate.Num{}, rate.Some(x.V / e.From.V)
		}
		return rate.Num{}, rate.Num{}
	}
	// A zero value has no logarithm.
	if !e.Level.Valid || e.Level.V <= 0 || x.V <= 0 {
		return rate.Num{}, rate.Num{}
	}
	return rate.Some(math.Abs(math.Log(x.V / e.Level.V))), rate.Num{}
}

// settle summarises the edges per span, the published one first: its
// span is the one its edges were published under (a target's decode span),
// 0 when they differ (spans by counter kind: the edges say each), and the
// configured span when there is no edge.
func settle(edges []Edge, published float64, spans []float64) []Settle {
	for i := range edges {
		if sp := edges[i].EdgeSpan.Span; i == 0 {
			published = sp
		} else if sp != published {
			published = 0
			break
		}
	}
	out := []Settle{summarise(edges, published, true, func(e *Edge) *EdgeSpan { return &e.EdgeSpan })}
	for j, sp := range spans {
		out = append(out, summarise(edges, sp, false, func(e *Edge) *EdgeSpan { return &e.Counterfactual[j] }))
	}
	return out
}

func summarise(edges []Edge, span float64, published bool, of func(*Edge) *EdgeSpan) Settle {
	s := Settle{Span: span, Published: published, Edges: len(edges)}
	var polls, lns []float64
	for i := range edges {
		e := &edges[i]
		if !e.Judged {
			continue
		}
		s.Judged++
		es := of(e)
		if es.SettlePoll == nil {
			s.Unsettled++
		} else {
			s.Settled++
			polls = append(polls, float64(*es.SettlePoll))
			if *es.SettlePoll <= 2 {
				s.ByPoll2++
			}
		}
		if e.Kind == EdgeStart {
			s.Starts++
			if es.LnErrPoll2.Valid {
				lns = append(lns, es.LnErrPoll2.V)
			}
		}
	}
	s.MedianSettlePoll = median(polls)
	if len(polls) > 0 {
		s.MaxSettlePoll = rate.Some(slices.Max(polls))
	}
	s.MedianLnErrPoll2 = median(lns)
	s.Text = settleText(&s)
	return s
}

// settleText is the summary sentence of one span.
func settleText(s *Settle) string {
	var b strings.Builder
	if s.Span > 0 {
		fmt.Fprintf(&b, "%s window", secs(s.Span))
	} else {
		b.WriteString("span by counter kind")
	}
	if s.Published {
		b.WriteString(" (published)")
	}
	if s.Judged == 0 {
		fmt.Fprintf(&b, ": no judged edge (%d found)", s.Edges)
		return b.String()
	}
	fmt.Fprintf(&b, ": settled by poll 2 on %d of %d judged edges", s.ByPoll2, s.Judged)
	if s.MedianSettlePoll.Valid {
		fmt.Fprintf(&b, "; median settle poll %s (max %s)", num(s.MedianSettlePoll.V), num(s.MaxSettlePoll.V))
	}
	fmt.Fprintf(&b, "; %d unsettled", s.Unsettled)
	if s.MedianLnErrPoll2.Valid {
		fmt.Fprintf(&b, "; median |ln| at poll 2 %.3f over %d start edges", s.MedianLnErrPoll2.V, s.Starts)
	}
	return b.String()
}

// secs formats seconds briefly: "2 s", "0.22 s", "15.0 s" → "15 s".
func secs(s float64) string {
	return strconv.FormatFloat(s, 'g', 3, 64) + " s"
}

// num formats a number with up to 5 significant digits.
func num(x float64) string { return strconv.FormatFloat(x, 'g', 5, 64) }

// LevelLn is how far apart, as |ln(after/before)|, the decode levels on
// either side of a poll must be for it to be a level edge: a change of
// the load while busy (2 clients to 8), which cuts a steady phase as an
// idle spell does.
const LevelLn = 0.4

// levelEdges finds the changes of level inside busy stretches, on a
// decode counter that moves every step: a poll whose levelPolls polls
// before and after (the poll itself, whose interval holds the change,
// left out) read on their own side of the midpoint between the two
// medians, but for levelStray a side, the medians more than LevelLn
// apart. Of neighbouring
// candidates the one with the largest change is the edge (a later one by
// more than levelMargin). (A decode
// counter that moves at completion reads 0 in most intervals: its level
// changes are not found.)
func (v *view) levelEdges() []Edge {
	if v.signal != signalDecode || !v.stepDecode {
		return nil
	}
	ps := &v.t.Polls
	const k = levelPolls
	var out []Edge
	var at []int // the poll of each edge
	// Each poll's interval rate is read once: every candidate reads the
	// 2k around it. A poll is busy when it grew and has a rate.
	rates, busy := make([]float64, ps.Len()), make([]bool, ps.Len())
	for i := 1; i < ps.Len(); i++ {
		x := ps.IntervalV(i)
		rates[i], busy[i] = x.V, v.state[i] == grow && x.Valid
	}
	for i := 1 + k; i+k < ps.Len(); i++ {
		best, bestLn := -1, 0.0
		// Candidates run while each side stays busy and steady; keep the largest.
		for ; i+k < ps.Len(); i++ {
			ln, ok := levelChange(rates, busy, i, k)
			if !ok {
				break
			}
			// A later candidate wins only by a clear margin: a change read
			// at ms and at ns timestamps must land on the same poll.
			if best < 0 || ln > bestLn*(1+levelMargin) {
				best, bestLn = i, ln
			}
		}
		if best >= 0 {
			e := v.levelEdge(best, k)
			// A level reached in two rises (or falls) close together is one
			// change: the load driver's ramp.
			if n := len(out); n > 0 && (e.Level.V > e.From.V) == (out[n-1].Level.V > out[n-1].From.V) &&
				best-at[n-1] <= k+1 {
				out[n-1].Level, out[n-1].LevelSource = e.Level, e.LevelSource
			} else {
				out, at = append(out, e), append(at, best)
			}
			i = best + k
		}
	}
	return out
}

// levelChange is |ln(after/before)| at poll i over k polls each side of
// the polls' rates, where each is busy; ok when it is a level edge by the
// rule of levelEdges.
func levelChange(rates []float64, busy []bool, i, k int) (float64, bool) {
	// On the stack: this runs at every busy poll.
	var bs, as, tmp [levelPolls]float64
	before, after := bs[:0:k], as[:0:k]
	lo, hi := math.Inf(1), math.Inf(-1)
	for j := 1; j <= k; j++ {
		if !busy[i-j] || !busy[i+j] {
			return 0, false
		}
		x, y := rates[i-j], rates[i+j]
		before, after = append(before, x), append(after, y)
		lo, hi = min(lo, x, y), max(hi, x, y)
	}
	// Both medians lie within [lo, hi]: rates that close together cannot
	// be LevelLn apart (levelNear leaves room for rounding; a NaN makes
	// lo or hi NaN and fails the test, as does an infinity).
	if lo > 0 && hi < math.MaxFloat64/2 && hi <= lo*levelNear {
		return 0, false
	}
	b, a := medianIn(tmp[:0], before), medianIn(tmp[:0], after)
	if !b.Valid || !a.Valid || b.V <= 0 || a.V <= 0 {
		return 0, false
	}
	ln := math.Abs(math.Log(a.V / b.V))
	if ln <= LevelLn {
		return 0, false
	}
	mid := (a.V + b.V) / 2
	up := a.V > b.V
	wrongBefore, wrongAfter := 0, 0
	for j := range k {
		if (before[j] > mid) == up {
			wrongBefore++
		}
		if (after[j] > mid) != up {
			wrongAfter++
		}
	}
	if wrongBefore > levelStray || wrongAfter > levelStray {
		return 0, false
	}
	return ln, true
}

// levelNear is a ratio of two rates whose logarithm is well below
// LevelLn (ln 1.4 = 0.336 < 0.4): the medians of polls within it need not
// be found.
const levelNear = 1.4

// levelPolls is how many polls a level must hold on either side of a
// level edge: twice a start's, so that the spell of a load driver
// draining one level's last requests before it starts the next (a
// request's length) is no level of its own.
const levelPolls = 2 * (SteadyPolls - 1)

// levelMargin is how much larger a later candidate's change must be, as a
// share, to be the edge instead of an earlier one.
const levelMargin = 0.02

// levelStray is how many of the levelPolls either side may read on the
// other side of the midpoint: a poll or two of a drain or a hiccup.
const levelStray = 2

// levelEdge is the level edge at poll i: its interval's rate between the
// two levels places it.
func (v *view) levelEdge(i, k int) Edge {
	ps := &v.t.Polls
	var before, after []int
	for j := 1; j <= k; j++ {
		before, after = append(before, i-j), append(after, i+j)
	}
	from, _ := v.level(before)
	level, _ := v.level(after)
	a, b := ps.T(i-1), ps.T(i)
	// The share of the interval at the new level places the change.
	f := 0.5
	if x := ps.IntervalV(i); x.Valid && level.V != from.V {
		f = min(1, max(0, (x.V-from.V)/(level.V-from.V)))
	}
	return Edge{Target: v.t.Name, Kind: EdgeLevel, Between: [2]float64{a, b}, T: b - f*(b-a), Poll1: b,
		From: from, Level: level, Judged: true, Signal: signalNames[v.signal],
		LevelSource: v.levelSource(fmt.Sprintf("the %d polls either side", k))}
}
