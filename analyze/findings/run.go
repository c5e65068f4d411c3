package findings

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/internal/order"
	"github.com/llmrec/llmrec/analyze/internal/par"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Analyze computes the findings of a run. It does not modify the run.
func Analyze(run *Run) *Findings {
	f, fleet := Start(run)
	f.Fleet = fleet()
	return f
}

// Start is Analyze but for the fleet, which it computes on a goroutine of
// its own, beside what the caller does next: fleet waits for it and
// returns it. The fleet is the findings' longest piece (one merge of every
// target's ticks): started as soon as the views are built, it overlaps the
// incidents, the rollups and the caller's phases instead of being waited
// for alone. Until fleet returns, the run is read by that goroutine: the
// caller may read it too, not modify it.
func Start(run *Run) (*Findings, func() Fleet) {
	f := &Findings{
		Incidents: []Incident{}, Edges: []Edge{}, Settle: []Settle{}, Rollups: []Rollup{},
		Seams: []Seam{}, Facts: []TargetFacts{}, Drift: []TargetDrift{},
	}
	gates := run.Gates.WithDefaults()
	// Each target's view and edges are its own: built on every core.
	views := make([]*view, len(run.Targets))
	par.For(len(views), func(_, i int) {
		v := newView(run.Targets[i], gates)
		v.findEdges(run.Spans, v.decodeSpan())
		views[i] = v
	})
	slices.SortFunc(views, func(a, b *view) int { return strings.Compare(a.t.Name, b.t.Name) })
	for _, v := range views {
		f.Edges = append(f.Edges, v.edges...)
	}
	done := make(chan Fleet, 1)
	go func() { done <- fleet(views, run.KeepPolls) }()
	f.Settle = settle(f.Edges, gates.Span, run.Spans)
	// Each target's own incidents, and its rollups, facts and drift, read
	// the views only: in one pass on every core (no core waits for the
	// other between them), then merged in the views' order.
	type own struct {
		rollups []Rollup
		facts   TargetFacts
		drift   *TargetDrift
	}
	per := make([]own, len(views))
	inc := make([]ownIncidents, len(views))
	par.For(2*len(views), func(_, i int) {
		if i < len(views) {
			inc[i] = views[i].ownIncidents(gates, run.Spans)
			return
		}
		v, o := views[i-len(views)], &per[i-len(views)]
		if v.t.Engine != engine.Generic {
			o.rollups = v.rollups(run.Caps)
			d := v.drift()
			o.drift = &d
		}
		o.facts = v.facts()
	})
	f.Incidents = mergeIncidents(views, inc)
	for _, o := range per {
		f.Rollups = append(f.Rollups, o.rollups...)
	}
	f.Seams = seams(views)
	for _, o := range per {
		f.Facts = append(f.Facts, o.facts)
		if o.drift != nil {
			f.Drift = append(f.Drift, *o.drift)
		}
	}
	f.Energy = energy(views)
	return f, func() Fleet { return <-done }
}

// view is one target with what the findings derive from it.
type view struct {
	t        *Target
	interval float64
	gates    rate.Config
	// pollRow maps each poll to its row index; rowPoll each row to its
	// poll (-1 when the row is not a poll).
	pollRow []int
	rowPoll []int
	// state is each poll's interval state (the interval ending at it),
	// read from signal; pace is that interval's rate of the signal
	// (tokens or steps per second), which places edges inside intervals.
	state  []state
	pace   []float64
	signal signal
	// stepDecode says the engine's decode counter moves on every step
	// (decodeMoves), looked up once: progress asks at every poll.
	stepDecode bool
	edges      []Edge
	held       map[int]bool // polls whose jump hold an edge explains
	// lifetime is each poll's tokens_total summed over the processes seen
	// so far (a restarted process's count added to the last reading of
	// those before it); runTokens the tokens over the run, each process's
	// rise summed, a new process counted from 0. Null without the cell.
	lifetime  []rate.Num
	runTokens rate.Num
	// stalled are the engine stalls: the progress counter frozen while
	// requests ran (see stalls).
	stalled []stall
	// ivs are the polls' progress intervals while stalls reads them; nil
	// otherwise.
	ivs []progIv
}

// state is what a poll interval's busy signal did (see signal).
type state uint8

const (
	unknown state = iota // no usable interval: the first poll, a reset, growth across a hole
	flat                 // the signal did not move (the engine was idle)
	grow                 // it moved (busy)
)

func newView(t *Target, gates rate.Config) *view { return newViewFrom(t, gates, nil) }

