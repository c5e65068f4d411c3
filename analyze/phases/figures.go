package phases

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/internal/order"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Reasons a phase figure is null, besides the estimator's (empty: no
// observation in the phase; not_exported, absent).
const (
	// ReasonFewPolls: the phase has fewer than two good polls of the
	// target, or none of its intervals is free of a restart.
	ReasonFewPolls = "few_polls"
	// ReasonNoSteady: the target has no steady phase (a headline only).
	ReasonNoSteady = "no_steady_phase"
)

// Disagreement is how far apart a figure and the published median may be,
// as a fraction of the figure, before it is a finding.
const Disagreement = 0.10

// A good poll is one whose stamp (the first byte) is sure: its timing
// uncertainty (first byte − request start) is at most GoodStamp of the
// cadence and at most StampShare of the phase, so that the boundary polls
// move a phase's Δt by at most StampShare at each end. A late answer (a
// stale body, an engine too busy to answer at once) is no boundary; the
// next good poll is.
const (
	GoodStamp  = 0.25
	StampShare = 0.005
)

// Input is one target as the phase figures read it.
type Input struct {
	// Target is the findings' record of the target: its polls in the same
	// order as Log's (the gauges, the published rate cells, the
	// ungated per-interval decode rate, the process start).
	Target *findings.Target
	Log    *Log
	// Restarts are restarts found by any other evidence, as the time of
	// the first poll after each (a restart incident's end): the interval
	// ending at that poll is left out. A counter that fell (Log) and a
	// process start that moved are read here too.
	Restarts []float64
	// Blocks asks for each single phase's figures over non-overlapping
	// blocks too (Figure.Blocks): the samples a diff compares. They cost
	// a tenth more time, so only a diff asks.
	Blocks bool

	ev      *evaluator // reads the phases' deltas
	unsure  []float64  // by poll: first byte − request start, 0 unknown
	cadence float64    // seconds
	restart []bool     // by poll: the interval ending at it crosses a restart
	sc      *scratch   // its worker's while Compute measures, shared by the inputs after
}

// scratch is what a worker's passes over the polls gather, one stretch
// at a time: its buffers are reused stretch after stretch and target
// after target.
type scratch struct {
	ph pass
}

// scratch returns the input's scratch.
func (in *Input) scratch() *scratch {
	if in.sc == nil {
		in.sc = &scratch{}
	}
	return in.sc
}

// Figures are one target's figures over one or more windows (one phase, or
// every steady phase of a headline).
type Figures struct {
	Target  string   `json:"target"`
	Bounds  Bounds   `json:"bounds"`
	Figures []Figure `json:"figures"`
}

// Bounds say what a target's figures were measured over.
type Bounds struct {
	// Windows are the phases measured, with the good polls used.
	Windows []Window `json:"windows"`
	// Polls are the target's polls inside the windows; Good those with a
	// sure stamp; Intervals the poll intervals summed.
	Polls     int `json:"polls"`
	Good      int `json:"good"`
	Intervals int `json:"intervals"`
	// Seconds is the time the counters were differenced over; Coverage
	// that as a fraction of the windows' length.
	Seconds  float64  `json:"seconds"`
	Coverage rate.Num `json:"coverage"`
	// Away is the seconds of the windows the target was out of the
	// recorder's target set (discovery: file_sd, DNS): its counters were
	// differenced across them, not watched. 0 when it never left.
	Away float64 `json:"away_s,omitempty"`
	// Processes is how many engine processes the counters were read
	// from; RestartsLeftOut the intervals across a restart, left out
	// (their tokens and their time), by the poll ending each.
	Processes       int       `json:"processes"`
	RestartsLeftOut []float64 `json:"restarts_left_out"`
	// FromZero are the first polls of new processes counted from 0 (their
	// counters hold all they did since they started), up to their first
	// good poll: from their start when a process start series gives it
	// (the old process's tail after its last poll is left out with the
	// time until the new one started), else only for a restart before the
	// window's first poll, from the window's start (the old process's
	// last poll was before the window). Other restarts' intervals are left
	// out (RestartsLeftOut).
	FromZero []float64 `json:"from_zero"`
	// inner counts the restarts inside the windows counted from 0 (a new
	// process's first poll that opens a window adds no process).
	inner int
	// Spans are the stretches differenced, from one good poll to another
	// of the same process: Seconds is their sum.
	Spans [][2]float64 `json:"spans"`
	// Refusals counts the published rate cells the gates refused inside
	// the windows, by reason.
	Refusals map[string]int `json:"refusals"`
	// Reason says why there are no counter figures (few_polls).
	Reason string `json:"reason,omitempty"`
}

