package analyze

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/textproto"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/internal/hugeheap"
	"github.com/llmrec/llmrec/analyze/internal/order"
	"github.com/llmrec/llmrec/analyze/internal/prefault"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/analyze/sweep"
	"github.com/llmrec/llmrec/internal/engines"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/redact"
)

// Options configure [Analyze].
type Options struct {
	// Dirs are the run folders. Their segments are read per target in time
	// order: sessions by start, segments by number, a live journal last.
	Dirs []string
	// Gates are the estimator's span and gates (zero fields take the
	// defaults of package rate).
	Gates rate.Config
	// SkipPolls leaves Target.Polls empty: the summary alone, which keeps
	// a few numbers per poll instead of every cell.
	SkipPolls bool
	// Blocks adds to every named and steady phase's figures their values
	// over non-overlapping blocks of the phase (phases.Figure.Blocks), the
	// samples llmrec diff compares.
	Blocks bool
	// Progress, when set, is called after each file is read.
	Progress func(Progress)
	// Spans are the counterfactual spans in seconds: the same polls are
	// replayed under each (one read of the files) to show how the load
	// edges would have settled. Nil means DefaultSpans; a span equal to
	// the published one is left out, being the published one.
	Spans []float64
	// Caps are the plausibility caps of the rate cells (see
	// findings.ParseCap).
	Caps []findings.Cap
	// Spool, when set and polls are kept, is a folder for temporary files:
	// each target's polls are encoded there as they are replayed instead of
	// held in memory (a day of 8 engines is gigabytes of cells). Target.Polls
	// stays empty and Result.WriteJSON copies them from the spool; the
	// caller removes the folder after writing.
	Spool string
	// Polls, when set and polls are kept, is handed each target's polls as
	// they are replayed, in the order Target.Polls would hold them, and
	// Target.Polls stays empty (Spool is not used). The summaries and
	// findings see every poll all the same. It is called one call at a
	// time (from the replay's workers, see Workers), each target's polls
	// in order, and a poll's cells are valid only during the call: a
	// report keeps what it draws (render.Polls).
	Polls func(target string, p *Poll)
	// Workers is how many goroutines replay the targets: 0 is
	// runtime.GOMAXPROCS, 1 the serial path (the files are read and
	// every target replayed on Analyze's goroutine). With more, one
	// goroutine reads the files and hands each target's rows, in order,
	// to the worker that owns the target; the result is the serial
	// path's. Polls is then called from the workers, one call at a time.
	// A read with Until or Scrapes (llmrec top) is serial.
	Workers int
	// Phases are named phases given at analysis time (--phases FILE);
	// marks in the run folders add theirs (see package phases).
	Phases []phases.Phase
	// Clients are load generators' own records of the run (--client FILE,
	// read by client.ReadFile): their phases are named phases of source
	// "client", and each is set beside the engines' figures over the same
	// bounds (Result.Client).
	Clients []*client.Run
	// Until, when not 0, is the instant (Unix nanoseconds) the recording is
	// read up to: rows scheduled after it (sent after it, in files without
	// the scheduled column) are passed over, and so are marks made after
	// it. llmrec top replays a finished run by it.
	Until int64
	// Scrapes, when set, is handed every /metrics row of a target (ok or
	// not, missed ticks too) as it is replayed, before its poll if it is
	// one: what llmrec top needs of the scrape's health.
	Scrapes func(target string, s ScrapeRow)
	// SLOs are the service-level objectives each level of the sweep is
	// judged by (--slo); GPUs and GPUHourUSD give its per-GPU throughput
	// and cost (--gpus, --gpu-hour-usd); 0 unknown.
	SLOs       []sweep.SLO
	GPUs       int
	GPUHourUSD float64
}

// ScrapeRow is one /metrics row's outcome and times (Unix nanoseconds,
// 0 when null): Options.Scrapes.
type ScrapeRow struct {
	Outcome                          string
	Scheduled, Start, FirstByte, End int64
}

// DefaultSpans are the counterfactual spans when none are given: a window
// of about two polls, and the default published span.
var DefaultSpans = []float64{2, 10}

// Progress reports the files read so far.
type Progress struct {
	File    string // the file just read
	Done    int    // files read, including this one
	Total   int    // files to read
	Rows    int64  // rows read so far
	Samples int64  // samples replayed so far
}

// Analyze reads every segment of the run folders and replays each target's
// polls through its engine reader and estimator. A folder that cannot be
// opened is an error; a file that cannot be read is a Problem in the result
// and the rest is analysed. Each segment is checked against its seal
// first (capture.Seals.Verify): one that differs is skipped whole.
func Analyze(opts Options) (*Result, error) {
	an, res, err := replay(opts)
	if err != nil {
		return nil, err
	}
	an.tail(res)
	return res, nil
}

