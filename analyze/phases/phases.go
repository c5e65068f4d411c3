// Package phases cuts a run into phases and measures each from the engines'
// own counters.
//
// Found phases (idle, ramp, steady) come from the load edges the findings
// found on each target: a ramp runs from an edge to the first poll whose
// whole interval is at the new level, and the settle polls of a start are
// left to the ramp, never to the steady phase. Named phases come from a
// file (--phases) or from marks made while recording (llmrec mark, the
// recorder's mark endpoint); they win over found ones: they are listed
// first and apply to every target, and found phases stay listed beside them.
//
// A phase's figures are Δcounter/Δt between its first and last good polls
// (a good poll's stamp is sure to within a quarter of the cadence), summed
// per process across restarts inside it, and histogram quantiles from the
// bucket deltas across it. Beside each is the distribution of the values
// published per poll inside the phase; where their median differs from the
// figure by more than 10 % the figure says so, and which side the refused
// windows lay on.
package phases

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/llmrec/llmrec/analyze/findings"
)

// Phase kinds.
const (
	KindIdle   = "idle"   // the engine did nothing: its counters did not move
	KindRamp   = "ramp"   // from a load edge until the counters run at the new level
	KindSteady = "steady" // busy at one level: the phases a headline reports
	KindNamed  = "named"  // given by a file or marks; what it is, its name says
)

// Phase sources.
const (
	SourceFound = "found" // from the load edges
	SourceFile  = "file"  // --phases FILE
	SourceMark  = "mark"  // marks.jsonl in the run folder
)

// Phase is a stretch of a run.
type Phase struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Source string `json:"source"`
	// Target is the target a found phase was found on; "" for a named
	// phase, which applies to every target.
	Target string `json:"target,omitempty"`
	// Start and End bound the phase, Unix seconds.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Why says how the bounds were found or where they were given.
	Why string `json:"why"`
}

// Duration is End − Start.
func (p *Phase) Duration() float64 { return p.End - p.Start }

// Found cuts target t into idle, ramp and steady phases at its load edges
// (the findings' edges, any targets', in any order): from its first poll to
// its last.
func Found(t *findings.Target, edges []findings.Edge) []Phase {
	ps := &t.Polls
	if ps.Len() < 2 {
		return nil
	}
	var es []findings.Edge
	for _, e := range edges {
		if e.Target == t.Name {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b findings.Edge) int { return cmp.Compare(a.T, b.T) })
	first, last := ps.T(0), ps.T(ps.Len()-1)
	var out []Phase
	n := map[string]int{}
	add := func(kind string, a, b float64, why string) {
		// A phase of no length measures nothing.
		if b <= a {
			return
		}
		n[kind]++
		out = append(out, Phase{Name: fmt.Sprintf("%s %d", kind, n[kind]), Kind: kind, Source: SourceFound, Target: t.Name,
			Start: a, End: b, Why: why})
	}
	// Before the first edge the state is the one that edge leaves.
	at, why := first, "from the first poll"
	kind := initial(t, es)
	for k, e := range es {
		next := last
		if k+1 < len(es) {
			next = es[k+1].T
		}
		// A level change's interval holds both levels: the phase before
		// ends at its last poll wholly at the old level (the placed moment
		// inside the interval would include that poll or not by a hair).
		cut := e.T
		if e.Kind == findings.EdgeLevel {
			cut = e.Between[0]
		}
		end := min(max(cut, at), last)
		add(kind, at, end, why+" to the "+e.Kind+" edge at "+stamp(cut))
		steady := min(rampEnd(t, &e, next), next, last)
		add(KindRamp, end, steady, fmt.Sprintf("from the %s edge at %s to poll %s, the first whose interval is all at the new level", e.Kind, stamp(e.T), stamp(steady)))
		at, why = max(steady, end), "from poll "+stamp(max(steady, end))
		kind = KindSteady
		if e.Kind == findings.EdgeEnd {
			kind = KindIdle
		}
	}
	add(kind, at, last, why+" to the last poll")
	return out
}

// initial is the state of t before its first edge: the opposite of that
// edge's, else what most of its intervals did.
func initial(t *findings.Target, es []findings.Edge) string {
	if len(es) > 0 {
		if es[0].Kind == findings.EdgeStart {
			return KindIdle
		}
		return KindSteady
	}
	busy, idle := 0, 0
	for i := 1; i < t.Polls.Len(); i++ {
		p, q, iv := t.Polls.Steps(i-1), t.Polls.Steps(i), t.Polls.IntervalV(i)
		switch {
		case q.Valid && p.Valid && q.V > p.V:
			busy++
		case iv.Valid && iv.V > 0:
			busy++
		case iv.Valid:
			idle++
		}
	}
	if busy > idle {
		return KindSteady
	}
	return KindIdle
}

// rampEnd is the end of the ramp after edge e: its first poll (whose
// interval holds the edge), or for a start read on a decode counter that
// moves every step, the last poll before the first interval within
// findings.SettleLn of the new level (at most findings.SteadyPolls on).
func rampEnd(t *findings.Target, e *findings.Edge, next float64) float64 {
	ps := &t.Polls
	p1 := ps.Search(e.Poll1)
	// No poll after the edge: the ramp runs to the end.
	if p1 >= ps.Len() {
		return math.Inf(1)
	}
	k := p1
	if e.Kind != findings.EdgeEnd && e.Signal == "decode counter" && e.Level.Valid && e.Level.V > 0 {
		for k+1 < ps.Len() && k+1 < p1+findings.SteadyPolls && ps.T(k+1) < next {
			x := ps.IntervalV(k + 1)
			if x.Valid && x.V > 0 && math.Abs(math.Log(x.V/e.Level.V)) <= findings.SettleLn {
				break
			}
			k++
		}
	}
	return ps.T(k)
}

// stamp formats a Unix time in seconds as RFC 3339 UTC to the millisecond.
func stamp(t float64) string {
	sec, frac := math.Modf(t)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC().Format("2006-01-02T15:04:05.000Z")
}

// num formats a number with up to 5 significant digits.
func num(x float64) string { return strconv.FormatFloat(x, 'g', 5, 64) }