// Window is one phase's bounds and the good polls its Δ runs between.
type Window struct {
	Start float64  `json:"start"`
	End   float64  `json:"end"`
	First rate.Num `json:"first"`
	Last  rate.Num `json:"last"`
}

// Figure is one number of a phase, with its provenance.
type Figure struct {
	// Name is a canonical cell name; for a histogram quantile base +
	// "__p50", "__p90" or "__p99"; for a gauge's statistic the cell name
	// + "__mean" or "__max".
	Name   string   `json:"name"`
	Value  rate.Num `json:"value"`
	Reason string   `json:"reason,omitempty"`
	// Source is the series or formula, as the cells name theirs.
	Source string `json:"source"`
	// Bucket is the bucket a quantile fell in and its flags (package
	// rate's BucketQuantile); absent for other figures.
	Bucket rate.Bucket `json:"bucket,omitzero"`
	// Published is the distribution of the per-poll published values of
	// the cell inside the windows; nil for figures with no per-poll twin.
	Published *Published `json:"published,omitempty"`
	// Disagrees says, when the published median is more than 10 % off the
	// figure, by how much and on which side the left-out windows lay.
	Disagrees string `json:"disagrees,omitempty"`
	// Blocks are the figure over non-overlapping blocks of the phase, the
	// sample a diff compares (blocks.go); only on a named or steady phase.
	Blocks *Blocks `json:"blocks,omitempty"`
}

// Published is the distribution of one cell's published values.
type Published struct {
	Cell   string         `json:"cell"`
	P5     rate.Num       `json:"p5"`
	P50    rate.Num       `json:"p50"`
	P95    rate.Num       `json:"p95"`
	Values int            `json:"values"` // polls with a value
	Nulls  map[string]int `json:"nulls"`  // polls without one, by reason
}

// counterFigures are the cells the counters' Δ across a phase gives, read
// by the engine's own reader.
var counterFigures = []string{
	engine.DecodeTokensPerSecond, engine.PromptTokensPerSecond, engine.PromptTokensComputedPerSecond,
	engine.RequestsFinishedPerSecond, engine.PreemptionsPerSecond, engine.PrefixCacheHitRatio,
	engine.SpecAcceptRatio, engine.PerRequestDecodeTokensPerSecond,
}

// quantiles of the histogram figures.
var quantiles = [...]struct {
	suffix string
	q      float64
}{{"__p50", 0.5}, {"__p90", 0.9}, {"__p99", 0.99}}

// twin is the per-poll published cell a figure is compared with: a rate
// cell of the findings' polls, or one of PubCells.
type twin struct {
	rate int // findings rate index, -1 none
	pub  int // PubCells index, -1 none
}

var twins = func() map[string]twin {
	m := map[string]twin{}
	for k, c := range findings.RateCells {
		m[c] = twin{k, -1}
	}
	for k, c := range PubCells {
		m[c] = twin{-1, k}
	}
	return m
}()

// offGates read one interval with every gate off: the figure is the
// counters' Δ, whatever a window would have been refused for.
var offGates = rate.Config{Span: 1e-6, MinWindow: -1, CeilingFactor: -1, JumpFactor: -1, JumpFloor: -1, StaleFraction: -1}

// Measure measures one target over windows; over one window with its
// figures' blocks.
func Measure(in *Input, windows []Phase) Figures {
	s, p := in.sumWith(windows, len(windows) == 1), &in.scratch().ph
	in.gather(p, s.pollsIn)
	return in.figures(s, p)
}

// sums are the counters' Δ over windows and what they were read over.
type sums struct {
	acc     []float64 // by log id
	dt, len float64   // seconds differenced; the windows' length
	b       Bounds
	pollsIn runs     // polls inside the windows [start, end)
	bl      *blocker // the blocks' boundaries, nil when not asked
}

// runs are poll indexes in order, as runs of consecutive ones [a, b):
// a window's polls are one run, kept in two ints and not in a slice as
// long as the polls (a day's phases allocated megabytes of them).
type runs [][2]int

// add appends poll i, extending the last run when i follows it.
func (r runs) add(i int) runs {
	if n := len(r); n > 0 && r[n-1][1] == i {
		r[n-1][1]++
		return r
	}
	return append(r, [2]int{i, i + 1})
}

// len is the number of polls.
func (r runs) len() int {
	n := 0
	for _, x := range r {
		n += x[1] - x[0]
	}
	return n
}

