package findings

import (
	"fmt"
	"math"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Presence rules (targets discovery adds and removes while recording):
//   - a target without presence intervals was a target throughout;
//   - an interval open at its end (Leave 0) lasts until the next one
//     begins (the next session), or for ever;
//   - a stretch without polls that holds a whole absence (a leave, then
//     the next join) is the target's absence, not a gap;
//   - every join after a session's start is a target_join incident, every
//     leave a target_leave.

// presentAt reports whether the target was in the target set at t.
func (v *view) presentAt(t float64) bool {
	ps := v.t.Presence
	if len(ps) == 0 {
		return true
	}
	for i, p := range ps {
		if t >= p.Join && t <= v.leaveOf(i) {
			return true
		}
	}
	return false
}

// leaveOf is when presence i ended: its leave, else the next join, else never.
func (v *view) leaveOf(i int) float64 {
	ps := v.t.Presence
	switch {
	case ps[i].Leave > 0:
		return ps[i].Leave
	case i+1 < len(ps):
		return ps[i+1].Join
	}
	return math.Inf(1)
}

// absentWithin reports whether a whole absence lies between a and b.
func (v *view) absentWithin(a, b float64) bool {
	ps := v.t.Presence
	for i := 0; i+1 < len(ps); i++ {
		if ps[i].Leave > 0 && a <= ps[i].Leave && ps[i+1].Join <= b {
			return true
		}
	}
	return false
}

// presentOver reports whether one presence covers a to b.
func (v *view) presentOver(a, b float64) bool {
	ps := v.t.Presence
	if len(ps) == 0 {
		return true
	}
	for i, p := range ps {
		if p.Join <= a && b <= v.leaveOf(i) {
			return true
		}
	}
	return false
}

// presence is the target's joins and leaves.
func (v *view) presence() []Incident {
	var out []Incident
	name := v.t.Name
	for i, p := range v.t.Presence {
		if !p.AtStart {
			where := ""
			if p.URL != "" {
				where = " at " + p.URL
			}
			back := ""
			if i > 0 {
				back = fmt.Sprintf(", back after %s away", secs(p.Join-v.t.Presence[i-1].Leave))
			}
			out = append(out, Incident{Kind: KindTargetJoin, Target: Name(name), Targets: []string{name},
				T: rate.Some(p.Join), Cells: []CellRef{}, Cause: "discovery",
				Detail: fmt.Sprintf("%s joined the recorder's target set%s (file_sd or DNS discovery)%s; scraped from its next tick", name, where, back)})
		}
		if p.Leave > 0 {
			out = append(out, Incident{Kind: KindTargetLeave, Target: Name(name), Targets: []string{name},
				T: rate.Some(p.Leave), Cells: []CellRef{}, Cause: "discovery",
				Detail: fmt.Sprintf("%s left the recorder's target set (file_sd or DNS discovery): no tick after, its scrape in flight kept; while away it is absent from the fleet's totals, no gap and no 0", name)})
		}
	}
	return out
}
