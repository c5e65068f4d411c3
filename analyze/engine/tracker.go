package engine

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/internal/engines"
	"github.com/llmrec/llmrec/record/expo"
)

// Series describes one series of a target as the capture stores it.
type Series struct {
	Family string // the metric family (TYPE name)
	Type   string // counter, gauge, histogram, summary, gaugehistogram, untyped
	Name   string // the sample's own name (foo_bucket, foo_total, ...)
	Labels string // the label set as a JSON object with sorted keys ("{}" or "" for none)
}

// Tracker replays one target's polls: it keys each series once, feeds the
// counters to a [rate.Estimator], detects the engine, and turns each poll
// into cells with the engine's reader. Make one per target; it is not safe
// for concurrent use.
//
// The hot path allocates nothing: register each distinct series once with
// [Tracker.Key] (the caller keeps the id), then per poll call
// [Tracker.Begin], [Tracker.Set] for every sample and [Tracker.End].
type Tracker struct {
	hint string
	only bool // DecodeOnly
	// want has bit i set when canonical cell i is wanted (Want).
	want uint64
	est  *rate.Estimator
	// more are the estimators of DecodeUnder's other configurations, fed
	// the polls est is fed (their keys have est's ids).
	more    []*rate.Estimator
	rd      *reader
	engine  string
	how     string // DetectedBy*
	decided bool

	keys []keyState
	vals []reading // by key id, as keys
	// created is the key of each key's _created sibling, by key id (-2
	// not looked up yet, -1 none): End walks it for every counter of a
	// poll, 4 bytes a key instead of the keyState's 176.
	created []int32
	// fallEv says a key's fall is restart evidence (a counter, not a
	// lifetime average), by key id: set's per-sample test of a reading
	// that fell reads 1 byte a key instead of the keyState's 168 (a
	// gauge falls often; keys is not in cache during the poll's set).
	fallEv []bool
	byKey  map[rate.Key]int32
	names  map[string]int32
	slots  []nameSlot

	seq     uint64 // polls begun, from 1
	samples int    // samples set in the current poll
	poll    rate.Poll
	pollIDs []int32 // key of each poll.Readings entry
	newKeys bool
	// lastIDs are the ids of the last SetAll, kept when it was the first
	// of its poll and took every sample (lastOK); touched are the name
	// slots it began; setSeq is the poll of the last SetAll.
	lastIDs []int32
	touched []int32
	lastOK  bool
	// runs are lastIDs as runs of consecutive ids (a target's series are
	// keyed in the order it prints them, so most polls are one run):
	// setAgain walks the readings of a run in order, without the ids.
	runs []idRun
	// feeds are the samples of lastIDs fed to the estimator, in order:
	// their place in lastIDs, their estimator id and their _created
	// sibling's key when that poll carried it, as the call that kept
	// lastIDs and its End found them (classify, which changes a key's
	// feed, drops lastOK); feedSeq is that poll.
	feeds   []feedAt
	feedSeq uint64
	// createdSet says the poll's readings carry their _created already
	// (feedAgain wrote every one): End does not look them up.
	createdSet bool
	setSeq     uint64
	procSlot   int32 // name slot of process_start_time_seconds, -1 until seen

	// stepSpan is the span of the counters that move on every engine
	// step (reader.everyStep); 0: the configured span.
	stepSpan float64
	// restart is the evidence that the target restarted since its
	// previous poll, "" none (see Restart); lastProc the process start
	// read at the last poll that carried one.
	restart  string
	lastProc float64
	// fell are the names of the counters that fell in the current poll
	// (two at most: a generic engine's restart needs two), fellWhy the
	// first's evidence.
	fell    []string
	fellWhy string
	// mistyped are the families typed counter that are no count
	// (engines.DeclaredKind): never fed to rate(), never restart evidence
	// unless their kind cannot fall in a healthy process.
	mistyped map[string]engines.Declaration
	// cs chooses the span of the counters that move once per request
	// (SetCompletionSpan); nil: they run with the configured span.
	cs *spanChooser

	unknown map[string]bool // families the reader does not know
	sources map[srcKey]string
	names2  map[srcKey]string // generic cell names, built once
	quick   map[string]int32  // ObserveSamples: name+labels → key
	memo    *Memo             // UseMemo: the series' facts shared with other trackers
	facts   map[factKey]factVal
	// lastBy is each by-label cell's last split (query.by), shared by the
	// polls it did not change in: it is never modified once published.
	lastBy    map[string]*bySplit
	byScratch map[string]float64 // not published: query.by's next split
	q         query              // reused by End: a query per poll would escape to the heap
}