// all yields the polls in order.
func (r runs) all() iter.Seq[int] {
	return func(yield func(int) bool) {
		for _, x := range r {
			for i := x[0]; i < x[1]; i++ {
				if !yield(i) {
					return
				}
			}
		}
	}
}

// prepare checks the input and marks its good polls and restarts once.
func (in *Input) prepare() {
	if in.unsure != nil {
		return
	}
	t, l := in.Target, in.Log
	// The log and the findings record the same polls; anything else is a bug.
	if l == nil || l.Len() != t.Polls.Len() {
		panic("phases: the log and the findings' polls differ for " + t.Name)
	}
	in.cadence = t.Interval
	if in.cadence <= 0 {
		in.cadence = spacing(&t.Polls)
	}
	in.unsure = make([]float64, t.Polls.Len())
	for i := range t.Polls.Len() {
		if s := t.Polls.Start(i); s > 0 {
			in.unsure[i] = max(0, t.Polls.T(i)-s)
		}
	}
	in.restart = restarts(in)
}

// sum adds up the counters' Δ over windows.
func (in *Input) sum(windows []Phase) *sums { return in.sumWith(windows, false) }

// sumWith adds up the counters' Δ over windows and, when blocks is set and
// there is one window, marks the blocks' boundaries on the way.
func (in *Input) sumWith(windows []Phase, blocks bool) *sums {
	in.prepare()
	l, ps := in.Log, &in.Target.Polls
	s := &sums{acc: make([]float64, len(l.Series)),
		b: Bounds{Windows: []Window{}, RestartsLeftOut: []float64{}, FromZero: []float64{}, Spans: [][2]float64{}, Refusals: map[string]int{}}}
	b := &s.b
	for _, w := range windows {
		s.len += w.Duration()
		win := Window{Start: w.Start, End: w.End}
		lo := searchT(ps, w.Start)
		hi := searchT(ps, math.Nextafter(w.End, math.Inf(1))) // first poll after End
		limit := min(in.cadence*GoodStamp, StampShare*w.Duration())
		good := func(i int) bool { return in.unsure[i] <= limit }
		a, z := -1, -1
		for i := lo; i < hi; i++ {
			b.Polls++
			if ps.T(i) < w.End {
				s.pollsIn = s.pollsIn.add(i)
				for _, r := range ps.Reasons(i) {
					// Most cells are valued: "" is no refusal, and costs no hash.
					if r != "" && gateReasons[r] {
						b.Refusals[r]++
					}
				}
			}
			if !good(i) {
				continue
			}
			b.Good++
			if a < 0 {
				a = i
			}
			z = i
		}
		if blocks && in.Blocks && len(windows) == 1 {
			s.bl = newBlocker(in, a, z)
		}
		if a >= 0 && z > a {
			win.First, win.Last = rate.Some(ps.T(a)), rate.Some(ps.T(z))
			// Each process is differenced between its own first and last
			// good polls, and so is any part of a process's run that ends
			// on an unsure stamp. A new process is counted from 0 up to its
			// first good poll (from the old one's last poll, or the window's
			// start) when it may be (Bounds.FromZero); else the interval
			// across its restart is left out.
			p := a
			if lo > 0 && lo < a && in.restart[lo] {
				p = lo // a new process's first poll opens the window, unsure
			}
			for p < z {
				q := p + 1
				for q <= z && !in.restart[q] {
					q++
				}
				// Polls p..q-1 are one process; q (if ≤ z) the first of the next.
				g1, g2 := p, q-1
				for g1 < g2 && !good(g1) {
					g1++
				}
				for g2 > g1 && !good(g2) {
					g2--
				}
				switch {
				case p == a && !in.restart[p] || p == 0:
				case good(g1) && in.zeroFrom(p, lo, w.Start) > 0:
					s.zero(l, ps, p, g1, in.zeroFrom(p, lo, w.Start))
					if p > lo {
						b.inner++
					}
				case p > lo:
					b.RestartsLeftOut = append(b.RestartsLeftOut, ps.T(p))
				}
				if g2 > g1 {
					b.Spans = append(b.Spans, [2]float64{ps.T(g1), ps.T(g2)})
				}
				s.bl.begin(g1, s.acc)
				for i := g1 + 1; i <= g2; i++ {
					l.add(i, s.acc)
					s.dt += ps.T(i) - ps.T(i-1)
					b.Intervals++
					s.bl.step(i, good(i), s.acc)
				}
				s.bl.end(g2)
				p = q
			}
		}
		b.Windows = append(b.Windows, win)
	}
	return s
}

