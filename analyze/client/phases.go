package client

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/llmrec/llmrec/analyze/phases"
)

// Source is the source of phases cut from a client file.
const Source = "client"

// How phases were cut.
const (
	FromStages = "stages"             // the client's own stages (GuideLLM benchmarks)
	FromField  = "phase field"        // the records' phase labels (AIPerf's warmup/profiling, a phase column)
	FromLevels = "concurrency levels" // steady stretches of requests in flight
)

// Phase is a client phase in the shape analyze/phases takes (--phases),
// and how its records are chosen.
type Phase struct {
	phases.Phase
	// Label is the phase label whose records the phase holds; "" when its
	// records are those in its bounds.
	Label string `json:"label,omitempty"`
	// Sampled says why the phase's records are not all of its requests:
	// its rates over wall time are then refused.
	Sampled string `json:"sampled,omitempty"`
}

// AsPhases returns the phases as analyze/phases takes them.
func AsPhases(ps []Phase) []phases.Phase {
	out := make([]phases.Phase, len(ps))
	for i := range ps {
		out[i] = ps[i].Phase
	}
	return out
}

// Level cutting: requests in flight are averaged over windows; a window
// whose mean lies within LevelTolerance (or LevelSlack requests) of the
// level of the windows before it continues that level; a level of fewer
// than LevelWindows windows is a ramp and is not a phase.
const (
	LevelTolerance = 0.15
	LevelSlack     = 0.5
	LevelWindows   = 3
)

// Phases cuts a run's phases: its stages where the client declared them,
// else its records' phase labels, else its steady concurrency levels. how
// says which (or why there are none).
func Phases(run *Run) (out []Phase, how string) {
	if len(run.Stages) > 0 {
		for _, s := range run.Stages {
			out = append(out, Phase{Phase: phases.Phase{Name: s.Name, Kind: phases.KindNamed, Source: Source, Start: s.Start, End: s.End,
				Why: "the client's " + s.Name + ": " + s.Why}, Label: s.Name, Sampled: s.Sampled})
		}
		return out, FromStages
	}
	if len(run.Requests) == 0 {
		return nil, "no per-request records"
	}
	if ps := labelled(run.Requests); len(ps) > 0 {
		n := 0
		for i := range run.Requests {
			if run.Requests[i].Phase == "" {
				n++
			}
		}
		// Records without a label are in no phase: say so.
		if n > 0 {
			return ps, fmt.Sprintf("%s (%d requests without a phase label are in none)", FromField, n)
		}
		return ps, FromField
	}
	return levels(run.Requests)
}

// labelled cuts a phase per phase label, from its first request's start
// to its last request's end, in order of start.
func labelled(rs []Request) []Phase {
	type span struct {
		start, end float64
		n          int
	}
	spans := map[string]*span{}
	for i := range rs {
		r := &rs[i]
		if r.Phase == "" {
			continue
		}
		s := spans[r.Phase]
		if s == nil {
			s = &span{start: r.Start, end: r.Start}
			spans[r.Phase] = s
		}
		s.n++
		s.start = min(s.start, r.Start)
		s.end = max(s.end, last(r))
	}
	var out []Phase
	for label, s := range spans {
		out = append(out, Phase{Phase: phases.Phase{Name: label, Kind: phases.KindNamed, Source: Source, Start: s.start, End: s.end,
			Why: fmt.Sprintf("the client's phase field: %d requests labelled %q, from the first's start to the last's end", s.n, label)}, Label: label})
	}
	slices.SortFunc(out, func(a, b Phase) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Name, b.Name)) })
	return out
}

// LastSeen is the last time a request was seen: its end, else its first
// token, else its start.
func LastSeen(r *Request) float64 { return last(r) }

// last is the last time a request was seen: its end, else its first
// token, else its start.
func last(r *Request) float64 {
	switch {
	case r.End.Valid:
		return r.End.V
	case r.FirstToken.Valid:
		return r.FirstToken.V
	}
	return r.Start
}

// inflight is the step function of requests in flight: at ts[i] it
// becomes ns[i].
type inflight struct {
	ts []float64
	ns []int
}