// keyState is one series of the target: what is read when it is keyed or
// queried. Its last reading is apart, in Tracker.vals.
type keyState struct {
	Series
	rkey       rate.Key
	counter    bool     // registered with the estimator
	est        int32    // its id there, when counter
	createdKey rate.Key // the _created sibling of a counter or histogram series (its key: Tracker.created)
	pairs      [][2]string
	split      bool // pairs holds the labels, split once
}

// reading is what Set writes of a series, apart from its keyState so that
// the per-sample path walks 24 bytes a series instead of 200.
type reading struct {
	v    float64 // the value in the last poll that carried it
	seq  uint64  // that poll
	slot int32   // name slot
	est  int32   // its id in the estimator; -1 when not fed to it (see feed)
}

// label returns the value of one label of series id.
func (t *Tracker) label(id int32, name string) (string, bool) {
	ks := &t.keys[id]
	if !ks.split {
		ks.pairs, ks.split = splitLabels(ks.rkey.Labels), true
	}
	for _, p := range ks.pairs {
		if p[0] == name {
			return p[1], true
		}
	}
	return "", false
}

// feedAt is a sample of lastIDs fed to the estimator: its place there,
// its id in the estimator and its _created sibling's key (-1 none in the
// poll).
type feedAt struct{ pos, est, created int32 }

// idRun is a run of lastIDs: ids[pos+k] is id+k for k below n.
type idRun struct{ pos, id, n int32 }

// runsOf appends ids as runs of consecutive ids to dst[:0].
func runsOf(dst []idRun, ids []int32) []idRun {
	dst = dst[:0]
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[j-1]+1 {
			j++
		}
		dst = append(dst, idRun{pos: int32(i), id: ids[i], n: int32(j - i)})
		i = j
	}
	return dst
}

// nameSlot groups the series of one sample name present in the current poll.
type nameSlot struct {
	name string
	seq  uint64
	keys []int32
}

// How an engine was decided.
const (
	DetectedByHint   = "hint"   // the configured engine of the target
	DetectedBySeries = "series" // the series names of its polls
)

// NewTracker returns a tracker for one target. hint is the configured engine
// ("" for none); when it names a known engine it wins over the series.
func NewTracker(hint string, cfg rate.Config) *Tracker {
	t := &Tracker{
		hint:     hint,
		want:     allCells,
		est:      rate.New(cfg),
		byKey:    make(map[rate.Key]int32),
		names:    make(map[string]int32),
		procSlot: -1,
		unknown:  make(map[string]bool),
		sources:  make(map[srcKey]string),
		names2:   make(map[srcKey]string),
		facts:    make(map[factKey]factVal),
		lastBy:   make(map[string]*bySplit),
		mistyped: make(map[string]engines.Declaration),
	}
	t.rd = readerFor(Generic)
	t.engine = Generic
	if id := NormalizeHint(hint); id != "" {
		t.rd, t.engine, t.how = readerFor(id), id, DetectedByHint
		// A vLLM hint still leaves V0 or V1 to the series.
		t.decided = id != VLLM
	}
	return t
}

// SetStepSpan gives the counters the engine moves on every step (vLLM's
// token counters, llama.cpp's n_decode_total) a span of their own,
// seconds: the target's poll interval, so that an idle engine reads 0 by
// the second poll after its load ends. Counters that move when requests
// complete keep the configured span, which must hold several completions.
// 0 gives every counter the configured span. Call it before the first poll.
func (t *Tracker) SetStepSpan(span float64) { t.stepSpan = span }

// StepSpan returns the span the engine's every-step counters run with:
// the step span when the engine has such counters and one is set, else
// the configured span.
func (t *Tracker) StepSpan() float64 {
	if t.stepSpan > 0 && len(t.rd.everyStep) > 0 {
		return t.stepSpan
	}
	return t.est.Config().Span
}

// DecodeSpan returns the span of the decode cell's counter, seconds: the
// step span when the engine counts decode tokens on every step, the span
// chosen last when it counts them at completion and one was chosen.
func (t *Tracker) DecodeSpan() float64 {
	for i := range t.keys {
		ks := &t.keys[i]
		if !ks.counter || !slices.Contains(strings.Fields(t.rd.families[ks.Family]), DecodeTokensPerSecond) {
			continue
		}
		if t.rd.everyStep[ks.Family] && t.stepSpan > 0 {
			return t.stepSpan
		}
		if t.rd.atCompletion[ks.Family] && t.cs != nil && t.cs.span > 0 {
			return t.cs.span
		}
	}
	return t.est.Config().Span
}