// replay reads and replays the run folders (Analyze up to its serial
// tail): the result holds the inputs, problems and targets.
func replay(opts Options) (*analyzer, *Result, error) {
	if len(opts.Dirs) == 0 {
		return nil, nil, errors.New("analyze: no run folder")
	}
	cfg := opts.Gates.WithDefaults()
	res := &Result{
		Schema: Schema, Generator: "llmrec " + capture.Version, Gates: gatesOf(cfg),
		Inputs: []Input{}, Problems: []Problem{}, Targets: []Target{},
	}
	res.Gates.SpanByKind = opts.Gates.Span == 0
	res.Gates.CompletionSpans = []CompletionSpan{}
	res.Gates.Floors = []TargetFloor{}
	var files []file
	metas := map[string]*targetMeta{}
	var marks []capture.Mark
	var markProblems []string
	for _, dir := range opts.Dirs {
		run, err := capture.Open(dir)
		if err != nil {
			return nil, nil, err
		}
		seals, err := capture.ReadSeals(dir)
		if err != nil {
			// The files of a bad line read as unverified.
			res.Problems = append(res.Problems, Problem{File: dir, Error: err.Error(), Kind: ProblemSeals})
		}
		ms, bad, err := capture.ReadMarks(dir)
		if err != nil {
			markProblems = append(markProblems, err.Error())
		}
		if opts.Until != 0 {
			// A mark made after the instant read up to is not known yet.
			ms = slices.DeleteFunc(ms, func(m capture.Mark) bool { return m.TNs > opts.Until })
		}
		marks, markProblems = append(marks, ms...), append(markProblems, bad...)
		in, fs := inputOf(run)
		for i := range fs {
			fs[i].seals = seals
		}
		res.Inputs = append(res.Inputs, in)
		files = append(files, fs...)
		metaOf(run, metas)
	}
	slices.SortStableFunc(files, func(a, b file) int {
		return cmp.Or(cmp.Compare(a.start, b.start), strings.Compare(a.run, b.run), cmp.Compare(a.seg, b.seg),
			cmp.Compare(boolInt(a.live), boolInt(b.live)))
	})
	hugeheap.Advise(heapReserve)

	an := newAnalyzer(opts)
	an.metas = metas
	// The headers column is read always: an engine may send its process
	// start by itself (engines.ProcessStartHeader), configured or not.
	an.r.Headers = true
	deliver := an.row
	var fd *feeder
	if n := an.workers(); n > 1 {
		fd = newFeeder(an, n)
		deliver = fd.row
	} else {
		an.r.Same = an.sameIdx
	}
	for i, f := range files {
		var err error
		before := an.rows
		// The next segment is checked and opened while this one is read.
		if i+1 < len(files) && !files[i+1].live {
			an.r.Ahead(files[i+1].seals, files[i+1].path)
		}
		if f.live {
			var rows []capture.Scrape
			rows, err = capture.ReadLive(f.path)
			an.r.Journal(rows, deliver)
		} else {
			_, err = an.r.ReadSealed(f.seals, f.path, deliver)
		}
		if err != nil {
			res.Problems = append(res.Problems, readProblem(f.path, err, an.rows-before))
		}
		if opts.Progress != nil {
			opts.Progress(Progress{File: f.path, Done: i + 1, Total: len(files), Rows: an.rows, Samples: an.samples})
		}
	}
	if fd != nil {
		fd.finish()
	}
	res.Targets = an.finish()
	res.Gates.CompletionSpans = an.completionSpans()
	res.Gates.Floors = append([]TargetFloor{}, an.floors...)
	slices.SortFunc(res.Gates.Floors, func(a, b TargetFloor) int { return strings.Compare(a.Target, b.Target) })
	// A poll that could not be spooled would be missing from the document.
	if an.err != nil {
		res.Close()
		return nil, nil, an.err
	}
	an.marks, an.markProblems = marks, markProblems
	return an, res, nil
}

// tail is Analyze after the replay: the findings, the phases, the answer
// and the sweep, from what the replay left in the analyzer.
func (an *analyzer) tail(res *Result) {
	// The fleet is computed beside the phases, the answer and the sweep,
	// which do not read it.
	f, fleet := findings.Start(an.run())
	res.Findings = *f
	an.phases(res, an.marks, an.markProblems)
	res.Answer = res.answer()
	res.Sweep = an.sweep(res)
	res.Fleet = fleet()
	res.Spans = append([]float64{}, an.spans...)
	res.Caps = append([]findings.Cap{}, an.opts.Caps...)
}

// heapReserve is the heap a process's first replay has backed by huge
// pages (hugeheap). Measured on 8 simulated engines at 2 s: an hour
// (14,400 polls) maps about 60 MB of heap, twice that in a process that
// held a heap before (a benchmark's reading, the replays before). A day
// grows past it as before: sized for the day from the manifests (1 KiB a
// tick), its replay took 0.74-0.93x the CPU but peaked 11-40 MiB higher
// (a huge page is resident whole), above what a day's analysis is held
// to. What is advised and never used is address space, not memory.
const heapReserve = 128 << 20

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// file is one segment or live journal to read.
type file struct {
	path  string
	run   string
	seg   int
	start int64 // the session's start from its manifest; 0 when unknown
	live  bool
	seals capture.Seals // of the file's folder
}

