// Package live is a recording as it stands, in one frame: per target its
// state, its last published rates and latencies, its scrapes' health; the
// fleet; the named phase under way; the incidents found so far. It reads
// the folder read-only through package analyze (the same engine readers,
// the same gated estimator and the same findings), so a frame's numbers
// are the ones analyze publishes for the same polls. llmrec top draws it.
package live

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/capture"
)

// Target states.
const (
	StateBusy    = "busy"    // requests running, or tokens coming out
	StateIdle    = "idle"    // answering, nothing running
	StateDown    = "down"    // its last scrape failed, or no row for DownIntervals intervals
	StateStalled = "stalled" // an engine_stall incident is open at its last poll
	StateUnknown = "unknown" // no poll yet
)

// The live view's KV bands (AIPerf's dashboard): a usage ratio from
// KVWarn is "warn", from KVSaturated "saturated". They are not analyze's
// KV severity (rate.KVSeverity: 0.75 and 0.90), which judges a phase.
const (
	KVWarn      = 0.80
	KVSaturated = 0.95
)

// Bands of a KV usage ratio.
const (
	BandOK        = "ok"
	BandWarn      = "warn"
	BandSaturated = "saturated"
)

// DownIntervals is how many of its intervals a target may go without a
// row before it is down: the recorder writes a row every tick, a failure
// included, so silence that long is a target the recorder no longer polls.
const DownIntervals = 3

// Defaults of [Options].
const (
	DefaultWindow = 30.0 // seconds
	DefaultSpark  = 40   // polls
)

// Options configure [Read].
type Options struct {
	// Dir is the run folder.
	Dir string
	// Until, when not 0, reads the recording up to this instant (Unix
	// nanoseconds): a frame of a finished run as it stood then.
	Until int64
	// Window is the trailing window of the scrape latency, the missed
	// ticks and the waiting slope, seconds (0: DefaultWindow).
	Window float64
	// Spark is how many polls of decode tokens/s a sparkline holds (0:
	// DefaultSpark).
	Spark int
	// Gates are the estimator's span and gates, as analyze --span takes.
	Gates rate.Config
}

// Frame is the recording at one instant.
type Frame struct {
	Dir string `json:"dir"`
	// T is the frame's instant: Until, else the latest row's tick (Unix
	// seconds); Start the first row's. 0 when there is no row.
	T     float64 `json:"t"`
	Start float64 `json:"start"`
	// Recording says a session still holds a live journal (its recorder
	// runs, or was killed and not repaired).
	Recording bool `json:"recording"`
	// Phase is the named phase under way at T (llmrec mark), "" none.
	Phase string `json:"phase"`
	// Level is the sweep level under way at T.
	Level   Level    `json:"level"`
	Targets []Target `json:"targets"`
	// Fleet is the fleet's totals at its last tick; nil without an engine.
	Fleet *findings.FleetPoint `json:"fleet"`
	// Incidents are the incidents found so far, in analyze's order.
	Incidents []findings.Incident `json:"incidents"`
	// Problems are files that could not be read, as analyze says them.
	Problems []analyze.Problem `json:"problems"`
	// Window is the trailing window, seconds.
	Window float64 `json:"window"`
}

// Target is one target's line.
type Target struct {
	Name   string `json:"name"`
	Engine string `json:"engine"`
	State  string `json:"state"`
	// Why says what the state rests on.
	Why string `json:"why"`
	// LastPoll is the time of its last poll (Unix seconds), 0 none.
	LastPoll float64 `json:"last_poll"`
	// The published cells of its last poll, as analyze publishes them,
	// with their provenance. Latency is TTFT's p50 and ITL's p50 (the
	// mean when the engine has no p50: TTFTOf and ITLOf name the cell).
	Decode  engine.Cell `json:"decode"`
	Prompt  engine.Cell `json:"prompt"`
	TTFT    engine.Cell `json:"ttft"`
	TTFTOf  string      `json:"ttft_of"`
	ITL     engine.Cell `json:"itl"`
	ITLOf   string      `json:"itl_of"`
	Running engine.Cell `json:"running"`
	Waiting engine.Cell `json:"waiting"`
	KV      engine.Cell `json:"kv"`
	// KVBand is the KV usage's band ("" without a value).
	KVBand string `json:"kv_band"`
	// Saturating says the waiting queue rose over the window (a positive
	// least-squares slope, by at least one request, over SlopePolls
	// polls or more).
	Saturating bool `json:"saturating"`
	// ScrapeP99 is the p99 of the time to first byte of the scrapes
	// answered in the window, seconds (null without one); Scrapes counts
	// the window's rows, Missed its missed ticks and Failed its failures.
	ScrapeP99 rate.Num `json:"scrape_p99"`
	Scrapes   int      `json:"scrapes"`
	Missed    int      `json:"missed"`
	Failed    int      `json:"failed"`
	// Spark is decode tokens/s over its last polls, oldest first.
	Spark []rate.Num `json:"spark"`
	// Restart is the time of its last restart (Unix seconds), null none.
	Restart rate.Num `json:"restart"`
}

