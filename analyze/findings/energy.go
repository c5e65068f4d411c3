package findings

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// window is a stretch of time [a, b].
type window struct{ a, b float64 }

// energy is joules per generated token over the busy windows; nil when no
// target published energy or power.
func energy(views []*view) *Energy {
	var sources []*view
	var eng []*view
	for _, v := range views {
		if v.publishes(func(ps *PollList, i int) bool { return ps.Energy(i).Valid || ps.Power(i).Valid }) {
			sources = append(sources, v)
		}
		if v.t.Engine != engine.Generic {
			eng = append(eng, v)
		}
	}
	// No energy source recorded: nothing to say.
	if len(sources) == 0 {
		return nil
	}
	e := &Energy{Sources: []string{}, Series: []string{}, Notes: []string{}, Derived: true}
	counter := false
	for _, s := range sources {
		e.Sources = append(e.Sources, s.t.Name)
		counter = counter || s.publishes(func(ps *PollList, i int) bool { return ps.Energy(i).Valid })
		for _, src := range EnergySources {
			if slices.Contains(s.t.Families, src.Series) {
				e.Series = append(e.Series, src.Series)
			}
		}
	}
	e.Method = "power"
	if counter {
		e.Method = "counter"
	}
	var busy []window
	tokens := 0.0
	for _, v := range eng {
		ws, n := v.busy()
		busy = append(busy, ws...)
		tokens += n
	}
	busy = union(busy)
	for _, w := range busy {
		e.Busy += w.b - w.a
	}
	e.Source = fmt.Sprintf("computed:Σ energy of %s over the busy windows / Σ generated tokens of %s over them",
		strings.Join(e.Series, ", "), strings.Join(names(eng), ", "))
	e.Notes = append(e.Notes,
		"busy windows: each engine's growing decode intervals, trimmed at its load edges, united over engines",
		"tokens: the per-interval decode increments (a label set without a baseline adds none); growth across a hole or a reset is not counted",
		"assumes the energy sources power exactly the engine targets recorded")
	if counter {
		e.Notes = append(e.Notes, "energy: the counter's rise, interpolated linearly between its polls at the window ends")
	} else {
		e.Notes = append(e.Notes, "energy: the power gauges integrated as trapezoids between their polls")
	}
	for _, v := range views {
		for _, f := range v.flopsFacts() {
			if f.Status == "unimplemented" {
				e.Notes = append(e.Notes, fmt.Sprintf("no FLOPs per joule: %s on %s is unimplemented (it stayed at 0)", f.Source, v.t.Name))
			}
		}
	}
	// No busy window: no energy of generating.
	if len(busy) == 0 {
		e.Reason = rate.ReasonEmpty
		e.Notes = append(e.Notes, "no engine target generated tokens in a usable interval")
		return e
	}
	joules, covered := 0.0, true
	for _, s := range sources {
		j, ok := s.energyOver(busy, counter)
		joules += j
		covered = covered && ok
	}
	if !covered {
		e.Notes = append(e.Notes, "some busy time lies outside an energy source's polls: only the covered part is counted")
	}
	e.Joules, e.Tokens = rate.Some(joules), rate.Some(tokens)
	// No tokens: no joules per token, not infinity.
	if tokens == 0 {
		e.Reason = rate.ReasonEmpty
		return e
	}
	e.JoulesPerToken = rate.Some(joules / tokens)
	return e
}

func names(vs []*view) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.t.Name
	}
	return out
}

// publishes reports whether any poll satisfies fn, which reads poll i of
// ps by its numbers alone (no poll decoded whole).
func (v *view) publishes(fn func(ps *PollList, i int) bool) bool {
	ps := &v.t.Polls
	for i := range ps.Len() {
		if fn(ps, i) {
			return true
		}
	}
	return false
}

// busy returns the target's growing intervals, trimmed at its load edges,
// and the tokens generated in them.
func (v *view) busy() ([]window, float64) {
	ps := &v.t.Polls
	var ws []window
	tokens := 0.0
	for i := 1; i < ps.Len(); i++ {
		if v.state[i] != grow {
			continue
		}
		w := window{ps.T(i - 1), ps.T(i)}
		for _, e := range v.edges {
			if e.Between[1] != w.b {
				continue
			}
			if e.Kind == EdgeStart {
				w.a = max(w.a, e.T)
			} else {
				w.b = min(w.b, e.T)
			}
		}
		tokens += ps.IntervalV(i).V * (ps.T(i) - ps.T(i-1))
		if w.b > w.a {
			ws = append(ws, w)
		}
	}
	return ws, tokens
}

// union merges overlapping windows.
func union(ws []window) []window {
	slices.SortFunc(ws, func(x, y window) int { return cmp.Compare(x.a, y.a) })
	var out []window
	for _, w := range ws {
		if n := len(out); n > 0 && w.a <= out[n-1].b {
			out[n-1].b = max(out[n-1].b, w.b)
			continue
		}
		out = append(out, w)
	}
	return out
}

// energyOver is the joules the source used over the windows; covered is
// false when part of them lies outside its polls.
func (v *view) energyOver(ws []window, counter bool) (float64, bool) {
	var ts, ys []float64
	for i := range v.t.Polls.Len() {
		y := v.t.Polls.Power(i)
		if counter {
			y = v.t.Polls.Energy(i)
		}
		if y.Valid {
			ts, ys = append(ts, v.t.Polls.T(i)), append(ys, y.V)
		}
	}
	// One point measures no energy.
	if len(ts) < 2 {
		return 0, false
	}
	covered := true
	total := 0.0
	for _, w := range ws {
		a, b := max(w.a, ts[0]), min(w.b, ts[len(ts)-1])
		if a > w.a || b < w.b {
			covered = false
		}
		if b <= a {
			continue
		}
		if counter {
			total += interp(ts, ys, b) - interp(ts, ys, a)
			continue
		}
		total += integrate(ts, ys, a, b)
	}
	return total, covered
}

// interp is ys linearly interpolated at t, inside ts's range.
func interp(ts, ys []float64, t float64) float64 {
	i, _ := slices.BinarySearch(ts, t)
	if i < len(ts) && ts[i] == t {
		return ys[i]
	}
	// Within the range, t lies between ts[i-1] and ts[i].
	f := (t - ts[i-1]) / (ts[i] - ts[i-1])
	return ys[i-1] + f*(ys[i]-ys[i-1])
}

// integrate is the trapezoid integral of ys over [a, b] inside ts's range.
func integrate(ts, ys []float64, a, b float64) float64 {
	pts := []float64{a}
	for _, t := range ts {
		if t > a && t < b {
			pts = append(pts, t)
		}
	}
	pts = append(pts, b)
	s := 0.0
	for i := 1; i < len(pts); i++ {
		s += (interp(ts, ys, pts[i-1]) + interp(ts, ys, pts[i])) / 2 * (pts[i] - pts[i-1])
	}
	return s
}