// zero counts a new process from 0, from its first poll p up to its
// first good poll g (its counters' increments from 0), over [from, T(g)].
func (s *sums) zero(l *Log, ps *findings.PollList, p, g int, from float64) {
	for i := p; i <= g; i++ {
		l.add(i, s.acc)
	}
	s.dt += ps.T(g) - from
	s.b.Intervals++
	s.b.FromZero = append(s.b.FromZero, ps.T(p))
	s.b.Spans = append(s.b.Spans, [2]float64{from, ps.T(g)})
}

// zeroFrom is when the process whose first poll is p starts counting
// from 0 in a window starting at wStart whose first poll is lo; 0 when it
// may not be counted so (its restart interval is left out). With a
// process start series, from its start (the old process's tail after its
// last poll is left out with the time before the new one started); a start
// before the previous poll is another process's (one a proxy switched to,
// whose counters hold work from before). Without one (a header or a
// counter that fell), only a restart before the window's first poll is
// counted, from the window's start: the old process's last poll is before
// the window, and its tail inside it, if any, is unknown.
func (in *Input) zeroFrom(p, lo int, wStart float64) float64 {
	ps := &in.Target.Polls
	prev := ps.T(p - 1)
	if ps.Start(p-1) > 0 {
		prev = ps.Start(p - 1)
	}
	if st := ps.ProcessStart(p); st.Valid {
		// One second of slack for the engine's clock against the recorder's.
		if st.V < prev-1 || st.V > ps.T(p) {
			return 0
		}
		return max(st.V, wStart, ps.T(p-1))
	}
	if p > lo {
		return 0
	}
	return max(wStart, ps.T(p-1))
}

// merge adds o's windows to s.
func (s *sums) merge(o *sums) {
	for x, v := range o.acc {
		s.acc[x] += v
	}
	s.dt, s.len = s.dt+o.dt, s.len+o.len
	s.pollsIn = append(s.pollsIn, o.pollsIn...)
	b := &s.b
	b.Windows = append(b.Windows, o.b.Windows...)
	b.Polls, b.Good, b.Intervals = b.Polls+o.b.Polls, b.Good+o.b.Good, b.Intervals+o.b.Intervals
	b.RestartsLeftOut = append(b.RestartsLeftOut, o.b.RestartsLeftOut...)
	b.FromZero, b.inner = append(b.FromZero, o.b.FromZero...), b.inner+o.b.inner
	b.Spans = append(b.Spans, o.b.Spans...)
	for r, n := range o.b.Refusals {
		b.Refusals[r] += n
	}
}

// figures are the figures of the sums and of what pass p gathered over
// their polls (its values are reordered).
func (in *Input) figures(s *sums, p *pass) Figures {
	t, l := in.Target, in.Log
	ps := &t.Polls
	out := Figures{Target: t.Name, Bounds: s.b, Figures: make([]Figure, 0, nFigures)}
	b := &out.Bounds
	acc, dt, pollsIn := s.acc, s.dt, s.pollsIn
	b.Seconds = dt
	b.Processes = len(b.RestartsLeftOut) + b.inner + 1
	if s.len > 0 {
		b.Coverage = rate.Some(dt / s.len)
	}
	for _, w := range b.Windows {
		b.Away += awayWithin(t.Presence, w.Start, w.End)
	}
	var cells engine.Cells
	if b.Intervals == 0 || dt <= 0 {
		b.Reason = ReasonFewPolls
	} else {
		cells = in.evaluate(dt, acc)
	}
	out.Figures = countedWith(out.Figures, l, cells, acc, &p.gs, true)
	if s.bl != nil {
		in.blockFigures(s, out.Figures)
	}
	// The stretch's distributions: the rate cells', then PubCells'.
	pubs := make([]Published, findings.NRates+len(PubCells))
	rates := p.publishedRates(pubs)
	for k := range out.Figures {
		f := &out.Figures[k]
		tw, ok := twins[f.Name]
		if !ok {
			continue
		}
		if tw.rate >= 0 {
			f.Published = rates[tw.rate]
		} else {
			f.Published = p.published(l, f.Name, tw.pub, pollsIn, &pubs[findings.NRates+tw.pub])
		}
		// Nothing published and nothing measured: the reason says all.
		if f.Published.Values == 0 && !f.Value.Valid {
			f.Published = nil
			continue
		}
		f.Disagrees = disagrees(f, ps, pollsIn, tw)
	}
	return out
}

