package engine

import (
	"math"
	"slices"

	"github.com/llmrec/llmrec/analyze/rate"
)

// How a completion span was measured (ChosenSpan.How).
const (
	// SpanFromE2E: the mean request duration, Δsum ÷ Δcount of the engine's
	// own end-to-end latency histogram over the trailing window.
	SpanFromE2E = "e2e_mean"
	// SpanFromLittle: Little's law, mean requests running ÷ completion
	// rate, which is ∫running dt ÷ completions over the trailing window.
	// The completions are the polls at which the completion counter moved:
	// a lower bound when requests finish in the same poll interval, so the
	// duration is an upper bound then (at most running × interval).
	SpanFromLittle = "little"
)

// spanMinCompletions is how many completions the trailing window must
// hold before a duration is read from it: one is a single request's.
const spanMinCompletions = 2

// spanChange is the relative change of the measured duration that moves
// the span in force: a span that moved by a few per cent at every poll
// would say nothing more and cost a pass over the counters each time.
const spanChange = 0.1

// durationSource says where a reader's engine publishes the typical
// request duration: an end-to-end latency histogram (e2e, its base name),
// else the requests running gauge and a counter that moves when a request
// completes (Little's law).
type durationSource struct {
	e2e     string
	running string
	moves   string
}

// series names the series a duration is read from, for provenance.
func (d durationSource) series() []string {
	if d.e2e != "" {
		return []string{d.e2e + "_sum", d.e2e + "_count"}
	}
	return []string{d.running, d.moves}
}

// ChosenSpan is the span a target's completion counters ran with, chosen
// from the data (Tracker.SetCompletionSpan): the typical request duration
// over the trailing Window, bounded by Bounds.
type ChosenSpan struct {
	// Span is the span in force at the last poll, seconds; null when none
	// was chosen (too few completions): the configured span throughout.
	Span rate.Num `json:"span"`
	// Min and Max are the smallest and largest span chosen; Polls how
	// many polls ran with a chosen span (the others with the configured
	// span, before the first completions).
	Min   rate.Num `json:"min"`
	Max   rate.Num `json:"max"`
	Polls int      `json:"polls"`
	// Duration is the last request duration measured, before bounding.
	Duration rate.Num `json:"duration"`
	How      string   `json:"how"`      // SpanFromE2E or SpanFromLittle
	Series   []string `json:"series"`   // what the duration is read from
	Counters []string `json:"counters"` // the counter families the span is given to
	// Bounds are the smallest and largest span allowed, seconds: the
	// target's interval and the trailing window.
	Bounds [2]float64 `json:"bounds"`
	Window float64    `json:"window"` // the trailing window a duration is measured over, seconds
}

// spanPoint is a poll at which a completion was counted, with cumulative
// sums: a window's measure is the difference of its ends, so requests cut
// by the window's edges do not count.
type spanPoint struct {
	t   float64
	num float64 // e2e: the histogram's _sum; Little: ∫running dt so far
	den float64 // e2e: its _count; Little: completions so far
}

// spanChooser measures the typical request duration of a target and
// gives it, bounded, to the counters its engine moves once per request.
type spanChooser struct {
	lo, hi float64     // bounds; hi 0: off
	pts    []spanPoint // the completions of the trailing window, oldest first
	// Little's law's running sums, and the last poll they were read at.
	integral, done float64
	lastT, lastRun float64
	lastMoves      float64
	seen           bool
	span           float64 // in force; 0 none chosen
	dur            float64 // the last duration measured
	ids            []int32 // the estimator ids of the completion counters
	fams           map[string]bool
	polls          int
	mn, mx         float64
	// sum and count are the series of the e2e histogram named e2e, made
	// once: a poll's concatenation was two allocations.
	e2e, sum, count string
	// The name slots of the four series read, found once each (a slot
	// is never dropped): two string hashes a poll were 0.5 % of a replay.
	at [4]namedSlot
}

// namedSlot is a name's slot, once found.
type namedSlot struct {
	name string
	slot int32
}

// SetCompletionSpan makes the tracker choose the span of the counters the
// engine moves once per request (llama.cpp's token counters, SGLang's and
// TGI's) from the data: the typical request duration, measured over the
// trailing hi seconds from the engine's own end-to-end latency histogram
// (Δsum ÷ Δcount) or, without one, by Little's law from the requests
// running gauge and the completions, bounded to [lo, hi]. Until the
// window holds two completions they keep the configured span. hi ≤ 0
// turns it off. Call it before the first poll.
func (t *Tracker) SetCompletionSpan(lo, hi float64) {
	if !(hi > 0) {
		t.cs = nil
		return
	}
	t.cs = &spanChooser{lo: lo, hi: max(hi, lo), fams: map[string]bool{}}
}