func newInflight(rs []Request, keep func(*Request) bool) inflight {
	type ev struct {
		t float64
		d int
	}
	evs := make([]ev, 0, 2*len(rs))
	for i := range rs {
		r := &rs[i]
		if keep != nil && !keep(r) {
			continue
		}
		// A request without an end (AIPerf's cancelled) is in flight until
		// it was last seen.
		evs = append(evs, ev{r.Start, 1}, ev{last(r), -1})
	}
	// Ends first at a tie: a request that ends as another starts is not
	// two in flight.
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.d, b.d)) })
	var f inflight
	n := 0
	for _, e := range evs {
		n += e.d
		if k := len(f.ts); k > 0 && f.ts[k-1] == e.t {
			f.ns[k-1] = n
			continue
		}
		f.ts, f.ns = append(f.ts, e.t), append(f.ns, n)
	}
	return f
}

// over is the time-weighted mean and the max of requests in flight over
// [a, b].
func (f *inflight) over(a, b float64) (mean float64, peak int) {
	if b <= a || len(f.ts) == 0 {
		return 0, 0
	}
	i, _ := slices.BinarySearch(f.ts, a)
	cur := 0
	if i < len(f.ts) && f.ts[i] == a {
		cur = f.ns[i]
		i++
	} else if i > 0 {
		cur = f.ns[i-1]
	}
	area, t := 0.0, a
	peak = cur
	for ; i < len(f.ts) && f.ts[i] < b; i++ {
		area += float64(cur) * (f.ts[i] - t)
		t, cur = f.ts[i], f.ns[i]
		peak = max(peak, cur)
	}
	area += float64(cur) * (b - t)
	return area / (b - a), peak
}

// levels cuts steady concurrency levels from requests in flight.
func levels(rs []Request) ([]Phase, string) {
	f := newInflight(rs, nil)
	if len(f.ts) < 2 {
		return nil, "too few requests to see a concurrency level"
	}
	t0, t1 := f.ts[0], f.ts[len(f.ts)-1]
	span := t1 - t0
	if span <= 0 {
		return nil, "requests of no length"
	}
	var e2e []float64
	for i := range rs {
		if v := rs[i].E2E(); v.Valid && rs[i].Status == StatusOK {
			e2e = append(e2e, v.V)
		}
	}
	// Windows of about two requests' length hold a level's ups and downs;
	// at most 1000 and at least LevelWindows·2 of them across the run.
	w := span / 1000
	if q := Quantile(e2e, 0.5); q.Valid {
		w = max(w, 2*q.V)
	}
	w = min(w, span/(2*LevelWindows))
	n := int(math.Ceil(span / w))
	type seg struct {
		first, last int
		sum         float64
	}
	var segs []seg
	for i := range n {
		m, _ := f.over(t0+float64(i)*w, min(t0+float64(i+1)*w, t1))
		if k := len(segs) - 1; k >= 0 {
			s := &segs[k]
			level := s.sum / float64(s.last-s.first+1)
			if math.Abs(m-level) <= max(LevelSlack, LevelTolerance*level) {
				s.last, s.sum = i, s.sum+m
				continue
			}
		}
		segs = append(segs, seg{i, i, m})
	}
	var out []Phase
	names := map[string]int{}
	for _, s := range segs {
		k := s.last - s.first + 1
		level := s.sum / float64(k)
		// A short stretch is a ramp; an idle one is no level.
		if k < LevelWindows || level < LevelSlack {
			continue
		}
		a, b := t0+float64(s.first)*w, min(t0+float64(s.last+1)*w, t1)
		name := "concurrency " + levelName(level)
		names[name]++
		if names[name] > 1 {
			name += " (" + strconv.Itoa(names[name]) + ")"
		}
		out = append(out, Phase{Phase: phases.Phase{Name: name, Kind: phases.KindSteady, Source: Source, Start: a, End: b,
			Why: fmt.Sprintf("requests in flight averaged over %d windows of %ss stayed within ±max(%g, %g%%) of %s from %s to %s",
				k, num(w), LevelSlack, 100*LevelTolerance, num(level), Stamp(a), Stamp(b))}})
	}
	if len(out) == 0 {
		return nil, "no steady concurrency level (each stretch shorter than " + strconv.Itoa(LevelWindows) + " windows of " + num(w) + "s)"
	}
	return out, FromLevels
}

// levelName is a level to a whole request where it is near one.
func levelName(l float64) string {
	if math.Abs(l-math.Round(l)) < 0.25 {
		return "≈" + strconv.Itoa(int(math.Round(l)))
	}
	return "≈" + strconv.FormatFloat(l, 'f', 1, 64)
}