// Restart returns the evidence that the target restarted between its
// previous poll and the current one, "" when there is none: a counter
// that cannot fall in a healthy process fell (any such counter, not only
// those a cell reads; a series typed counter that is a lifetime average is
// none, see Mistyped; an unknown engine needs two counters falling
// together), a new process_start_time_seconds, or what the caller said
// (MarkRestart: a process-start header that changed, a "Loading model"
// answer).
// Every counter's window across it is refused with reason reset.
func (t *Tracker) Restart() string { return t.restart }

// MarkRestart says the target restarted before the current poll, for a
// reason the series cannot show (an engine's "loading" answer between
// two polls). Call it between Begin and End.
func (t *Tracker) MarkRestart(evidence string) {
	if t.restart == "" {
		t.restart = evidence
	}
}

// Mistyped returns the families of the target typed counter by its engine
// that count nothing (a lifetime average, a running maximum), sorted:
// none feeds rate() or an edge, and a lifetime average's fall is no
// restart.
func (t *Tracker) Mistyped() []engines.Declaration {
	out := make([]engines.Declaration, 0, len(t.mistyped))
	for _, d := range t.mistyped {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b engines.Declaration) int { return strings.Compare(a.Family, b.Family) })
	return out
}

// Config returns the estimator's configuration.
func (t *Tracker) Config() rate.Config { return t.est.Config() }

// Engine returns the engine in use ([Generic] until one is detected) and how
// it was decided ("" while undecided).
func (t *Tracker) Engine() (id, how string) { return t.engine, t.how }