// newViewFrom is newView of a target whose polls are the tail of a longer
// run's (Follow): c carries what the view reads from the polls before its
// first (the busy signal, the tokens counted so far); nil for a whole run.
func newViewFrom(t *Target, gates rate.Config, c *carry) *view {
	v := &view{t: t, gates: gates, held: map[int]bool{}}
	v.interval = t.Interval
	if v.interval <= 0 {
		v.interval = cadence(t)
	}
	v.pollRow = make([]int, t.Polls.Len())
	v.rowPoll = make([]int, len(t.Rows))
	for i := range t.Rows {
		v.rowPoll[i] = -1
	}
	for p := range t.Polls.Len() {
		v.pollRow[p] = -1
		if i := t.Polls.Row(p); i >= 0 && i < len(t.Rows) && t.Rows[i].Outcome == "ok" {
			v.rowPoll[i], v.pollRow[p] = p, i
		}
	}
	v.state = make([]state, t.Polls.Len())
	v.pace = make([]float64, t.Polls.Len())
	v.signal = signalOf(t)
	if c != nil {
		v.signal = c.signal(t.Engine)
	}
	v.stepDecode = decodeMoves[t.Engine] == everyStep
	// Each poll read once, only what signal.read reads: the one before is
	// kept.
	var p, q Poll
	for i := 1; i < t.Polls.Len(); i++ {
		if i == 1 {
			readSignal(&t.Polls, 0, &p)
		}
		readSignal(&t.Polls, i, &q)
		dt := q.T - p.T
		v.state[i], v.pace[i] = v.signal.read(&p, &q, dt > 1.5*v.interval)
		p = q
	}
	bridgeShortFlats(v.state)
	v.stalled = v.stalls()
	for _, s := range v.stalled {
		// A stall is no load edge: its intervals have no busy state.
		for k := s.a + 1; k <= s.b; k++ {
			v.state[k] = unknown
		}
		// The jump gate holds the engine resuming: the stall explains it.
		for k := s.b + 1; k < min(s.b+SteadyPolls, t.Polls.Len()); k++ {
			for _, r := range t.Polls.Reasons(k) {
				if r == rate.ReasonJump {
					v.held[k] = true
				}
			}
		}
	}
	var ts tokenState
	if c != nil {
		ts = c.tok
	}
	v.tokens(ts)
	return v
}

// naive is poll i's naive Δtotal/Δt of rate cell k: null without the
// counter at both polls or time between them (and at the first poll).
func (v *view) naive(i, k int) rate.Num {
	ps := &v.t.Polls
	if i < 1 {
		return rate.Num{}
	}
	a, b, dt := ps.Total(i-1, k), ps.Total(i, k), ps.T(i)-ps.T(i-1)
	// A naive rate needs the counter at both polls and some time between them.
	if !a.Valid || !b.Valid || dt <= 0 {
		return rate.Num{}
	}
	return rate.Some((b.V - a.V) / dt)
}

// tokens sums tokens_total across the target's processes: a restart (or
// a fall of the cell) starts a new process counting from 0. s is the sum
// over the polls before the view's first (zero for a whole run).
func (v *view) tokens(s tokenState) {
	ps := &v.t.Polls
	v.lifetime = make([]rate.Num, ps.Len())
	for i := range ps.Len() {
		v.lifetime[i] = s.add(ps.TokensTotal(i), ps.Restarted(i))
	}
	v.runTokens = s.run
}

// tokenState is the sum of tokens_total over a target's polls so far.
type tokenState struct {
	n               int // polls added
	offset, prev    float64
	seen, restarted bool
	run             rate.Num // tokens over the run
}

// add adds the next poll and returns its lifetime tokens (null without
// the cell).
func (s *tokenState) add(x rate.Num, restart bool) rate.Num {
	s.restarted = s.restarted || (restart && s.n > 0)
	s.n++
	// No reading: the next one tells whether a restart came between.
	if !x.Valid {
		return rate.Num{}
	}
	switch {
	case !s.seen:
		s.seen, s.run = true, rate.Some(0)
	case s.restarted || x.V < s.prev:
		s.offset += s.prev
		s.run.V += x.V
	default:
		s.run.V += x.V - s.prev
	}
	s.restarted, s.prev = false, x.V
	return rate.Some(s.offset + x.V)
}

// decodeSpan is the span of the target's published decode cell.
func (v *view) decodeSpan() float64 {
	if v.t.DecodeSpan > 0 {
		return v.t.DecodeSpan
	}
	return v.gates.Span
}

// signal is what a target's busy state is read from.
type signal uint8

const (
	signalDecode  signal = iota // the decode counter's interval: growing is busy
	signalSteps                 // an engine-step counter (StepCounters)
	signalRunning               // the decode counter, and requests running at both ends of a flat interval
)

// Signals, as Edge.Signal names them.
var signalNames = [...]string{
	signalDecode:  "decode counter",
	signalSteps:   "engine-step counter",
	signalRunning: "decode counter, and requests running",
}

// signalOf picks the steadiest busy signal the target publishes. A decode
// counter that moves every engine step is steady; one that moves only when
// a request completes stays flat between completions while the engine is
// busy, so a step counter, else the running requests, tell busy from idle.
func signalOf(t *Target) signal {
	if decodeMoves[t.Engine] != atCompletion {
		return signalDecode
	}
	steps, running := false, false
	for i := range t.Polls.Len() {
		steps = steps || t.Polls.Steps(i).Valid
		running = running || t.Polls.Running(i).Valid
	}
	switch {
	case steps:
		return signalSteps
	case running:
		return signalRunning
	}
	return signalDecode
}