// inputOf lists a run folder's files and describes it.
func inputOf(r *capture.Run) (Input, []file) {
	in := Input{Dir: r.Dir, Sessions: []string{}, Segments: len(r.Segments), Journals: len(r.Live), Crashed: len(r.Crashed),
		Recovered: r.Recovered, Foreign: r.Foreign, Recordings: []Recording{}}
	if in.Recovered == nil {
		in.Recovered = []capture.Recovery{}
	}
	if in.Foreign == nil {
		in.Foreign = []string{}
	}
	starts := map[string]int64{}
	for _, m := range r.Manifests {
		starts[m.RunID] = m.StartNs
		in.Sessions = append(in.Sessions, m.RunID)
		// A manifest written by an older version may hold what this one
		// redacts; what the analysis passes on is redacted again.
		targets := make([]capture.ManifestTarget, len(m.Targets))
		for i, t := range m.Targets {
			t.URL = redact.URL(t.URL)
			targets[i] = t
		}
		var warnings []string
		for _, w := range m.Warnings {
			warnings = append(warnings, redact.Text(w))
		}
		in.Recordings = append(in.Recordings, Recording{RunID: m.RunID, Start: m.Start, End: m.End, Version: m.Version,
			Targets: targets, Config: redact.Tree(m.Config), Import: redactedImport(m.Import), Warnings: warnings})
	}
	var out []file
	add := func(path string, live bool) {
		run, seg := splitName(filepath.Base(path))
		if _, ok := starts[run]; !ok {
			starts[run] = 0
			in.Sessions = append(in.Sessions, run)
		}
		out = append(out, file{path: path, run: run, seg: seg, start: starts[run], live: live})
	}
	for _, p := range r.Segments {
		add(p, false)
	}
	for _, p := range r.Journals() {
		add(p, true)
	}
	return in, out
}

// splitName splits "RUN-000012.parquet" (or a merged "RUN-000001_000010.parquet")
// into RUN and its first segment number; a name of another shape is its own
// run, segment 0.
func splitName(name string) (run string, seg int) {
	stem := strings.TrimSuffix(name, filepath.Ext(name))
	i := strings.LastIndexByte(stem, '-')
	if i <= 0 {
		return stem, 0
	}
	first, _, _ := strings.Cut(stem[i+1:], "_")
	n, err := strconv.Atoi(first)
	if err != nil {
		return stem, 0
	}
	return stem[:i], n
}

// analyzer replays batches of rows into per-target trackers.
type analyzer struct {
	opts    Options
	cfg     rate.Config
	spans   []float64 // the counterfactual spans replayed
	floors  []TargetFloor
	r       *capture.ColumnReader // nil in a worker (feeder)
	tab     *capture.Strings
	targets map[int32]*targetState
	metas   map[string]*targetMeta
	inputs  map[string]*phases.Input // by target, once the phases are measured: what the sweep reads again
	rows    int64
	samples int64
	err     error // the first spool failure
	// looked is the row whose series known looked up, as the reader is
	// about to deliver it; nil when it did not.
	looked *capture.Row
	// inPlace says looked came from the reader's Same hook (sameIdx):
	// every series where the target's last poll had it, none read.
	inPlace bool

	metricsID, okID, httpErrID int32

	// memo is the series' target-independent facts, shared by the
	// trackers of this analyzer's targets (one goroutine's): made with
	// the first target.
	memo *engine.Memo

	// seen, in a Session, is the last seq replayed of each (run, target,
	// endpoint); untilSkipped says a row after Options.Until was passed
	// over since it was last cleared.
	seen         map[[3]int32]int64
	untilSkipped bool

	// marks and markProblems are the run folders' phase marks and the
	// lines that could not be read, for the tail.
	marks        []capture.Mark
	markProblems []string
}

func newAnalyzer(opts Options) *analyzer {
	tab := capture.NewStrings()
	a := &analyzer{
		opts: opts, cfg: opts.Gates, r: capture.NewColumnReader(tab), tab: tab, targets: map[int32]*targetState{},
		metricsID: tab.IDString(capture.EndpointMetrics), okID: tab.IDString(capture.OutcomeOK),
		httpErrID: tab.IDString(capture.OutcomeHTTPError),
	}
	a.r.Known = a.known
	a.r.WantBody = a.wantBody
	published := opts.Gates.WithDefaults().Span
	spans := opts.Spans
	if spans == nil {
		spans = DefaultSpans
	}
	for _, sp := range spans {
		// The published span is replayed already; a duplicate adds nothing.
		// With spans by counter kind (no span asked for), the configured
		// span is the every-step counters' counterfactual: it stays.
		if sp <= 0 || (sp == published && opts.Gates.Span != 0) || slices.Contains(a.spans, sp) {
			continue
		}
		a.spans = append(a.spans, sp)
	}
	return a
}