// Unknown returns the families of the target's polls that its reader does
// not know, sorted: they are listed, never silently dropped.
func (t *Tracker) Unknown() []string {
	set := t.unknown
	if !t.decided && t.how == "" {
		// No engine was recognised: the generic reader knows no series.
		set = make(map[string]bool)
		for i := range t.keys {
			set[t.keys[i].Family] = true
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// Notes returns what the target's cells mean for its engine, by cell name:
// the seams between engines and the variant that was detected.
func (t *Tracker) Notes() map[string]string {
	out := make(map[string]string, len(t.rd.notes)+1)
	for k, v := range t.rd.notes {
		out[k] = v
	}
	if t.rd.variant != nil {
		if v := t.rd.variant(t); v != "" {
			out["engine"] = v
		}
	}
	return out
}

// Key registers a series and returns its id; a series registered twice gets
// the same id. Call it once per distinct series, not per sample.
func (t *Tracker) Key(s Series) int32 {
	f := t.factsOf(s)
	rk := f.rkey
	if id, ok := t.byKey[rk]; ok {
		return id
	}
	slot, ok := t.names[s.Name]
	if !ok {
		slot = int32(len(t.slots))
		t.slots = append(t.slots, nameSlot{name: s.Name})
		t.names[s.Name] = slot
		if s.Name == "process_start_time_seconds" {
			t.procSlot = slot
		}
	}
	ks := keyState{Series: s, rkey: rk, counter: f.counter, est: -1}
	if ks.counter {
		ks.createdKey = f.createdKey
		ks.est = t.est.RegisterNew(rk)
		if f.bucket {
			t.est.SetBucketOf(ks.est, f.bf)
		}
		for _, e := range t.more {
			// Registered in the same order as est, from the same
			// start: the same id.
			e.RegisterNew(rk)
			if f.bucket {
				e.SetBucketOf(ks.est, f.bf)
			}
		}
	}
	id := int32(len(t.keys))
	t.keys, t.vals = append(t.keys, ks), append(t.vals, reading{slot: slot, est: ks.est})
	t.created = append(t.created, -2)
	t.fallEv = append(t.fallEv, ks.counter)
	t.byKey[rk] = id
	t.newKeys = true
	if t.decided {
		t.classify(id)
	}
	return id
}

// Begin starts a poll whose first byte arrived at T (Unix seconds) for a
// request sent at start (0 when unknown).
func (t *Tracker) Begin(T, start float64) {
	t.seq++
	t.samples = 0
	t.poll.T, t.poll.Start, t.poll.ProcessStart, t.poll.Restart = T, start, 0, false
	t.restart = ""
	t.fell, t.fellWhy = t.fell[:0], ""
	t.poll.Readings = t.poll.Readings[:0]
	t.pollIDs = t.pollIDs[:0]
	t.createdSet = false
}

// Set records the value of series id in the current poll. A series set twice
// in one poll keeps its first value; a value that is not a finite number is
// no reading (JSON cannot carry it, and no rate can be taken of it).
func (t *Tracker) Set(id int32, v float64) {
	t.SetAll([]int32{id}, []float64{v})
}

// SetAll is Set for each ids[i] with vals[i], in order: a poll's samples
// in one call, which saves a call per sample. vals must be as long as ids.
func (t *Tracker) SetAll(ids []int32, vals []float64) {
	vals = vals[:len(ids)]
	// The first call of a poll with the ids of the last call, which took
	// every sample, finds the name slots' key lists built already: they
	// are those of that call, so only their poll is marked.
	first := t.setSeq != t.seq
	t.setSeq = t.seq
	if first && t.lastOK && sameInt32s(ids, t.lastIDs) {
		// An absent sample changed the slots' lists: not kept.
		t.lastOK = t.setAgain(ids, vals)
		return
	}
	// The ids are kept for the next poll only when the whole poll is
	// taken in this one call (a second call of the poll appends to the
	// slots' lists).
	t.touched, t.feeds, t.feedSeq, t.createdSet = t.touched[:0], t.feeds[:0], t.seq, false
	clean := t.set(ids, vals, first)
	t.lastOK = first && clean
	if t.lastOK {
		t.lastIDs = append(t.lastIDs[:0], ids...)
		t.runs = runsOf(t.runs, ids)
	}
}

// set is SetAll's every sample: it reports whether each was taken (none
// was absent nor a repeat), noting the name slots it begins in touched.
func (t *Tracker) set(ids []int32, vals []float64, note bool) bool {
	clean := true
	for i, id := range ids {
		r, v := &t.vals[id], vals[i]
		// A series seen twice in one poll keeps its first reading.
		if r.seq == t.seq {
			clean = false
			continue
		}
		// NaN or an infinity is no reading: the series is absent from this poll.
		if math.IsNaN(v) || math.IsInf(v, 0) {
			clean = false
			continue
		}
		// A counter that fell is restart evidence (End weighs it): a
		// gauge's fall is nothing, nor is a lifetime average's.
		if v < r.v && r.seq != 0 && t.fallEv[id] {
			t.fall(id, r.v, v)
		}
		r.v, r.seq = v, t.seq
		t.samples++
		if t.list(id, r.slot) && note {
			t.touched = append(t.touched, r.slot)
		}
		if r.est >= 0 {
			t.poll.Readings = append(t.poll.Readings, rate.Reading{ID: r.est, Value: v})
			t.pollIDs = append(t.pollIDs, id)
			if note {
				t.feeds = append(t.feeds, feedAt{int32(i), r.est, -1})
			}
		}
	}
	return clean
}

// setAgain is set for the ids of the last poll, which took every sample:
// the name slots keep their key lists. From an absent sample on, set
// decides (the slots' lists are built anew). It reports whether every
// sample was taken.
func (t *Tracker) setAgain(ids []int32, vals []float64) bool {
	seq := t.seq
	// Run by run: a run's readings, fall flags and values in step, no id
	// loaded a sample.
	for _, run := range t.runs {
		rs := t.vals[run.id : run.id+run.n]
		fe := t.fallEv[run.id : run.id+run.n]
		vs := vals[run.pos : run.pos+run.n]
		fe, vs = fe[:len(rs)], vs[:len(rs)]
		for k := range rs {
			r, v := &rs[k], vs[k]
			// NaN or an infinity (v-v is NaN for both): from here on set
			// decides, the lists built anew for the samples taken.
			if v-v != 0 {
				i := int(run.pos) + k
				t.feedAgain(ids, vals, i)
				t.restartLists(ids[:i])
				t.samples += i
				t.set(ids[i:], vals[i:], false)
				return false
			}
			// Taken as set takes a sample, written out again: a call a
			// sample (it does not inline) cost SetAll 1.3x.
			if v < r.v && r.seq != 0 && fe[k] {
				t.fall(run.id+int32(k), r.v, v)
			}
			r.v, r.seq = v, seq
		}
	}
	t.feedAgain(ids, vals, len(ids))
	t.createdSet = true
	t.samples += len(ids)
	for _, s := range t.touched {
		t.slots[s].seq = seq
	}
	return true
}

// feedAgain writes the estimator's readings of the samples of ids[:n]
// that the last poll fed, in the order set appended them: the same keys,
// so no key's feed is looked up again, and no append a sample. A
// reading's _created is its sibling's value when the poll of the feeds
// carried the sibling: with the same ids and none absent, this one does
// (set past n takes the rest: End looks those up).
func (t *Tracker) feedAgain(ids []int32, vals []float64, n int) {
	fs := t.feeds
	// The fed samples before n: those past it are set's to take.
	for len(fs) > 0 && int(fs[len(fs)-1].pos) >= n {
		fs = fs[:len(fs)-1]
	}
	nr, np := len(t.poll.Readings), len(t.pollIDs)
	t.poll.Readings = slices.Grow(t.poll.Readings, len(fs))[:nr+len(fs)]
	t.pollIDs = slices.Grow(t.pollIDs, len(fs))[:np+len(fs)]
	rs, ps := t.poll.Readings[nr:], t.pollIDs[np:]
	for k, f := range fs {
		rs[k] = rate.Reading{ID: f.est, Value: vals[f.pos]}
		if f.created >= 0 {
			rs[k].Created = t.vals[f.created].v
		}
		ps[k] = ids[f.pos]
	}
}

// restartLists builds the name slots' lists of ids, taken in the current
// poll, as set would have.
func (t *Tracker) restartLists(ids []int32) {
	for _, id := range ids {
		t.list(id, t.vals[id].slot)
	}
}

// list adds key id to its name slot's list for the current poll; begun
// says the list was begun anew by it (the slot's first key of the poll).
func (t *Tracker) list(id, slot int32) (begun bool) {
	ns := &t.slots[slot]
	if ns.seq != t.seq {
		ns.seq, ns.keys, begun = t.seq, ns.keys[:0], true
	}
	ns.keys = append(ns.keys, id)
	return begun
}

// sameInt32s reports whether a and b hold the same ids, compared as bytes.
func sameInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 4*len(a)), unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), 4*len(b)))
}