// signalFields are the numbers of a poll signal.read reads, besides T.
var signalFields = [...]Field{FieldInterval, FieldSteps, FieldRunning}

// readSignal sets p's T, Interval.V, Steps and Running to poll i's (what
// signal.read reads; the rest of p is left as it was).
func readSignal(l *PollList, i int, p *Poll) {
	var xs [len(signalFields)]rate.Num
	l.Read(i, signalFields[:], xs[:])
	p.T, p.Interval.V, p.Steps, p.Running = l.T(i), xs[0], xs[1], xs[2]
}

// read is the state of the interval from poll p to poll q, and its rate of
// the signal; hole says the interval is longer than 1.5 cadences.
func (s signal) read(p, q *Poll, hole bool) (state, float64) {
	r := q.Interval.V
	dt := q.T - p.T
	// No usable decode interval (the first poll, a reset): no state.
	if !r.Valid {
		return unknown, 0
	}
	if s == signalSteps {
		a, b := p.Steps, q.Steps
		switch {
		case !a.Valid || !b.Valid || b.V < a.V:
			// No step reading at one end, or the step counter restarted.
			return unknown, 0
		case b.V == a.V:
			return flat, 0
		case hole:
			// Growth across a hole: the edge inside it cannot be placed.
			return unknown, 0
		}
		return grow, (b.V - a.V) / dt
	}
	switch {
	case r.V == 0 && s == signalRunning && p.Running.V > 0 && q.Running.V > 0:
		// Requests ran from one end to the other: busy, whatever completed.
		if hole {
			return unknown, 0
		}
		return grow, 0
	case r.V == 0:
		return flat, 0
	case hole:
		return unknown, 0
	}
	return grow, r.V
}

// MinFlatPolls is the shortest flat run inside growth that counts as the
// counter stopping. Engines that count tokens when a request finishes
// (llama.cpp's tokens_predicted_total) leave a busy counter flat for an
// interval or two between completions; that is not load ending.
const MinFlatPolls = 3

// bridgeShortFlats marks as growing every run of fewer than MinFlatPolls
// flat intervals that has growth right before and right after it.
func bridgeShortFlats(st []state) {
	for i := 0; i < len(st); {
		if st[i] != flat {
			i++
			continue
		}
		j := i
		for j < len(st) && st[j] == flat {
			j++
		}
		// Only a short flat run between two growing intervals is bridged.
		if j-i < MinFlatPolls && i > 0 && st[i-1] == grow && j < len(st) && st[j] == grow {
			for k := i; k < j; k++ {
				st[k] = grow
			}
		}
		i = j
	}
}

// cadence estimates a target's interval: the median spacing of its ticks,
// else of its polls, else 1 s.
func cadence(t *Target) float64 {
	var d []float64
	for i := 1; i < len(t.Rows); i++ {
		a, b := t.Rows[i-1].Scheduled, t.Rows[i].Scheduled
		if a > 0 && b > a {
			d = append(d, b-a)
		}
	}
	if len(d) == 0 {
		for i := 1; i < t.Polls.Len(); i++ {
			d = append(d, t.Polls.T(i)-t.Polls.T(i-1))
		}
	}
	m := median(d)
	// Nothing to measure a cadence on: one second, the recorder's default.
	if !m.Valid || m.V <= 0 {
		return 1
	}
	return m.V
}

// median of xs (copied); null for none.
func median(xs []float64) rate.Num { return medianIn(nil, xs) }

// medianIn is median, selecting in a copy of xs in buf's storage where it
// fits: the ranks slices.Sort would put in the middle, without sorting.
func medianIn(buf, xs []float64) rate.Num {
	if len(xs) == 0 {
		return rate.Num{}
	}
	s := append(buf[:0], xs...)
	n := len(s)
	hi := order.Nth(s, n/2)
	if n%2 == 1 {
		return rate.Some(hi)
	}
	// Nothing before n/2 is greater: the rank below is the greatest of
	// them, in cmp.Compare's order (NaN least) as slices.Sort's.
	lo := s[0]
	for _, x := range s[1 : n/2] {
		if cmp.Less(lo, x) {
			lo = x
		}
	}
	return rate.Some((lo + hi) / 2)
}

// gateReasons are the estimator's refusals that are gates (as opposed to a
// series' first sample, or nothing to read).
var gateReasons = map[string]bool{
	rate.ReasonFloor: true, rate.ReasonCeiling: true, rate.ReasonStale: true, rate.ReasonJump: true,
	rate.ReasonOrder: true, rate.ReasonReset: true,
}

// rowTime is when a row's tick was due, else when it went out or answered.
func rowTime(r *Row) float64 { return cmp.Or(r.Scheduled, r.Start, r.FirstByte) }

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