// Level is the sweep level under way: as analyze's sweep reads a run
// with named phases, each named phase but a warmup is a level, in the
// order they start.
type Level struct {
	// Name is the named phase open at the frame's instant, "" none
	// (Reason says why there is no level).
	Name string `json:"name"`
	// Index is its place among the levels marked so far (1 the first),
	// Of how many those are; Start is its start (Unix seconds).
	Index int     `json:"index"`
	Of    int     `json:"of"`
	Start float64 `json:"start"`
	// Offered is the load offered so far: per target the mean
	// requests_running + requests_waiting over the level's polls (the
	// running mean alone where it publishes no waiting gauge), summed
	// over the targets that publish them (OfferedOf of them). Null with
	// Reason when none does. The sweep's offered load, read before the
	// level ends (analyze takes the client's mean in flight instead where
	// a client record names the phase).
	Offered   rate.Num `json:"offered"`
	OfferedOf int      `json:"offered_of"`
	Polls     int      `json:"polls"`
	Source    string   `json:"source"`
	Reason    string   `json:"reason,omitempty"`
}

// OfferedSource is the source of Level.Offered.
const OfferedSource = "mean requests_running + requests_waiting over the level's polls so far, summed over the targets"

// SlopePolls is the fewest polls with a waiting value the slope test needs.
const SlopePolls = 3

// targetLog keeps what a frame needs of one target while analyze replays.
type targetLog struct {
	polls   []pollLog // of the window, and at least the last one
	rows    []analyze.ScrapeRow
	spark   []rate.Num
	last    analyze.ScrapeRow // the last row not a missed tick
	lastAny int64             // the last row's tick, ns
	prevAny int64             // the tick before it, ns
}

type pollLog struct {
	t                                    float64
	decode, prompt, running, waiting, kv engine.Cell
	ttft, itl                            engine.Cell
	ttftOf, itlOf                        string
}