// End observes the poll and appends its cells to dst[:0].
func (t *Tracker) End(dst Cells) Cells {
	if t.newKeys {
		// A new series may be the _created sibling an older one lacked.
		for i, c := range t.created {
			if c == -1 {
				t.created[i] = -2
			}
		}
		t.newKeys = false
	}
	// The readings of the ids of the last poll carry their _created
	// (feedAgain); a key's sibling looked up later is none of this poll.
	if !t.createdSet {
		t.createdOf()
	}
	// The feeds kept by this poll learn their readings' siblings.
	if t.lastOK && t.feedSeq == t.seq {
		for k := range t.feeds {
			f := &t.feeds[k]
			if c := t.created[t.pollIDs[k]]; c >= 0 && t.vals[c].seq == t.seq {
				f.created = c
			}
		}
	}
	if t.procSlot >= 0 && t.slots[t.procSlot].seq == t.seq {
		ps := t.vals[t.slots[t.procSlot].keys[0]].v
		t.poll.ProcessStart = ps
		if t.lastProc != 0 && ps != 0 && ps != t.lastProc {
			t.restart = "process_start_time_seconds moved"
		}
		if ps != 0 {
			t.lastProc = ps
		}
	}
	if t.restart == "" && len(t.fell) >= t.fallsNeeded() {
		t.restart = t.fellWhy
	}
	t.poll.Restart = t.restart != ""
	if t.cs != nil && t.decided {
		t.chooseSpan()
	}
	t.est.Observe(t.poll)
	for _, e := range t.more {
		e.Observe(t.poll)
	}
	if !t.decided && t.samples > 0 {
		t.detect()
	}
	q := &t.q
	q.t, q.est, q.want = t, t.est, t.want
	q.start()
	dst = dst[:0]
	// A poll with nothing in it reads nothing: every cell absent, never 0.
	if t.samples == 0 {
		names := Canonical
		if t.only {
			names = names[:1]
		}
		for _, name := range names {
			dst = append(dst, Named{name, Cell{Cell: rate.Cell{Reason: rate.ReasonAbsent}}})
		}
		for range t.more {
			dst = append(dst, Named{DecodeTokensPerSecond, Cell{Cell: rate.Cell{Reason: rate.ReasonAbsent}}})
		}
		return dst
	}
	dst = t.rd.cells(q, dst, t.only)
	for _, e := range t.more {
		q.est = e
		dst = t.rd.cells(q, dst, true)
	}
	q.dst = nil
	refuseOverflow(dst)
	return dst
}

// createdOf writes the _created sibling's value, when the poll carries
// it, into each of the poll's readings, looking up the siblings not
// looked up yet.
func (t *Tracker) createdOf() {
	for i, id := range t.pollIDs {
		c := t.created[id]
		if c == -2 {
			c = -1
			if k, ok := t.byKey[t.keys[id].createdKey]; ok && t.keys[id].createdKey.Series != "" {
				c = k
			}
			t.created[id] = c
		}
		if c >= 0 && t.vals[c].seq == t.seq {
			t.poll.Readings[i].Created = t.vals[c].v
		}
	}
}