// CompletionSpan reports the span chosen for the completion counters; ok
// is false when the tracker chooses none (off, or an engine without
// completion counters or a duration source).
func (t *Tracker) CompletionSpan() (ChosenSpan, bool) {
	c := t.cs
	if c == nil || len(t.rd.atCompletion) == 0 || t.rd.duration == (durationSource{}) {
		return ChosenSpan{}, false
	}
	out := ChosenSpan{Polls: c.polls, How: SpanFromLittle, Series: t.rd.duration.series(),
		Counters: []string{}, Bounds: [2]float64{c.lo, c.hi}, Window: c.hi}
	if t.rd.duration.e2e != "" {
		out.How = SpanFromE2E
	}
	for f := range c.fams {
		out.Counters = append(out.Counters, f)
	}
	slices.Sort(out.Counters)
	if c.span > 0 {
		out.Span = rate.Some(c.span)
	}
	if c.polls > 0 {
		out.Min, out.Max = rate.Some(c.mn), rate.Some(c.mx)
	}
	if c.dur > 0 {
		out.Duration = rate.Some(c.dur)
	}
	return out, true
}

// classifyCompletion gives a newly classified counter the chosen span
// when its family moves once per request.
func (t *Tracker) classifyCompletion(ks *keyState) {
	c := t.cs
	if c == nil || !t.rd.atCompletion[ks.Family] {
		return
	}
	if !slices.Contains(c.ids, ks.est) {
		c.ids = append(c.ids, ks.est)
	}
	c.fams[ks.Family] = true
	if c.span > 0 {
		t.est.SetSpan(ks.est, c.span)
	}
}

// sumOf returns the sum of the series named name in the current poll; ok
// is false when none is in it.
func (t *Tracker) sumOf(name string, at *namedSlot) (float64, bool) {
	slot := at.slot
	if at.name != name || name == "" {
		s, ok := t.names[name]
		// Not keyed yet: looked up again next poll.
		if !ok {
			return 0, false
		}
		*at, slot = namedSlot{name, s}, s
	}
	if t.slots[slot].seq != t.seq {
		return 0, false
	}
	s := 0.0
	for _, id := range t.slots[slot].keys {
		s += t.vals[id].v
	}
	return s, true
}

// chooseSpan measures the duration with the current poll and, when it
// moved enough, gives the completion counters their new span: before the
// poll is observed, so that its windows use it.
func (t *Tracker) chooseSpan() {
	c := t.cs
	src := t.rd.duration
	if c == nil || len(c.ids) == 0 || src == (durationSource{}) {
		return
	}
	t.measureSpan(c, src)
	if c.span > 0 {
		if c.polls == 0 {
			c.mn, c.mx = c.span, c.span
		}
		c.polls++
		c.mn, c.mx = min(c.mn, c.span), max(c.mx, c.span)
	}
}

// measureSpan adds the current poll to the trailing window and measures
// the duration over it.
func (t *Tracker) measureSpan(c *spanChooser, src durationSource) {
	T := t.poll.T
	// Another process's sums are no base for this one's, nor is a poll
	// not after the last one a time.
	if t.restart != "" || (c.seen && T <= c.lastT) {
		c.pts, c.seen = c.pts[:0], false
	}
	var p spanPoint
	if src.e2e != "" {
		if c.e2e != src.e2e {
			c.e2e, c.sum, c.count = src.e2e, src.e2e+"_sum", src.e2e+"_count"
		}
		sum, ok1 := t.sumOf(c.sum, &c.at[0])
		n, ok2 := t.sumOf(c.count, &c.at[1])
		if !ok1 || !ok2 {
			return
		}
		// A sum that fell (a label set gone) starts the window over.
		if k := len(c.pts); k > 0 && (sum < c.pts[k-1].num || n < c.pts[k-1].den) {
			c.pts = c.pts[:0]
		}
		p = spanPoint{t: T, num: sum, den: n}
		if k := len(c.pts); k == 0 || n > c.pts[k-1].den {
			c.pts = append(c.pts, p)
		}
	} else {
		run, ok1 := t.sumOf(src.running, &c.at[2])
		v, ok2 := t.sumOf(src.moves, &c.at[3])
		if !ok1 || !ok2 {
			return
		}
		if c.seen {
			c.integral += (c.lastRun + run) / 2 * (T - c.lastT)
		}
		if c.seen && v > c.lastMoves {
			c.done++
			c.pts = append(c.pts, spanPoint{t: T, num: c.integral, den: c.done})
		}
		c.lastRun, c.lastMoves = run, v
	}
	c.lastT, c.seen = T, true
	// The window's first completion is its base: no earlier than T − hi.
	i := 0
	for i < len(c.pts)-1 && c.pts[i].t < T-c.hi {
		i++
	}
	if i > 0 {
		c.pts = append(c.pts[:0], c.pts[i:]...)
	}
	if k := len(c.pts); k > 0 {
		first, last := c.pts[0], c.pts[k-1]
		if n := last.den - first.den; n >= spanMinCompletions {
			c.dur = (last.num - first.num) / n
			d := min(max(c.dur, c.lo), c.hi)
			if c.span == 0 || math.Abs(d-c.span) > spanChange*c.span || (d != c.dur && d != c.span) {
				c.span = d
				for _, id := range c.ids {
					t.est.SetSpan(id, d)
				}
			}
		}
	}
}