// targetState is one target's replay.
type targetState struct {
	out   Target
	tr    *engine.Tracker
	keyOf map[uint64]int32 // (name id, labels id) → tracker key
	// prevK and prevI are the (name, labels) and tracker key of each
	// sample of the last poll, by position: targets print their series in
	// a stable order, so most lookups are one compare. prevI is -1 for a
	// series not registered yet.
	prevK []uint64
	prevI []int32
	cells engine.Cells
	sink  func(string, *Poll) // Options.Polls
	stats []headStat
	// loading is the evidence of an engine's "loading" answer since the
	// last poll, "" none: the next poll is a new process's.
	loading string
	fw      *findingsState // what the run findings keep of the target
	ph      *phases.Log    // what the phase figures keep of it
	// unreg says prevI may hold a -1: a series lookup found unregistered.
	unreg bool
	// idsChanged says prevI changed since the last poll was logged.
	idsChanged bool
	// idx is the first of prevK as dictionary indexes (the serial
	// path's Same hook); a lookup that changes prevK clears it.
	idx   lastIdx
	spool *spool // its polls, when spooled (Options.Spool)
	// interval is the target's cadence from its manifest, seconds (0
	// unknown); lastT the time of its last poll: a longer hole breaks lines.
	interval, lastT float64
	// leaves are when discovery removed the target from the target set
	// (Unix seconds): a line breaks across each.
	leaves []float64

	// psHeader is the response header that carries the process start
	// ("" none), lastPS its last value seen (redacted), psMoved the
	// evidence of its change since the last poll.
	psHeader, lastPS, psMoved string

	// pollsDone is how many of out.Polls are faulted in (faultAhead).
	pollsDone int
}

// headStat gathers one headline cell over the polls.
type headStat struct {
	values, windows []float64
	nulls           map[string]int
	// withheld counts the refusals that hid a needed value, by reason;
	// normal those that did not (see Summary.Normal); held says the last
	// poll was a jump hold, judged by the next poll.
	withheld, normal map[string]int
	held             bool
	// run polls in a row were null for reason runReason (a refusal of
	// the estimator when runGate), not yet counted in nulls: a headline
	// is null for the same reason poll after poll.
	runReason string
	runGate   bool
	run       int
	// vdone and wdone are how many values and windows are faulted in, of
	// their arrays (faultAhead).
	vdone, wdone int
}

var headIndex = func() []int {
	out := make([]int, len(engine.Headline))
	for i, h := range engine.Headline {
		out[i] = slices.Index(engine.Canonical, h)
	}
	return out
}()

func (a *analyzer) target(id, hint int32) *targetState {
	if st, ok := a.targets[id]; ok {
		return st
	}
	h := a.tab.Str(hint)
	cfg := a.cfg
	if m := a.metas[a.tab.Str(id)]; m != nil {
		if f, ok := floorFor(a.opts.Gates, m.interval); ok {
			cfg.MinWindow = f
			a.floors = append(a.floors, TargetFloor{Target: a.tab.Str(id), MinWindow: f, Interval: m.interval})
		}
	}
	st := &targetState{
		out: Target{Name: a.tab.Str(id), Hint: h, Scrapes: map[string]int{}, OtherEndpoints: map[string]int{},
			Polls: []Poll{}},
		tr:    engine.NewTracker(h, cfg),
		keyOf: make(map[uint64]int32),
		stats: make([]headStat, len(engine.Headline)),
		sink:  a.opts.Polls,
	}
	if a.memo == nil {
		a.memo = engine.NewMemo()
	}
	st.tr.UseMemo(a.memo)
	// Without the polls only the summary's cells are read.
	if a.opts.SkipPolls && wantSummary {
		st.tr.Want(summaryCells...)
	}
	// Counters that move on every engine step are windowed over the
	// target's interval unless a span was asked for (docs/analysis-format.md).
	if m := a.metas[st.out.Name]; m != nil && m.interval > 0 && a.opts.Gates.Span == 0 {
		st.tr.SetStepSpan(m.interval)
		// Those that move once per request get the request duration.
		st.tr.SetCompletionSpan(m.interval, CompletionSpanWindow)
	}
	st.fw = newFindingsState(st.out.Name, st.tr, cfg, a.spans)
	if m := a.metas[st.out.Name]; m != nil {
		st.interval, st.psHeader = m.interval, m.psHeader
		st.leaves = m.leaves()
	}
	st.ph = phases.NewLog(a.ticksHint(st.out.Name))
	if m := a.metas[st.out.Name]; m != nil && m.ticks > 0 {
		// Sized once from the manifests: growing per-poll records is a
		// good part of the replay's allocation.
		n := min(m.ticks, maxTicksHint)
		st.fw.t.Rows = make([]findings.Row, 0, n)
		hugePages(st.fw.t.Rows)
		st.fw.t.Polls.Grow(n)
		if !a.opts.SkipPolls && a.opts.Polls == nil {
			st.out.Polls = make([]Poll, 0, n)
			hugePages(st.out.Polls)
		}
		for i := range st.stats {
			st.stats[i].values, st.stats[i].windows = make([]float64, 0, n), make([]float64, 0, n)
		}
	}
	for i := range st.stats {
		st.stats[i].nulls, st.stats[i].withheld, st.stats[i].normal = map[string]int{}, map[string]int{}, map[string]int{}
	}
	if a.opts.Spool != "" && !a.opts.SkipPolls && a.opts.Polls == nil {
		var err error
		if st.spool, err = newSpool(a.opts.Spool); err != nil && a.err == nil {
			a.err = err
		}
	}
	a.targets[id] = st
	return st
}