// fall notes that counter id fell from one reading to the next.
func (t *Tracker) fall(id int32, from, to float64) {
	name := t.keys[id].Name
	if len(t.fell) == 0 {
		t.fellWhy = fellText(name, from, to)
	}
	if len(t.fell) < 2 && !slices.Contains(t.fell, name) {
		t.fell = append(t.fell, name)
		// An unknown engine's evidence is both falls.
		if len(t.fell) == 2 && t.engine == Generic {
			t.fellWhy += "; " + fellText(name, from, to)
		}
	}
}

// fallsNeeded is how many counters (distinct names) must fall in one poll
// to be a restart: one of an engine whose series are declared, two of an
// unknown engine, whose counters may be anything typed counter.
func (t *Tracker) fallsNeeded() int {
	if t.engine == Generic {
		return 2
	}
	return 1
}

// fellText is the evidence of a counter that fell.
func fellText(name string, from, to float64) string {
	return name + " fell from " + strconv.FormatFloat(from, 'g', 6, 64) + " to " + strconv.FormatFloat(to, 'g', 6, 64)
}

// refuseOverflow nulls every cell whose arithmetic left float64's range:
// an engine that serves a counter near 1e308 (a bug or an attack) would
// otherwise publish +Inf or NaN as a number. The source stays, so the
// refusal says what overflowed.
func refuseOverflow(dst Cells) {
	for i := range dst {
		c := &dst[i].Cell
		if !c.Value.Valid || !(math.IsNaN(c.Value.V) || math.IsInf(c.Value.V, 0)) {
			continue
		}
		c.Value, c.Severity, c.Reason = rate.Num{}, "", rate.ReasonOverflow
	}
}

// DecodeOnly makes End return the decode cell alone
// (DecodeTokensPerSecond, first as always), for a replay that reads
// nothing else.
func (t *Tracker) DecodeOnly() { t.only = true }

// DecodeUnder makes t decode-only (DecodeOnly) and replays its polls
// under each of cfgs as well: End returns the decode cell under t's own
// configuration, then one under each of cfgs, in order, each what a
// decode-only tracker of that configuration fed the same polls returns.
// The series are keyed, set and checked once for all. Call it before the
// first Key; a tracker with a completion span (SetCompletionSpan) or a
// step span (SetStepSpan) gives them to its own configuration alone.
func (t *Tracker) DecodeUnder(cfgs ...rate.Config) {
	t.only = true
	for _, c := range cfgs {
		t.more = append(t.more, rate.New(c))
	}
}

// detect decides the engine from the series of the current poll.
func (t *Tracker) detect() {
	fams := make([]string, 0, 64)
	seen := make(map[string]bool, 64)
	for i := range t.slots {
		ns := &t.slots[i]
		if ns.seq != t.seq {
			continue
		}
		f := t.keys[ns.keys[0]].Family
		if !seen[f] {
			seen[f] = true
			fams = append(fams, f)
		}
	}
	id := DetectSeries(fams)
	switch {
	case t.how == DetectedByHint:
		// The hint chose vLLM; the series only tell V0 from V1.
		if id == VLLMV0 {
			t.rd, t.engine = readerFor(VLLMV0), VLLMV0
		}
	case id != Generic:
		t.rd, t.engine, t.how = readerFor(id), id, DetectedBySeries
	}
	// Nothing recognisable yet: stay generic and look again next poll.
	t.decided = id != Generic || t.how == DetectedByHint
	if !t.decided {
		return
	}
	clear(t.unknown)
	clear(t.mistyped)
	for i := range t.keys {
		t.classify(int32(i))
	}
}