// counted appends to out the figures of one stretch: the cells of the
// counters' Δ acc (nil: too few polls), the histograms' quantiles of the
// bucket deltas, and the gauges over the polls idx. A phase and each of its
// blocks are measured by it alike (a block's figures without their
// sources: only the values are kept).
func counted(out []Figure, l *Log, ps *findings.PollList, cells engine.Cells, acc []float64, idx runs, sources bool) []Figure {
	gs := gaugesOver(ps, idx)
	return countedWith(out, l, cells, acc, &gs, sources)
}

// countedWith is counted with the gauges' statistics over the polls given.
func countedWith(out []Figure, l *Log, cells engine.Cells, acc []float64, gs *gaugeStats, sources bool) []Figure {
	for _, name := range counterFigures {
		f := Figure{Name: name}
		if cells == nil {
			f.Reason = ReasonFewPolls
		} else if c, ok := cells.Get(name); ok {
			f.Value, f.Reason, f.Source = c.Value, c.Reason, c.Source
		}
		out = append(out, f)
	}
	for h := range engine.Histograms {
		out = histFigures(out, l, h, cells, acc, sources)
	}
	return gaugeFigures(out, gs, sources)
}

// gateReasons are the estimator's refusals.
var gateReasons = map[string]bool{
	rate.ReasonOrder: true, rate.ReasonNoBaseline: true, rate.ReasonReset: true, rate.ReasonCeiling: true,
	rate.ReasonFloor: true, rate.ReasonStale: true, rate.ReasonJump: true,
}

// searchT is the index of the first poll not before t.
func searchT(ps *findings.PollList, t float64) int {
	return ps.Search(t)
}