// isPoll reports whether a row is a poll: a complete, parsed answer.
func (a *analyzer) isPoll(w *capture.Row) bool {
	return w.Endpoint == a.metricsID && w.Outcome == a.okID && w.FirstByte != 0
}

// wantBody asks for the body of a /metrics answer of 503: an engine may
// say there that it is loading its model, which is a restart.
func (a *analyzer) wantBody(w *capture.Row) bool {
	if a.passed(w) {
		return false
	}
	if w.Endpoint != a.metricsID || w.Outcome != a.httpErrID || w.Err < 0 || !strings.HasPrefix(a.tab.Str(w.Err), "HTTP 503") {
		return false
	}
	// Only llama.cpp says it is loading so (its forks too); reading a body
	// decompresses the page of bodies it is in, so a known other engine's
	// 503 is not read.
	st, ok := a.targets[w.Target]
	if !ok {
		return true
	}
	id, how := st.tr.Engine()
	return how == "" || id == engine.LlamaCpp
}

// isLoading reports whether a 503 body is an engine loading its model:
// llama.cpp's {"error":{"code":503,"message":"Loading model",...}}.
func isLoading(body []byte) bool {
	return bytes.Contains(bytes.ToLower(body), []byte("loading model"))
}

// stamp formats Unix nanoseconds in UTC to the millisecond; "?" for 0.
func stamp(ns int64) string {
	if ns == 0 {
		return "?"
	}
	return time.Unix(0, ns).UTC().Format("15:04:05.000")
}

// known looks up a row's series before the reader delivers it, leaving
// their keys in prevI for row, and reports whether all are registered:
// only a row with a new series needs its family and type read.
func (a *analyzer) known(w *capture.Row) bool {
	a.looked, a.inPlace = nil, false
	// A row that row passes over needs nothing decoded.
	if a.passed(w) {
		return true
	}
	// Only a poll's samples are replayed.
	if !a.isPoll(w) {
		return true
	}
	// A new target's series are all new.
	st, ok := a.targets[w.Target]
	if !ok {
		return false
	}
	a.looked = w
	return st.lookup(w)
}

// sameIdx is the serial path's Same: a poll whose dictionary indexes are
// those of the target's last poll's series, under the same dictionaries,
// has every series where that poll had it, as lookup would find them
// (the feeder's sameIdx against targetState's own record).
func (a *analyzer) sameIdx(w *capture.Row) bool {
	a.looked, a.inPlace = nil, false
	// A row that row passes over, or that is not a poll, is asked of known.
	if a.passed(w) || !a.isPoll(w) {
		return false
	}
	st, ok := a.targets[w.Target]
	if !ok || !st.idx.same(w) {
		return false
	}
	// A series lookup found unregistered is registered by row.
	if st.unreg && slices.Contains(st.prevI[:len(w.NameIdx)], -1) {
		return false
	}
	a.looked, a.inPlace = w, true
	return true
}

// lookup sets prevK and prevI to the poll's series and reports whether
// every one is registered.
func (st *targetState) lookup(w *capture.Row) bool {
	all := true
	for j, name := range w.Name {
		k := uint64(uint32(name))<<32 | uint64(uint32(w.Labels[j]))
		if j < len(st.prevK) && st.prevK[j] == k && st.prevI[j] >= 0 {
			continue
		}
		id, ok := st.keyOf[k]
		if !ok {
			id, all = -1, false
			st.unreg = true
		}
		st.idsChanged, st.idx.has = true, false
		if j < len(st.prevK) {
			st.prevK[j], st.prevI[j] = k, id
		} else {
			st.prevK, st.prevI = append(st.prevK, k), append(st.prevI, id)
		}
	}
	return all
}