// classify lists a series' family when the decided reader does not know
// it, and feeds a counter to the estimator only when the reader reads its
// family: two thirds of a vLLM body's counters are histograms no cell is
// made of, and gating them on every poll was a third of a replay's
// estimator work. Until the engine is decided every counter is fed.
func (t *Tracker) classify(id int32) {
	ks := &t.keys[id]
	if !t.rd.knows(ks.Family) {
		t.unknown[ks.Family] = true
	}
	// The last poll's feeds may change: the next poll sets anew.
	t.lastOK = false
	t.vals[id].est = -1
	// A counter's fall is restart evidence, unless declared otherwise.
	t.fallEv[id] = ks.counter
	if d, ok := engines.DeclaredKind(t.engine, ks.Family, ks.rkey.Labels); ok && ks.counter {
		// Typed counter, declared no count: listed, never rated.
		if !d.Kind.Rateable() {
			t.mistyped[ks.Family] = d
		}
		// A lifetime average typed counter's fall is no evidence.
		t.fallEv[id] = d.Kind.FallIsRestart()
		if !d.Kind.Rateable() {
			return
		}
	}
	// A decode-only tracker feeds the decode cell's counter alone.
	if ks.counter && t.rd.feedsSeries(&ks.Series, t.want) && (!t.only || ks.Name == t.rd.decodeReads) {
		t.vals[id].est = ks.est
	}
	if ks.counter {
		span := 0.0
		if t.rd.everyStep[ks.Family] {
			span = t.stepSpan
		}
		t.est.SetSpan(ks.est, span)
		// A counter that moves once per request steps by a request's size.
		t.est.SetPerRequest(ks.est, t.rd.atCompletion[ks.Family])
		for _, e := range t.more {
			e.SetSpan(ks.est, 0)
			e.SetPerRequest(ks.est, t.rd.atCompletion[ks.Family])
		}
		t.classifyCompletion(ks)
	}
}

// ObserveSamples is Begin, Key and Set for every sample, and End, in one
// call: the convenient path for parsed bodies (tests, single captures). It
// keys each series by name and labels through a map on every call.
func (t *Tracker) ObserveSamples(T, start float64, ss []expo.Sample, dst Cells) Cells {
	if t.quick == nil {
		t.quick = make(map[string]int32)
	}
	t.Begin(T, start)
	for i := range ss {
		s := &ss[i]
		k := s.Name + s.Labels
		id, ok := t.quick[k]
		if !ok {
			id = t.Key(Series{Family: s.Family, Type: s.Type, Name: s.Name, Labels: s.Labels})
			t.quick[k] = id
		}
		t.Set(id, s.Value)
	}
	return t.End(dst)
}

// rateable reports whether a series is a counter the estimator should track:
// counters, the _bucket, _count and _sum of histograms and the _count and
// _sum of summaries, an untyped *_total (what a `# TYPE foo counter` line
// followed by `foo_total` parses to), and counters typed gauge by their
// engine (engines.CountsUp: TensorRT-LLM's iteration counter).
func rateable(s Series, labels string) bool {
	switch s.Type {
	case "counter":
		return true
	case "histogram":
		return strings.HasSuffix(s.Name, "_bucket") || strings.HasSuffix(s.Name, "_count") || strings.HasSuffix(s.Name, "_sum")
	case "summary":
		return strings.HasSuffix(s.Name, "_count") || strings.HasSuffix(s.Name, "_sum")
	case "untyped":
		return strings.HasSuffix(s.Name, "_total")
	}
	// A gauge is a counter where an engine declares it one (a gauge's
	// name is its family).
	return engines.CountsUp(s.Name, labels)
}

// createdOf returns the key of the _created series prometheus_client prints
// beside a counter (foo_total → foo_created) or a histogram (foo_bucket,
// foo_count, foo_sum → foo_created, without le).
func createdOf(s Series, labels string) rate.Key {
	return createdWith(createdName(s.Name), s.Name, labels)
}

// createdWith is createdOf with the _created name of series name worked
// out already (createdName).
func createdWith(created, name, labels string) rate.Key {
	// No _created sibling.
	if created == "" {
		return rate.Key{}
	}
	if strings.HasSuffix(name, "_bucket") {
		labels = withoutLabel(labels, "le")
	}
	return rate.Key{Series: created, Labels: labels}
}

// createdName is the name of the _created series beside series name, ""
// for none.
func createdName(name string) string {
	base := ""
	switch {
	case strings.HasSuffix(name, "_total"):
		base = strings.TrimSuffix(name, "_total")
	case strings.HasSuffix(name, "_bucket"):
		base = strings.TrimSuffix(name, "_bucket")
	case strings.HasSuffix(name, "_count"):
		base = strings.TrimSuffix(name, "_count")
	case strings.HasSuffix(name, "_sum"):
		base = strings.TrimSuffix(name, "_sum")
	default:
		return ""
	}
	return base + "_created"
}

// canonicalLabels turns the capture's JSON label object into package rate's
// canonical form, {a="x",b="y"}; "" for none. A label object that does not
// decode is kept as it is: still one distinct key.
func canonicalLabels(js string) string {
	// No labels is the empty string, so an unlabelled series has one key.
	if js == "" || js == "{}" {
		return ""
	}
	if l, ok := plainCanonical(js); ok {
		return l
	}
	return generalCanonical(js)
}