// spacing is the median spacing of the polls; 1 s without two.
func spacing(ps *findings.PollList) float64 {
	if ps.Len() < 2 {
		return 1
	}
	d := make([]float64, ps.Len()-1)
	for i := 1; i < ps.Len(); i++ {
		d[i-1] = ps.T(i) - ps.T(i-1)
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// restarts marks the intervals across a restart, by the poll ending each:
// a logged counter fell, the process start moved, or other evidence said
// so (Input.Restarts).
func restarts(in *Input) []bool {
	ps := &in.Target.Polls
	out := make([]bool, ps.Len())
	for i := 1; i < ps.Len(); i++ {
		p, q := ps.ProcessStart(i-1), ps.ProcessStart(i)
		out[i] = in.Log.Reset(i) || (p.Valid && q.Valid && p.V != q.V)
	}
	for _, t := range in.Restarts {
		if i := searchT(ps, t); i > 0 && i < ps.Len() && ps.T(i) == t {
			out[i] = true
		}
	}
	return out
}

// evalCells are the cells the figures read of an evaluator's: the
// counters' figures and the histograms (a base stands for its cells).
var evalCells = append(slices.Clone(counterFigures), engine.Histograms...)

// evaluator reads counter deltas through the engine's own reader, every
// gate off: one tracker per target, fed each phase's Δ as one more
// interval on top of the ones before (cumulative values, time moving on by
// the phase's Δt), so the cells of each poll are one phase's figures and
// the series are registered once.
type evaluator struct {
	tr  *engine.Tracker
	ids []int32
	cum []float64
	t   float64
	dst engine.Cells
	eng string
}

// evaluate returns the cells of Δ acc over dt seconds. They are valid
// until the next call.
func (in *Input) evaluate(dt float64, acc []float64) engine.Cells {
	l := in.Log
	ev := in.ev
	if ev == nil {
		ev = &evaluator{eng: cmp.Or(l.Engine(), in.Target.Engine), t: 1}
		in.ev = ev
	}
	if ev.tr == nil {
		ev.tr = engine.NewTracker(ev.eng, offGates)
		// The figures read the counters' cells and the histograms'
		// (counterFigures; a histogram's count, mean and its p50's source
		// and reason): the reader need not make the others.
		ev.tr.Want(evalCells...)
		ev.ids = make([]int32, len(l.Series))
		for x, s := range l.Series {
			ev.ids[x] = ev.tr.Key(s)
		}
		ev.cum = make([]float64, len(l.Series))
		ev.tr.Begin(ev.t, 0)
		ev.tr.SetAll(ev.ids, ev.cum)
		ev.dst = ev.tr.End(ev.dst)
	}
	for x, d := range acc {
		ev.cum[x] += d
	}
	ev.t += dt
	ev.tr.Begin(ev.t, 0)
	ev.tr.SetAll(ev.ids, ev.cum)
	ev.dst = ev.tr.End(ev.dst)
	return ev.dst
}

// histFigures are a histogram's count and mean as the reader makes them
// from the phase's Δ, and its quantiles from the bucket deltas.
func histFigures(out []Figure, l *Log, h int, cells engine.Cells, acc []float64, sources bool) []Figure {
	hc := &histNames[h]
	for _, name := range hc.cells[:2] {
		f := Figure{Name: name, Reason: ReasonFewPolls}
		if c, ok := cells.Get(name); ok {
			f.Value, f.Reason, f.Source = c.Value, c.Reason, c.Source
		}
		out = append(out, f)
	}
	p50, _ := cells.Get(hc.cells[2])
	series, ok := histSeries(p50.Source)
	var bs *buckets
	if cells != nil && ok {
		bs = l.buckets(series, acc)
	}
	for j, q := range quantiles {
		f := Figure{Name: hc.quantiles[j]}
		switch {
		case cells == nil:
			f.Reason = ReasonFewPolls
		case !ok:
			// The reader makes no quantile here: its reason is the figure's.
			f.Reason, f.Source = p50.Reason, p50.Source
		default:
			if sources {
				// The same for every stretch: made once a series.
				if bs.sources[j] == "" {
					bs.sources[j] = "computed:histogram_quantile(" + strconv.FormatFloat(q.q, 'g', -1, 64) + ", Δ" + series + " across the phase)"
				}
				f.Source = bs.sources[j]
			}
			f.Value, f.Bucket, f.Reason = bs.quantile(q.q)
		}
		out = append(out, f)
	}
	return out
}

// histNames are each of engine.Histograms' cell names (engine.HistCells)
// and quantile figures' names, made once.
var histNames = func() []struct {
	cells     [5]string
	quantiles [len(quantiles)]string
} {
	out := make([]struct {
		cells     [5]string
		quantiles [len(quantiles)]string
	}, len(engine.Histograms))
	for h, base := range engine.Histograms {
		out[h].cells = engine.HistCells(base)
		for j, q := range quantiles {
			out[h].quantiles[j] = base + q.suffix
		}
	}
	return out
}()

// histSeries is the bucket series a reader's quantile cell names in its
// source ("computed:histogram_quantile(0.5, ΔNAME_bucket)").
func histSeries(src string) (string, bool) {
	_, rest, ok := strings.Cut(src, ", Δ")
	if !ok || !strings.HasPrefix(src, "computed:histogram_quantile(") {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, ")")
	return name, ok && strings.HasSuffix(name, "_bucket")
}

// buckets are a bucket series' Δs across a stretch, summed over its label
// sets by le: les are the distinct bounds, rising; n the Δs, made
// cumulative-monotonic as histogram_quantile makes them.
type buckets struct {
	les   []float64
	n     []float64
	mixed bool // the label sets have different bounds (rate.MixedEdges)
	// sources are the quantile figures' sources, by quantiles' index,
	// made when first asked.
	sources [len(quantiles)]string
}

// bucketLayout is where each logged series of a bucket series adds:
// its log id and the index of its le in les.
type bucketLayout struct {
	les []float64
	ids []int32
	at  []int
	bs  buckets // reused by every stretch
}

// buckets returns the Δs acc of bucket series series, summed by le. They
// are valid until the next call for series (the log keeps one scratch per
// series: the figures are computed one stretch at a time).
func (l *Log) buckets(series string, acc []float64) *buckets {
	ly := l.layouts[series]
	if ly == nil {
		ly = &bucketLayout{}
		for x, s := range l.Series {
			if s.Name != series {
				continue
			}
			le := l.le(x)
			if math.IsNaN(le) {
				continue
			}
			ly.ids = append(ly.ids, int32(x))
			ly.les = append(ly.les, le)
		}
		mixed := rate.MixedEdges(ly.les)
		les := slices.Compact(slices.Sorted(slices.Values(ly.les)))
		ly.at = make([]int, len(ly.ids))
		for k, le := range ly.les {
			ly.at[k], _ = slices.BinarySearch(les, le)
		}
		ly.les = les
		ly.bs = buckets{les: les, n: make([]float64, len(les)), mixed: mixed}
		if l.layouts == nil {
			l.layouts = map[string]*bucketLayout{}
		}
		l.layouts[series] = ly
	}
	bs := &ly.bs
	clear(bs.n)
	for k, x := range ly.ids {
		bs.n[ly.at[k]] += acc[x]
	}
	for i := 1; i < len(bs.n); i++ {
		bs.n[i] = max(bs.n[i], bs.n[i-1])
	}
	return bs
}

// quantile is Prometheus' histogram_quantile of the buckets, with the
// bucket it fell in and its flags.
func (bs *buckets) quantile(q float64) (rate.Num, rate.Bucket, string) {
	les, n := bs.les, bs.n
	// A quantile needs a +Inf bucket and a finite one to interpolate in.
	if len(les) < 2 || !math.IsInf(les[len(les)-1], 1) {
		return rate.Num{}, rate.Bucket{}, rate.ReasonBuckets
	}
	// No observation in the phase: no quantile, not 0.
	if n[len(n)-1] == 0 {
		return rate.Num{}, rate.Bucket{}, rate.ReasonEmpty
	}
	// Label sets with different bounds: a seam no quantile crosses.
	if bs.mixed {
		return rate.Num{}, rate.Bucket{}, rate.ReasonEdges
	}
	v, b := rate.BucketQuantile(q, les, n)
	return rate.Some(v), b, ""
}

// gauge is a gauge figure's cell and its statistics; names and prefixes
// are, by statistic, its figures' names and their sources' beginnings
// (made once: gaugeFigures is called for every stretch).
type gauge struct {
	name            string
	src             string
	stats           []string
	names, prefixes []string
}

// gauges are the gauge figures, in the order gaugeValues reads them.
var gauges = func() [5]gauge {
	gs := [...]gauge{
		{name: engine.RequestsRunning, src: engine.RequestsRunning, stats: []string{"mean", "max"}},
		{name: engine.RequestsWaiting, src: engine.RequestsWaiting, stats: []string{"mean", "max"}},
		{name: "waiting_capacity", src: engine.WaitingByReason + `{reason="capacity"}`, stats: []string{"mean", "max"}},
		{name: "waiting_deferred", src: engine.WaitingByReason + `{reason="deferred"}`, stats: []string{"mean", "max"}},
		{name: engine.KVCacheUsageRatio, src: engine.KVCacheUsageRatio, stats: []string{"max"}},
	}
	for g := range gs {
		for _, st := range gs[g].stats {
			gs[g].names = append(gs[g].names, gs[g].name+"__"+st)
			gs[g].prefixes = append(gs[g].prefixes, st+" of "+gs[g].src+" over ")
		}
	}
	return gs
}()

// nFigures is how many figures a stretch has (countedWith's): the
// counters', each histogram's count, mean and quantiles, the gauges'.
var nFigures = func() int {
	n := len(counterFigures) + len(engine.Histograms)*(2+len(quantiles))
	for _, g := range gauges {
		n += len(g.stats)
	}
	return n
}()

// gaugeFields are the polls' fields of the gauges.
var gaugeFields = [len(gauges)]findings.Field{findings.FieldRunning, findings.FieldWaiting, findings.FieldCapacity,
	findings.FieldDeferred, findings.FieldKV}

// gaugesOver are the gauges' statistics over the polls idx, read once for
// every gauge.
func gaugesOver(ps *findings.PollList, idx runs) gaugeStats {
	gs := newGaugeStats()
	var vs [len(gauges)]rate.Num
	for i := range idx.all() {
		ps.Read(i, gaugeFields[:], vs[:])
		gs.add(&vs)
	}
	return gs
}

// gaugeFigures are the mean and max of the gauges over the polls of gs:
// every poll counts the same (the cadence is fixed).
func gaugeFigures(out []Figure, gs *gaugeStats, sources bool) []Figure {
	sum, n, hi := &gs.sum, &gs.n, &gs.hi
	var buf [128]byte
	for g, x := range gauges {
		for j, st := range x.stats {
			f := Figure{Name: x.names[j]}
			if sources {
				// "STAT of SOURCE over N polls", in one allocation.
				b := strconv.AppendInt(append(buf[:0], x.prefixes[j]...), int64(n[g]), 10)
				f.Source = string(append(b, " polls"...))
			}
			switch {
			case n[g] == 0:
				// Never published in the phase: absent, not 0.
				f.Reason = rate.ReasonAbsent
			case st == "mean":
				f.Value = rate.Some(sum[g] / float64(n[g]))
			default:
				f.Value = rate.Some(hi[g])
			}
			out = append(out, f)
		}
	}
	return out
}

// rateFields are the polls' fields of the rate cells, by findings rate
// index.
var rateFields = func() (fs [findings.NRates]findings.Field) {
	for k := range fs {
		fs[k] = findings.FieldRate(k)
	}
	return fs
}()

// finish sets the counts and percentiles of values xs (reordered). The
// median is selected first; each other percentile is then selected within
// the half of xs it lies in, which the median's selection left holding
// exactly its ranks.
func (p *Published) finish(xs []float64) {
	n := len(xs)
	p.Values = n
	p.P5, p.P50, p.P95 = rate.Num{}, rate.Num{}, rate.Num{}
	// No values: no percentiles.
	if n == 0 {
		return
	}
	m := int(0.5 * float64(n-1))
	p.P50 = pctIn(xs, 0.5, 0, n)
	// The 95th before the 5th: selecting in xs[:m+1] moves xs[m].
	p.P95 = pctIn(xs, 0.95, min(int(0.95*float64(n-1)), m+1), n)
	p.P5 = pctIn(xs, 0.05, 0, m+1)
}

// pct is the q-quantile of xs (reordered) by linear interpolation between
// ranks, as of xs sorted; null for none. It selects instead of sorting: a
// day's busy phases are 43,200 polls for each of a dozen cells.
func pct(xs []float64, q float64) rate.Num {
	if len(xs) == 0 {
		return rate.Num{}
	}
	return pctIn(xs, q, 0, len(xs))
}

// pctIn is pct of xs (not empty) when xs[from:to] holds the ranks from to
// to-1 of xs sorted, nothing past it is less than them, and the quantile's
// lower rank falls in it; only xs[from:to] is reordered.
func pctIn(xs []float64, q float64, from, to int) rate.Num {
	pos := q * float64(len(xs)-1)
	i := int(pos)
	lo := order.Nth(xs[from:to], i-from)
	if i+1 >= len(xs) {
		return rate.Some(lo)
	}
	// After the selection nothing past i is less than xs[i]: the next rank
	// is the least of them, inside the range when it holds it.
	var hi float64
	if i+1 < to {
		hi = slices.Min(xs[i+1 : to])
	} else {
		hi = slices.Min(xs[to:])
	}
	return rate.Some(lo + (hi-lo)*(pos-float64(i)))
}

// disagrees says whether the published median is more than Disagreement
// off the figure, and on which side the windows the gates left out lay:
// for the decode cell from the ungated per-interval rate of each refused
// poll, for others from which side the published median errs.
func disagrees(f *Figure, ps *findings.PollList, idx runs, tw twin) string {
	pub := f.Published
	if !f.Value.Valid || pub == nil || !pub.P50.Valid {
		return ""
	}
	v, m := f.Value.V, pub.P50.V
	off := math.Abs(m - v)
	// Within the tolerance: no finding.
	if (v != 0 && off <= Disagreement*math.Abs(v)) || (v == 0 && m == 0) {
		return ""
	}
	refused := 0
	for _, n := range pub.Nulls {
		refused += n
	}
	var b strings.Builder
	if v == 0 {
		fmt.Fprintf(&b, "the published median %s is not the phase figure 0: the counters did not move, and the published windows still reach back into the load before the phase (%d refused)",
			num(m), refused)
		return b.String()
	}
	fmt.Fprintf(&b, "the published median %s is %+.0f %% off the phase figure %s", num(m), 100*(m-v)/math.Abs(v), num(v))
	side := "below"
	if m < v {
		side = "above"
	}
	if tw.rate == findings.Decode && refused > 0 {
		below, above := 0, 0
		fs, xs := [2]findings.Field{findings.FieldRate(findings.Decode), findings.FieldInterval}, [2]rate.Num{}
		for i := range idx.all() {
			ps.Read(i, fs[:], xs[:])
			if d, iv := xs[0], xs[1]; d.Valid || !iv.Valid {
				continue
			}
			if iv := xs[1].V; iv < v {
				below++
			} else if iv > v {
				above++
			}
		}
		fmt.Fprintf(&b, "; of the %d polls the gates refused, the ungated per-interval rate lay below the figure in %d and above it in %d", refused, below, above)
		return b.String()
	}
	lean := "below"
	if m > v {
		lean = "above"
	}
	fmt.Fprintf(&b, "; the published values lean %s it: the windows left out (%d refused, and those that lagged the phase) lay %s it",
		lean, refused, side)
	return b.String()
}

// awayWithin is the seconds of [start, end] a target spent out of its
// target set: from a leave to the next join (or on, when it never came
// back). Presence is in join order; a Leave of 0 is present to its
// session's end, and the time after that until a next session is no
// absence (no recorder was running: that is a gap).
func awayWithin(ps []findings.Presence, start, end float64) float64 {
	away := 0.0
	for i, p := range ps {
		if p.Leave == 0 {
			continue
		}
		back := math.Inf(1)
		if i+1 < len(ps) {
			back = ps[i+1].Join
		}
		away += max(0, min(end, back)-max(start, p.Leave))
	}
	return away
}