// register keys sample j of a poll, a series lookup did not find (or
// found twice in the poll), with the tracker and the findings.
func (st *targetState) register(tab *capture.Strings, w *capture.Row, j int) {
	k := st.prevK[j]
	id, ok := st.keyOf[k]
	if !ok {
		s := engine.Series{Family: tab.Str(w.Family[j]), Type: tab.Str(w.Type[j]),
			Name: tab.Str(w.Name[j]), Labels: tab.Str(w.Labels[j])}
		id = st.tr.Key(s)
		st.keyOf[k] = id
		st.fw.key(id, s)
		st.ph.Key(id, s)
	}
	st.prevI[j] = id
}

// workers is how many goroutines replay the targets (Options.Workers).
// A read up to an instant or with a Scrapes hook (llmrec top) is replayed
// by one: those hooks keep their state in the one analyzer.
func (a *analyzer) workers() int {
	if a.opts.Until != 0 || a.opts.Scrapes != nil {
		return 1
	}
	return cmp.Or(a.opts.Workers, runtime.GOMAXPROCS(0))
}

// passed reports whether row will pass over w: it is after the instant
// read up to, or a session replayed it before.
func (a *analyzer) passed(w *capture.Row) bool {
	if a.opts.Until != 0 && cmp.Or(w.Scheduled, w.Start) > a.opts.Until {
		return true
	}
	if a.seen == nil {
		return false
	}
	last, ok := a.seen[[3]int32{w.Run, w.Target, w.Endpoint}]
	return ok && w.Seq <= last
}

// row replays one row: a poll when it is an ok /metrics scrape. The
// reader has asked known about it first.
func (a *analyzer) row(w *capture.Row) {
	tab := a.tab
	// A row after the instant read up to is not known yet.
	if a.opts.Until != 0 && cmp.Or(w.Scheduled, w.Start) > a.opts.Until {
		a.untilSkipped = true
		return
	}
	// A session replays a row once: one read before (a journal's row
	// again in its sealed segment, or a merged file's) is passed over.
	if a.seen != nil {
		k := [3]int32{w.Run, w.Target, w.Endpoint}
		if last, ok := a.seen[k]; ok && w.Seq <= last {
			return
		}
		a.seen[k] = w.Seq
	}
	a.rows++
	st := a.target(w.Target, w.Engine)
	if w.Endpoint != a.metricsID {
		st.out.OtherEndpoints[tab.Str(w.Endpoint)]++
		return
	}
	st.out.Scrapes[tab.Str(w.Outcome)]++
	if a.opts.Scrapes != nil {
		a.opts.Scrapes(st.out.Name, ScrapeRow{Outcome: tab.Str(w.Outcome), Scheduled: w.Scheduled, Start: w.Start, FirstByte: w.FirstByte, End: w.End})
	}
	st.fw.row(tab, w)
	st.processStart(w)
	// Only a complete, parsed answer is a poll.
	if !a.isPoll(w) {
		if w.Body != nil && isLoading(w.Body) && st.loading == "" {
			st.loading = "the engine answered 503 Loading model at " + stamp(w.Start)
		}
		return
	}
	// Known looked the series up, unless the target is new (or the row
	// came from a journal).
	inPlace := a.looked == w && a.inPlace
	if a.looked != w {
		st.lookup(w)
	}
	a.looked, a.inPlace = nil, false
	// The serial path keeps the poll's indexes for its Same hook.
	if a.r != nil && a.r.Same != nil {
		st.idx.keep(w, inPlace)
	}
	T := float64(w.FirstByte) / 1e9
	st.tr.Begin(T, float64(w.Start)/1e9)
	if st.loading != "" {
		st.tr.MarkRestart(st.loading)
		st.loading = ""
	}
	if st.psMoved != "" {
		st.tr.MarkRestart(st.psMoved)
		st.psMoved = ""
	}
	st.fw.begin(T, float64(w.Start)/1e9)
	// Value has a poll's every sample (a worker's row looked up already
	// has no names).
	a.samples += int64(len(w.Value))
	ids := st.prevI[:len(w.Value)]
	// Only a lookup that found a series unregistered left a -1 in prevI.
	if st.unreg {
		for j, id := range ids {
			if id < 0 {
				st.register(tab, w, j)
			}
		}
		st.unreg = slices.Contains(st.prevI[len(ids):], -1)
	}
	st.tr.SetAll(ids, w.Value)
	st.fw.setAll(ids, w.Value, st.idsChanged)
	st.cells = st.tr.End(st.cells)
	if err := st.record(T, tab.Str(w.Run), w.Seq, a.opts.SkipPolls); err != nil && a.err == nil {
		a.err = err
	}
	st.fw.end(st.cells)
	if st.tr.Restart() != "" {
		st.ph.Restarted()
	}
	st.ph.Poll(ids, w.Value, st.cells, st.engineID(), st.idsChanged)
	st.idsChanged = false
}