// generalCanonical is canonicalLabels of any object: its pairs by
// jsonPairs, else by encoding/json; a set neither reads is kept as it is.
func generalCanonical(js string) string {
	pairs, ok := jsonPairs(js)
	if !ok {
		m, err := expo.DecodeLabels(js)
		if err != nil {
			return js
		}
		pairs = pairs[:0]
		for k, v := range m {
			pairs = append(pairs, k, v)
		}
	}
	return rate.Labels(pairs...)
}

// plainCanonical is canonicalLabels of a plain JSON object
// (expo.EachPlainLabel) whose names are strictly ascending (rate.Labels'
// order), written in one copy; ok false for any other (the general path
// decides).
func plainCanonical(js string) (string, bool) {
	var b strings.Builder
	b.Grow(len(js))
	b.WriteByte('{')
	prev, n := "", 0
	ok := expo.EachPlainLabel(js, func(k, v string) bool {
		// Names out of Labels' order: the general path sorts them.
		if n > 0 && k <= prev {
			return false
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(v)
		b.WriteByte('"')
		prev, n = k, n+1
		return true
	})
	if !ok {
		return "", false
	}
	b.WriteByte('}')
	return b.String(), true
}

// jsonPairs decodes the flat object of strings expo writes ({"a":"x"}) into
// name, value pairs, without reflection; ok is false for anything else
// (then encoding/json decides).
func jsonPairs(js string) (pairs []string, ok bool) {
	s := js
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	s = s[1 : len(s)-1]
	for s != "" {
		var k, v string
		if k, s, ok = jsonString(s); !ok || s == "" || s[0] != ':' {
			return nil, false
		}
		if v, s, ok = jsonString(s[1:]); !ok {
			return nil, false
		}
		pairs = append(pairs, k, v)
		if s == "" {
			break
		}
		if s[0] != ',' || len(s) == 1 {
			return nil, false
		}
		s = s[1:]
	}
	return pairs, true
}

// jsonString decodes a JSON string at the start of s without \u escapes
// other than the \u00XX expo writes; it returns the rest of s.
func jsonString(s string) (str, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", s, false
	}
	i := 1
	for i < len(s) && s[i] != '"' && s[i] != '\\' {
		i++
	}
	// The common case: no escape, no copy.
	if i < len(s) && s[i] == '"' {
		return s[1:i], s[i+1:], true
	}
	var b strings.Builder
	b.WriteString(s[1:i])
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), s[i+1:], true
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", s, false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'u':
			if i+6 > len(s) || s[i+2:i+4] != "00" {
				return "", s, false
			}
			x, err := strconv.ParseUint(s[i+4:i+6], 16, 8)
			if err != nil {
				return "", s, false
			}
			b.WriteByte(byte(x))
			i += 4
		default:
			return "", s, false
		}
		i += 2
	}
	return "", s, false
}

// hasLabel reports whether canonical labels carry name="value".
func hasLabel(labels, name, value string) bool {
	return engines.HasPair(labels, name+`="`+value+`"`)
}

// labelOf returns the value of one label of canonical labels.
func labelOf(labels, name string) (string, bool) {
	for _, p := range splitLabels(labels) {
		if p[0] == name {
			return p[1], true
		}
	}
	return "", false
}

// splitLabels returns the name, unescaped value pairs of canonical labels.
func splitLabels(labels string) [][2]string {
	if len(labels) < 2 {
		return nil
	}
	s := labels[1 : len(labels)-1]
	var out [][2]string
	for s != "" {
		eq := strings.Index(s, `="`)
		if eq <= 0 {
			return out
		}
		name := s[:eq]
		s = s[eq+2:]
		var v strings.Builder
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[i])
				}
				continue
			}
			if c == '"' {
				break
			}
			v.WriteByte(c)
		}
		out = append(out, [2]string{name, v.String()})
		if i+1 >= len(s) {
			return out
		}
		s = s[i+2:] // past the quote and the comma
	}
	return out
}

// withoutLabel returns canonical labels without one label.
func withoutLabel(labels, name string) string {
	// A plain set is cut where it is.
	if l, ok := rate.PlainWithout(labels, name); ok {
		return l
	}
	ps := splitLabels(labels)
	pairs := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		if p[0] != name {
			pairs = append(pairs, p[0], p[1])
		}
	}
	return rate.Labels(pairs...)
}