// Read reads the folder as it stands (never writing it) and makes a frame,
// through analyze.Analyze: every file read whole.
func Read(opts Options) (*Frame, error) {
	st := newState(opts)
	st.marks(opts.Until)
	res, err := analyze.Analyze(st.analyzeOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	defer res.Close()
	return st.frame(res, opts.Until), nil
}

// Reader makes frame after frame of a recording that grows, reading only
// what is new each time (analyze.Session): the same cells, once per poll.
// Never writing the folder either.
type Reader struct {
	opts Options
	st   *frameState
	s    *analyze.Session
}

// NewReader is a reader of opts.Dir; opts.Until is the first frame's
// instant (0: as the folder stands).
func NewReader(opts Options) (*Reader, error) {
	st := newState(opts)
	s, err := analyze.NewSession(st.analyzeOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	return &Reader{opts: opts, st: st, s: s}, nil
}

// Frame reads what is new up to until (Unix nanoseconds; 0: as the folder
// stands; never earlier than the last frame's) and makes a frame.
func (r *Reader) Frame(until int64) (*Frame, error) {
	r.s.SetUntil(until)
	r.st.marks(until)
	res, err := r.s.Update()
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	return r.st.frame(res, until), nil
}

// Close lets go of the files the reader holds open between frames.
func (r *Reader) Close() { r.s.Close() }

// frameState is what frames keep of each target's polls and rows, fed by
// analyze's hooks.
type frameState struct {
	dir    string
	window float64
	spark  int
	logs   map[string]*targetLog
	latest int64
	// spans are the named phases marked up to the instant read, in
	// order; levels sums each target's running and waiting gauges over
	// the named phase its polls are in.
	spans  []phaseSpan
	levels map[string]*levelSum
}

// phaseSpan is one named phase: from its mark to its end mark, or to the
// next mark that starts a phase (0: open).
type phaseSpan struct {
	name       string
	start, end float64
}

// levelSum is a target's gauges summed over the polls of one named phase.
type levelSum struct {
	span           phaseSpan
	run, wait      float64
	nRun, nWait, n int
}

func (l *levelSum) add(p *pollLog) {
	l.n++
	if v := p.running.Value; v.Valid {
		l.run, l.nRun = l.run+v.V, l.nRun+1
	}
	if v := p.waiting.Value; v.Valid {
		l.wait, l.nWait = l.wait+v.V, l.nWait+1
	}
}

func newState(opts Options) *frameState {
	return &frameState{dir: opts.Dir, window: cmp.Or(opts.Window, DefaultWindow), spark: cmp.Or(opts.Spark, DefaultSpark),
		logs: map[string]*targetLog{}, levels: map[string]*levelSum{}}
}

func (st *frameState) get(name string) *targetLog {
	l := st.logs[name]
	if l == nil {
		l = &targetLog{}
		st.logs[name] = l
	}
	return l
}

func (st *frameState) analyzeOptions(opts Options) analyze.Options {
	return analyze.Options{
		Dirs: []string{opts.Dir}, Gates: opts.Gates, Until: opts.Until,
		// The counterfactual spans judge load edges, not a poll's cells:
		// a frame does without them.
		Spans: []float64{},
		Scrapes: func(target string, s analyze.ScrapeRow) {
			l := st.get(target)
			t := cmp.Or(s.Scheduled, s.Start)
			st.latest = max(st.latest, t)
			l.prevAny, l.lastAny = l.lastAny, t
			l.rows = append(l.rows, s)
			if s.Outcome != capture.OutcomeMissed {
				l.last = s
			}
			l.rows = trimRows(l.rows, float64(t)/1e9-st.window)
		},
		Polls: func(target string, p *analyze.Poll) {
			l := st.get(target)
			pl := pollOf(p)
			l.polls = append(l.polls, pl)
			l.polls = trimPolls(l.polls, p.T-st.window)
			if sp, ok := st.spanAt(p.T); ok {
				ls := st.levels[target]
				if ls == nil || ls.span != sp {
					ls = &levelSum{span: sp}
					st.levels[target] = ls
				}
				ls.add(&pl)
			}
			l.spark = append(l.spark, pl.decode.Value)
			if len(l.spark) > 2*st.spark {
				l.spark = append(l.spark[:0], l.spark[len(l.spark)-st.spark:]...)
			}
		},
	}
}

// frame makes the frame of what analyze returned, at until (0: the latest
// row's tick).
func (st *frameState) frame(res *analyze.Result, until int64) *Frame {
	f := &Frame{Dir: st.dir, Window: st.window, Targets: []Target{}, Incidents: res.Incidents, Problems: res.Problems}
	if f.Incidents == nil {
		f.Incidents = []findings.Incident{}
	}
	for _, in := range res.Inputs {
		f.Recording = f.Recording || in.Journals > 0
	}
	f.T = float64(st.latest) / 1e9
	if until != 0 {
		f.T = float64(until) / 1e9
	}
	for i := range res.Targets {
		rt := &res.Targets[i]
		if f.Start == 0 || rt.Summary.First != 0 && rt.Summary.First < f.Start {
			f.Start = rt.Summary.First
		}
		f.Targets = append(f.Targets, target(rt, st.get(rt.Name), res.Incidents, st.latest, st.spark))
	}
	if ps := res.Fleet.Polls; len(ps) > 0 {
		fp := ps[len(ps)-1]
		f.Fleet = &fp
	}
	if sp, ok := st.spanAt(f.T); ok {
		f.Phase = sp.name
	}
	f.Level = st.level(f.T)
	return f
}

// marks reads the named phases marked up to until (0: all), as analyze
// pairs marks: a phase ends at its end mark, else at the next mark that
// starts a phase. Unreadable marks are none.
func (st *frameState) marks(until int64) {
	st.spans = st.spans[:0]
	ms, _, err := capture.ReadMarks(st.dir)
	if err != nil {
		return
	}
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, func(a, b capture.Mark) int { return cmp.Compare(a.TNs, b.TNs) })
	for _, m := range ms {
		// A mark after the instant is not read yet.
		if until != 0 && m.TNs > until {
			break
		}
		t := float64(m.TNs) / 1e9
		n := len(st.spans)
		switch {
		case !m.End:
			if n > 0 && st.spans[n-1].end == 0 {
				st.spans[n-1].end = t
			}
			st.spans = append(st.spans, phaseSpan{name: m.Name, start: t})
		case n > 0 && st.spans[n-1].end == 0 && st.spans[n-1].name == m.Name:
			st.spans[n-1].end = t
		}
	}
}

// spanAt is the named phase open at t (Unix seconds).
func (st *frameState) spanAt(t float64) (phaseSpan, bool) {
	for i := len(st.spans) - 1; i >= 0; i-- {
		sp := st.spans[i]
		if sp.start > t {
			continue
		}
		if sp.end == 0 || t < sp.end {
			return sp, true
		}
		break
	}
	return phaseSpan{}, false
}

// level is the sweep level open at t, with the load offered over its
// polls so far.
func (st *frameState) level(t float64) Level {
	lv := Level{Source: OfferedSource}
	sp, ok := st.spanAt(t)
	for _, s := range st.spans {
		if s.start > t || strings.EqualFold(s.name, analyze.WarmupPhase) {
			continue
		}
		lv.Of++
		if ok && s == sp {
			lv.Index = lv.Of
		}
	}
	switch {
	case !ok:
		lv.Reason = "no named phase open (llmrec mark); without marks the levels are the steady phases analyze finds after the run"
		return lv
	case lv.Index == 0:
		lv.Reason = "the open phase is the warmup: no level"
		return lv
	}
	lv.Name, lv.Start = sp.name, sp.start
	// In name order: the same sum in every frame.
	for _, name := range slices.Sorted(maps.Keys(st.logs)) {
		ls := st.levels[name]
		// Polls read before the phase's mark was: summed again from the window kept.
		if ls == nil || ls.span != sp {
			ls = &levelSum{span: sp}
			for i := range st.logs[name].polls {
				if p := &st.logs[name].polls[i]; p.t >= sp.start && p.t <= t {
					ls.add(p)
				}
			}
			st.levels[name] = ls
		}
		lv.Polls += ls.n
		if ls.nRun == 0 {
			continue
		}
		x := ls.run / float64(ls.nRun)
		if ls.nWait > 0 {
			x += ls.wait / float64(ls.nWait)
		}
		lv.Offered = rate.Some(lv.Offered.V + x)
		lv.OfferedOf++
	}
	if !lv.Offered.Valid {
		lv.Reason = "no target published requests_running over the level's polls"
	}
	return lv
}

func pollOf(p *analyze.Poll) pollLog {
	cell := func(name string) engine.Cell {
		c, _ := p.Cells.Get(name)
		c.Notes = nil // a frame keeps no per-poll slices
		return c
	}
	pl := pollLog{t: p.T, decode: cell(engine.DecodeTokensPerSecond), prompt: cell(engine.PromptTokensPerSecond),
		running: cell(engine.RequestsRunning), waiting: cell(engine.RequestsWaiting), kv: cell(engine.KVCacheUsageRatio)}
	pl.ttft, pl.ttftOf = latency(p.Cells, engine.TTFT)
	pl.itl, pl.itlOf = latency(p.Cells, engine.ITL)
	return pl
}

// latency is a histogram's p50 cell, or its mean when the p50 is not
// exported (an engine with a summary, not buckets), and its name.
func latency(cs engine.Cells, base string) (engine.Cell, string) {
	p50, _ := cs.Get(base + engine.SuffixP50)
	if p50.Reason != engine.ReasonNotExported {
		p50.Notes = nil
		return p50, base + engine.SuffixP50
	}
	mean, _ := cs.Get(base + engine.SuffixMean)
	// Neither exported: the p50 says so.
	if mean.Reason == engine.ReasonNotExported {
		return p50, base + engine.SuffixP50
	}
	mean.Notes = nil
	return mean, base + engine.SuffixMean
}

func trimRows(rows []analyze.ScrapeRow, from float64) []analyze.ScrapeRow {
	i := 0
	for i < len(rows)-1 && float64(cmp.Or(rows[i].Scheduled, rows[i].Start))/1e9 < from {
		i++
	}
	// Compacted now and then, not on every row.
	if i > len(rows)/2 {
		return append(rows[:0], rows[i:]...)
	}
	return rows
}

func trimPolls(ps []pollLog, from float64) []pollLog {
	i := 0
	for i < len(ps)-1 && ps[i].t < from {
		i++
	}
	if i > len(ps)/2 {
		return append(ps[:0], ps[i:]...)
	}
	return ps
}

// target makes one target's line.
func target(rt *analyze.Target, l *targetLog, incs []findings.Incident, latest int64, spark int) Target {
	t := Target{Name: rt.Name, Engine: rt.Engine, State: StateUnknown, Why: "no poll yet", ScrapeP99: rate.Num{}}
	var ttfb []float64
	for _, r := range l.rows {
		switch r.Outcome {
		case capture.OutcomeMissed:
			t.Missed++
		case capture.OutcomeOK:
			if r.FirstByte != 0 && r.Start != 0 {
				ttfb = append(ttfb, float64(r.FirstByte-r.Start)/1e9)
			}
		default:
			t.Failed++
		}
		t.Scrapes++
	}
	if len(ttfb) > 0 {
		slices.Sort(ttfb)
		t.ScrapeP99 = rate.Some(ttfb[int(math.Ceil(0.99*float64(len(ttfb))))-1])
	}
	if n := len(l.spark); n > 0 {
		t.Spark = slices.Clone(l.spark[max(0, n-spark):])
	}
	for i := range incs {
		in := &incs[i]
		if in.Kind == findings.KindRestart && string(in.Target) == rt.Name {
			t.Restart = cmp.Or(in.T, in.Start)
		}
	}
	if len(l.polls) > 0 {
		p := l.polls[len(l.polls)-1]
		t.LastPoll = p.t
		t.Decode, t.Prompt, t.Running, t.Waiting, t.KV = p.decode, p.prompt, p.running, p.waiting, p.kv
		t.TTFT, t.TTFTOf, t.ITL, t.ITLOf = p.ttft, p.ttftOf, p.itl, p.itlOf
		if t.KV.Value.Valid {
			t.KVBand = band(t.KV.Value.V)
		}
		t.Saturating = rising(l.polls)
	}
	t.State, t.Why = state(&t, l, incs, latest)
	return t
}

// state says what a target is doing at its last row.
func state(t *Target, l *targetLog, incs []findings.Incident, latest int64) (string, string) {
	// A target without a row for DownIntervals of its intervals is no
	// longer answering the recorder's ticks.
	if iv := l.lastAny - l.prevAny; l.prevAny != 0 && iv > 0 && latest-l.lastAny > DownIntervals*iv {
		return StateDown, fmt.Sprintf("no row for %.1f s", float64(latest-l.lastAny)/1e9)
	}
	if l.last.Outcome != "" && l.last.Outcome != capture.OutcomeOK {
		return StateDown, "last scrape: " + l.last.Outcome
	}
	if len(l.polls) == 0 {
		return StateUnknown, "no poll yet"
	}
	for i := range incs {
		in := &incs[i]
		// An engine stall that lasts to the last poll is under way.
		if in.Kind == findings.KindEngineStall && string(in.Target) == t.Name && in.End.Valid && in.End.V >= t.LastPoll {
			return StateStalled, fmt.Sprintf("progress counter frozen for %.1f s (engine_stall)", in.End.V-in.Start.V)
		}
	}
	switch {
	case t.Running.Value.Valid && t.Running.Value.V > 0:
		return StateBusy, fmt.Sprintf("%g running", t.Running.Value.V)
	case t.Decode.Value.Valid && t.Decode.Value.V > 0:
		return StateBusy, "decoding"
	case t.Running.Value.Valid:
		return StateIdle, "0 running"
	case t.Decode.Value.Valid:
		return StateIdle, "no decode"
	}
	return StateUnknown, "running and decode unknown"
}

// band is a KV usage ratio's band.
func band(v float64) string {
	switch {
	case v >= KVSaturated:
		return BandSaturated
	case v >= KVWarn:
		return BandWarn
	}
	return BandOK
}

// rising is the slope test of the waiting queue over the window's polls:
// a positive least-squares slope and a rise of at least one request from
// the first value to the last.
func rising(ps []pollLog) bool {
	var xs, ys []float64
	for _, p := range ps {
		if p.waiting.Value.Valid {
			xs, ys = append(xs, p.t), append(ys, p.waiting.Value.V)
		}
	}
	// Too few points make no slope.
	if len(xs) < SlopePolls {
		return false
	}
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/float64(len(xs)), my/float64(len(xs))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	return sxx > 0 && sxy/sxx > 0 && ys[len(ys)-1]-ys[0] >= 1
}