// processStart reads the target's process start header from an answer:
// a value other than the last one seen is a new process, whose first poll
// takes it as restart evidence. An answer without it says nothing.
//
// The header is the configured one, else the one the target's engine sends
// by itself (llama.cpp's Process-Start-Time-Unix); while the engine is not
// known yet, any engine's.
func (st *targetState) processStart(w *capture.Row) {
	if w.Headers == nil {
		return
	}
	name, v, ok := st.psHeader, "", false
	if name != "" {
		v, ok = headerValue(w.Headers, name)
	} else {
		id, _ := st.tr.Engine()
		for _, h := range engines.ProcessStartHeaders(id) {
			if v, ok = headerValue(w.Headers, h); ok {
				name = h
				break
			}
		}
	}
	if !ok {
		return
	}
	if st.lastPS != "" && v != st.lastPS && st.psMoved == "" {
		st.psMoved = "response header " + name + " changed from " + st.lastPS + " to " + v + " at " + stamp(w.Start)
	}
	st.lastPS = v
}

// headerValue returns header name's value from the headers column's JSON
// object (names compared case-insensitively), redacted again: a recording
// of another version may hold what this one redacts.
func headerValue(js []byte, name string) (string, bool) {
	// The column's keys are Go's canonical header names (a JSON object
	// the recorder wrote): a row without the name is passed over without
	// decoding it, as most rows of an engine that sends no such header are.
	if !bytes.Contains(js, []byte(textproto.CanonicalMIMEHeaderKey(name))) {
		return "", false
	}
	var h map[string]string
	if json.Unmarshal(js, &h) != nil {
		return "", false
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return redact.Header(k, v), true
		}
	}
	return "", false
}

// record keeps a poll's headline values and, unless skipped, its cells.
func (st *targetState) record(T float64, run string, seq int64, skip bool) error {
	s := &st.out.Summary
	if s.Polls == 0 {
		s.First = T
	}
	s.Polls++
	s.Last = T
	for k, ci := range headIndex {
		c := &st.cells[ci].Cell
		h := &st.stats[k]
		// A hold released at this poll was a load start confirmed.
		if h.held {
			if c.Value.Valid {
				h.normal[rate.ReasonJump]++
			} else {
				h.withheld[rate.ReasonJump]++
			}
			h.held = false
		}
		if !c.Value.Valid {
			if h.run == 0 || c.Reason != h.runReason {
				h.flushNulls()
				h.runReason, h.runGate = c.Reason, gateReasons[c.Reason]
			}
			h.run++
			switch {
			case !h.runGate:
			case c.Reason == rate.ReasonNoBaseline && s.Polls == 1:
				h.normal[c.Reason]++
			case c.Reason == rate.ReasonJump:
				h.held = true
			default:
				h.withheld[c.Reason]++
			}
			continue
		}
		if len(h.values) >= h.vdone {
			h.vdone = faultAhead(h.values)
		}
		h.values = grow(h.values, c.Value.V)
		if c.Window.Valid {
			if len(h.windows) >= h.wdone {
				h.wdone = faultAhead(h.windows)
			}
			h.windows = grow(h.windows, c.Window.V)
		}
	}
	if skip {
		st.lastT = T
		return nil
	}
	brk := st.lineBreak(T)
	st.lastT = T
	if st.sink != nil {
		st.sink(st.out.Name, &Poll{T: T, Run: run, Seq: seq, Break: brk, Cells: st.cells})
		return nil
	}
	if st.spool != nil {
		// Encoded now: the cells need not be copied.
		return st.spool.add(&Poll{T: T, Run: run, Seq: seq, Break: brk, Cells: st.cells})
	}
	if len(st.out.Polls) >= st.pollsDone {
		st.pollsDone = faultAhead(st.out.Polls)
	}
	st.out.Polls = grow(st.out.Polls, Poll{T: T, Run: run, Seq: seq, Break: brk, Cells: slices.Clone(st.cells)})
	return nil
}

// flushNulls counts the run of nulls of one reason in nulls.
func (h *headStat) flushNulls() {
	if h.run > 0 {
		h.nulls[h.runReason] += h.run
		h.run = 0
	}
}

// lineBreak says whether a line through the target's polls breaks before
// the poll at T, whose cells are st.cells.
func (st *targetState) lineBreak(T float64) string {
	// The first poll has nothing before it to join.
	if st.out.Summary.Polls == 1 {
		return ""
	}
	for _, l := range st.leaves {
		if st.lastT <= l && l < T {
			return BreakAway
		}
	}
	if st.interval > 0 && T-st.lastT > findings.HoleFactor*st.interval {
		return BreakGap
	}
	if st.tr.Restart() != "" {
		return BreakRestart
	}
	return ""
}

// finish completes every target, sorted by name; it is called once, and
// lets go of the headline values it takes the medians of.
func (a *analyzer) finish() []Target {
	out := make([]Target, 0, len(a.targets))
	for _, st := range a.targets {
		t := st.out
		t.spool = st.spool
		t.Engine, t.DetectedBy = st.tr.Engine()
		t.Model = st.fw.t.Model
		if m := a.metas[t.Name]; m != nil {
			t.Model, t.Version = cmp.Or(m.model, t.Model), m.version
		}
		t.Notes = st.tr.Notes()
		if n := cadenceNote(a.metas[t.Name], st.fw.t.Rows); n != "" {
			t.Notes["interval"] = n
		}
		t.UnknownSeries = st.tr.Unknown()
		t.MistypedSeries = st.tr.Mistyped()
		if m := a.metas[t.Name]; m != nil {
			t.Imported = importedOf(m.imports)
		}
		t.Summary.Headlines = make([]Headline, len(engine.Headline))
		t.Summary.Refusals = map[string]int{}
		t.Summary.Withheld, t.Summary.Normal = map[string]map[string]int{}, map[string]int{}
		for k, name := range engine.Headline {
			h := &st.stats[k]
			h.flushNulls()
			// A hold still on at the last poll was never confirmed.
			if h.held {
				h.withheld[rate.ReasonJump]++
			}
			if len(h.withheld) > 0 {
				t.Summary.Withheld[name] = h.withheld
			}
			for r, n := range h.normal {
				t.Summary.Normal[r] += n
			}
			t.Summary.Headlines[k] = Headline{Cell: name, Median: median(h.values), Window: median(h.windows),
				Values: len(h.values), Nulls: h.nulls}
			// The values are not needed past their medians: a day of 8
			// engines holds 58 MB of them while the findings are computed.
			h.values, h.windows = nil, nil
			for r, n := range h.nulls {
				if gateReasons[r] {
					t.Summary.Refusals[r] += n
				}
			}
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(x, y Target) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// completionSpans lists the spans chosen for the targets' completion
// counters, by target name.
func (a *analyzer) completionSpans() []CompletionSpan {
	out := []CompletionSpan{}
	for _, st := range a.targets {
		if c, ok := st.tr.CompletionSpan(); ok {
			out = append(out, CompletionSpan{Target: st.out.Name, ChosenSpan: c})
		}
	}
	slices.SortFunc(out, func(x, y CompletionSpan) int { return strings.Compare(x.Target, y.Target) })
	return out
}

// gateReasons are the estimator's refusals, as opposed to nulls that say a
// series is absent, not exported, or a window held no events.
var gateReasons = map[string]bool{
	rate.ReasonOrder: true, rate.ReasonNoBaseline: true, rate.ReasonReset: true, rate.ReasonCeiling: true,
	rate.ReasonFloor: true, rate.ReasonStale: true, rate.ReasonJump: true,
}

// median of xs (reordered in place); null for none. It selects the middle
// instead of sorting: a day of polls is 43,200 values per headline cell.
func median(xs []float64) rate.Num {
	// No values, no median.
	if len(xs) == 0 {
		return rate.Num{}
	}
	n := len(xs)
	hi := order.Nth(xs, n/2)
	if n%2 == 1 {
		return rate.Some(hi)
	}
	// nth left the lower half before n/2: its largest is the other middle.
	return rate.Some((slices.MaxFunc(xs[:n/2], cmp.Compare[float64]) + hi) / 2)
}

// Cell returns the cell called name of the target's poll at time t (within
// 1 ms): a convenience for tests and tools.
func (t *Target) Cell(at float64, name string) (engine.Cell, error) {
	for i := range t.Polls {
		p := &t.Polls[i]
		if p.T > at-1e-3 && p.T < at+1e-3 {
			c, ok := p.Cells.Get(name)
			if !ok {
				return engine.Cell{}, fmt.Errorf("target %s poll %v: no cell %s", t.Name, at, name)
			}
			return c, nil
		}
	}
	return engine.Cell{}, fmt.Errorf("target %s: no poll at %v", t.Name, at)
}

// grow appends v to s, doubling a full slice: append grows a large slice
// by a quarter, which for a run's per-poll records allocates about five
// times their final size.
func grow[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 16))
	}
	return append(s, v)
}

// faultAhead faults in the pages of a step of s's capacity after its
// length, ahead of their first writes (package prefault), and returns the
// length s's array is faulted in to. A per-poll record calls it when its
// length reaches that: a full array's successor is faulted in by the call
// after grow made it.
func faultAhead[T any](s []T) int {
	// Full: the next array is grow's.
	if len(s) >= cap(s) {
		return len(s)
	}
	n := len(s) + prefault.Elems[T]()
	prefault.Range(s, len(s), n)
	return n
}

// floorFor is the floor of a target polled every interval seconds when no
// floor was asked for: half its interval where that is below the default
// floor. A poll interval near the floor would otherwise have every window
// a few milliseconds of jitter short of it refused, and a faster cadence
// every window; half an interval still refuses a catch-up poll.
func floorFor(asked rate.Config, interval float64) (float64, bool) {
	if asked.MinWindow != 0 || !(interval > 0) || interval/2 >= rate.DefaultMinWindow {
		return 0, false
	}
	return interval / 2, true
}
