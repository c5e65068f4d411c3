package rate

import (
	"math"

	"github.com/llmrec/llmrec/analyze/internal/memo"
)

// Key names one counter series: its name and its canonical label set.
type Key struct {
	Series string // the name as exposed, e.g. "vllm:generation_tokens_total"
	Labels string // canonical label set (see Labels); "" for none
}

// Sample is one counter reading of a poll.
type Sample struct {
	Key     Key
	Value   float64
	Created float64 // the counter's _created time, Unix seconds; 0 when unknown
}

// Reading is one counter reading of a key registered with
// [Estimator.Register]: a Sample without a key to compare or hash.
type Reading struct {
	ID      int32 // from Register on the same Estimator
	Value   float64
	Created float64 // as Sample.Created
}

// Poll is one scrape of one target.
type Poll struct {
	T            float64  // first-byte time of the scrape, Unix seconds: the samples' stamp
	Start        float64  // when the request was sent; 0 when unknown (no stale check)
	ProcessStart float64  // process_start_time_seconds; 0 when unknown
	Samples      []Sample // counters only; Observe does not keep the slice
	// Readings are more counter readings, of registered keys, observed
	// after Samples; a replay that keys its series once uses these.
	Readings []Reading
	// Restart says the caller knows the target restarted since its
	// previous poll (a counter of it fell, an engine answered that it was
	// loading): every key's window across it is refused with reason
	// reset, including keys absent from this poll when they come back.
	Restart bool
}

// Config sets the span and the gates. A zero field takes its default; a
// negative MinWindow, CeilingFactor, JumpFactor or StaleFraction turns that
// gate off, and a negative JumpFloor means no floor.
type Config struct {
	Span          float64 // seconds of history a window may reach back; default 10
	MinWindow     float64 // the floor, seconds; default 0.5
	CeilingFactor float64 // the ceiling, in spans; default 2
	JumpFactor    float64 // a rate above this × the last accepted one is held; default 8
	JumpFloor     float64 // the last accepted rate counts as at least this, per second; default 10
	StaleFraction float64 // the largest uncertainty a window tolerates, as a fraction of it; default 0.25
}

// Defaults of Config.
const (
	DefaultSpan          = 10.0
	DefaultMinWindow     = 0.5
	DefaultCeilingFactor = 2.0
	DefaultJumpFactor    = 8.0
	DefaultJumpFloor     = 10.0
	DefaultStaleFraction = 0.25
)

// edgeTolerance lets a sample stamped at T−span, give or take float error,
// count as inside the span.
const edgeTolerance = 1e-3

// WithDefaults returns the configuration an Estimator runs with: defaults
// filled in, disabled gates as 0 (MinWindow, JumpFloor) or +Inf (factors).
func (c Config) WithDefaults() Config {
	c.Span = orDefault(c.Span, DefaultSpan, DefaultSpan)
	c.MinWindow = orDefault(c.MinWindow, DefaultMinWindow, 0)
	c.CeilingFactor = orDefault(c.CeilingFactor, DefaultCeilingFactor, math.Inf(1))
	c.JumpFactor = orDefault(c.JumpFactor, DefaultJumpFactor, math.Inf(1))
	c.JumpFloor = orDefault(c.JumpFloor, DefaultJumpFloor, 0)
	c.StaleFraction = orDefault(c.StaleFraction, DefaultStaleFraction, math.Inf(1))
	return c
}

func orDefault(v, def, off float64) float64 {
	switch {
	case v == 0 || math.IsNaN(v):
		return def
	case v < 0:
		return off
	}
	return v
}

// Estimator holds, per key, the samples of the last span and the state of the
// gates. Make one per target and span with New.
type Estimator struct {
	cfg        Config
	ceiling    float64 // CeilingFactor × Span
	seq        uint64  // polls observed; a sample carries the seq of its poll
	lastT      float64
	disordered bool    // the last Observe was refused: every cell is refused
	procStart  float64 // last known process start
	restartT   float64 // the time of the last poll flagged Restart; 0 none

	keys   []keyState
	index  map[Key]int32
	series map[string]*seriesState
	// indexed keys are in index: RegisterNew leaves keys[indexed:] out
	// until Register looks one up. lastName's state is lastSeries.
	indexed    int
	lastName   string
	lastSeries *seriesState

	// prev and cur map a sample's position in a poll to its key: targets
	// print their series in a stable order, so most lookups are one compare.
	prev, cur []int32

	buckets  []bucket  // scratch for Histogram
	merged   []bucket  // scratch of Histogram's merge by plan
	merged2  []float64 // scratch of two groups' deltas summed by le (twoRuns)
	qles, qn []float64 // scratch of Histogram: the merged bounds and counts
	// Provenance strings and histogram series, built once per base name.
	histSrc map[string]*histSources
	// The queries' lookups of series and histograms by name, by the order
	// they come in on each poll (see package memo).
	asked  memo.Seq[*seriesState]
	hasked memo.Seq[*histSources]

	// The buckets of each histogram label set, stepped together (see
	// together.go); stepped are the groups with readings this poll.
	groups  []group
	groupOf map[Key]int32
	stepped []int32
}

// seriesState is one series name: its keys and the provenance of its
// queries, found with one map lookup per query.
type seriesState struct {
	keys     []int32 // in order of appearance
	rateSrc  string  // computed:Δ<series>/Δt, once asked for
	ratioSrc []ratioSource
	merge    *mergePlan // a bucket series' last merge of unordered buckets
	// whole is the group (index + 1) whose members are keys, in order,
	// found when keys had wholeLen keys: a key joins one group once, so
	// it stays true until a key is added.
	whole    int32
	wholeLen int
}

// ratioSource is the provenance of a ratio with one denominator: a series
// is the numerator of one or two ratios, found by a compare each.
type ratioSource struct{ den, src string }

// queried returns the state of series name for a query.
func (e *Estimator) queried(name string) *seriesState { return e.asked.Ask(name, e.seriesOf) }

// seriesOf returns the state of series name, made empty on first sight so
// that a query may hold it before any key of the series appears.
func (e *Estimator) seriesOf(name string) *seriesState {
	s, ok := e.series[name]
	if !ok {
		s = &seriesState{}
		e.series[name] = s
	}
	return s
}

// New returns an Estimator with cfg's defaults filled in.
func New(cfg Config) *Estimator {
	cfg = cfg.WithDefaults()
	return &Estimator{
		cfg:     cfg,
		ceiling: cfg.CeilingFactor * cfg.Span,
		index:   make(map[Key]int32),
		series:  make(map[string]*seriesState),
		histSrc: map[string]*histSources{},
	}
}

// Config returns the configuration e runs with.
func (e *Estimator) Config() Config { return e.cfg }

// point is one sample in a key's history.
type point struct {
	t, v float64
	u    float64 // timing uncertainty: first byte − request start
	seq  uint64
}

// keyState is one key's history, gate state and verdict on the current poll.
//
// The fields a query reads of every key it sums (gather: the verdict, the
// le) come first and fill one cache line; the history and the gates'
// state, which only step reads, follow.
type keyState struct {
	lastSeq, prevSeq uint64 // the last two polls that carried the key

	// The verdict on poll lastSeq.
	reason string  // "" accepted, else a Reason
	delta  float64 // Δvalue over the window
	window float64 // the window, seconds; meaningful when hasWin
	jump   bool    // accepted by every gate but held by the jump gate
	hasWin bool

	leState int8    // 0 not parsed, 1 parsed, -1 none or malformed
	bucket  bool    // a histogram's bucket (SetBucket): no jump gate kept
	grp     int32   // its group + 1 (0 none): Observe reads it of every key
	le      float64 // the le label, parsed once for _bucket keys

	key     Key
	span    float64 // the key's own span (SetSpan); 0: the configuration's
	hist    []point // hist[head:] is the history, oldest first
	head    int
	created float64 // the last known _created
	proc    float64 // the process start known at the last sample

	// The jump gate.
	lastRate float64
	hasRate  bool
	held     bool
	heldBase uint64 // seq of the base sample of the held jump
	heldAt   uint64 // seq of the poll the jump was held at: an independent base
	// A key that moves once per request (SetPerRequest): its typical
	// single-poll increment, a request-sized step.
	perRequest bool
	step       float64
	member     int32 // its place in its group
}

// Observe records one poll. Polls must come in time order: one not later than
// the previous is refused whole (every cell reads null, reason order) and
// changes nothing. Samples with a NaN or infinite value are treated as
// absent. A key appearing twice in one poll keeps its first reading.
func (e *Estimator) Observe(p Poll) {
	e.asked.Start()
	e.hasked.Start()
	// A poll without a usable time, or not after its predecessor, measures no time.
	if math.IsNaN(p.T) || math.IsInf(p.T, 0) || (e.seq > 0 && p.T <= e.lastT) {
		e.disordered = true
		return
	}
	e.disordered = false
	e.seq++
	e.lastT = p.T
	if p.ProcessStart != 0 {
		e.procStart = p.ProcessStart
	}
	if p.Restart {
		e.restartT = p.T
	}
	var u float64
	if p.Start > 0 && p.Start < p.T {
		u = p.T - p.Start
	}
	e.cur = e.cur[:0]
	for i := range p.Samples {
		s := &p.Samples[i]
		// A reading that is not a finite number is no reading.
		if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			e.cur = append(e.cur, -1)
			continue
		}
		slot := e.slot(i, s.Key)
		e.cur = append(e.cur, slot)
		if st := &e.keys[slot]; st.grp == 0 {
			e.step(st, s.Value, s.Created, u)
		} else {
			e.stash(st, slot, s.Value, s.Created)
		}
	}
	e.prev, e.cur = e.cur, e.prev
	for i := 0; i < len(p.Readings); i++ {
		r := &p.Readings[i]
		// A reading that is not a finite number is no reading.
		if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
			continue
		}
		st := &e.keys[r.ID]
		switch {
		case st.grp == 0:
			e.step(st, r.Value, r.Created, u)
		case st.member == 0 && e.run(st.grp, p.Readings[i:], u):
			// A group's buckets read in order, kept in one run.
			i += len(e.groups[st.grp-1].members) - 1
		default:
			e.stash(st, r.ID, r.Value, r.Created)
		}
	}
	e.stepGroups(u)
}

// slot returns the index of k's state, creating it on first sight.
func (e *Estimator) slot(i int, k Key) int32 {
	if i < len(e.prev) {
		if s := e.prev[i]; s >= 0 && e.keys[s].key == k {
			return s
		}
	}
	return e.Register(k)
}

// Register returns the id of key k for Poll.Readings, creating its state
// on first sight. Every call with the same key returns the same id.
func (e *Estimator) Register(k Key) int32 {
	for ; e.indexed < len(e.keys); e.indexed++ {
		e.index[e.keys[e.indexed].key] = int32(e.indexed)
	}
	if s, ok := e.index[k]; ok {
		return s
	}
	s := e.RegisterNew(k)
	e.index[k], e.indexed = s, len(e.keys)
	return s
}

// RegisterNew is Register of a key the caller knows e has not seen (a
// tracker registers each of its series once): no lookup, and the key
// is indexed only when Register next looks one up. A key registered
// twice this way gets two ids, the later one's Register's.
func (e *Estimator) RegisterNew(k Key) int32 {
	s := int32(len(e.keys))
	e.keys = append(e.keys, keyState{key: k})
	// A histogram's buckets come one after another: one lookup a name.
	ss := e.lastSeries
	if ss == nil || e.lastName != k.Series {
		ss = e.seriesOf(k.Series)
		e.lastName, e.lastSeries = k.Series, ss
	}
	ss.keys = append(ss.keys, s)
	return s
}

// SetSpan gives key id (from Register) a span of its own, seconds: its
// windows reach back that far and its ceiling is CeilingFactor × it. A
// span ≤ 0 or not a number gives it the configuration's span back. It
// applies from the key's next reading: a span made longer reaches back
// only as far as the history the shorter one kept, and grows from there.
func (e *Estimator) SetSpan(id int32, span float64) {
	if !(span > 0) || math.IsInf(span, 0) {
		span = 0
	}
	e.keys[id].span = span
	if g := e.keys[id].grp; g != 0 {
		e.groups[g-1].spanSet(e, span)
	}
}

// SetPerRequest says key id (from Register) moves once per request, by
// a request-sized step (a prompt counter at prefill, a token counter at
// completion): its jump gate lets a window hold up to RequestSteps typical
// steps whatever the last accepted rate, so that a window holding a
// request or two after one that held none is not a jump. The typical step
// is the largest of the key's recent single-poll increments before it.
func (e *Estimator) SetPerRequest(id int32, on bool) { e.keys[id].perRequest = on }

// SetBucket says key id (from Register) is a histogram's bucket, read
// by Histogram alone: every gate but the jump gate applies to its
// windows, as Histogram applies none, so its jump gate is not kept (a
// third of a step, on most of an engine page's keys). Rate over it reads
// its windows as never held.
// The buckets of one label set are stepped together (together.go).
func (e *Estimator) SetBucket(id int32) {
	e.SetBucketOf(id, BucketOf(e.keys[id].key))
}

// SetBucketOf is SetBucket with the key's facts worked out before:
// b must be BucketOf the key of id.
func (e *Estimator) SetBucketOf(id int32, b BucketFacts) {
	e.keys[id].bucket = true
	e.join(id, b)
}

// RequestSteps is how many typical steps of a per-request key a window may
// hold without being a jump: two requests landing in one poll interval.
// A stale body's catch-up holds many more.
const RequestSteps = 2

// jumpLimit is the rate above which a window of dt seconds is held as a
// jump: JumpFactor × the last accepted rate, which counts as at least the
// floor; for a per-request key at least RequestSteps typical steps over dt.
func (e *Estimator) jumpLimit(st *keyState, dt float64) float64 {
	limit := e.cfg.JumpFactor * max(st.lastRate, e.cfg.JumpFloor)
	if st.perRequest && st.step > 0 && dt > 0 {
		limit = max(limit, RequestSteps*st.step/dt)
	}
	return limit
}

// stepDecay is how much a per-request key's typical step shrinks at each
// poll it moves by less: the step is the largest recent single-poll
// increment, so that requests landing together (a batch that started
// together ends together) set it, and a lighter load lowers it in a few
// polls.
const stepDecay = 0.9

// learnStep folds a per-request key's single-poll increment inc into its
// typical step.
func (st *keyState) learnStep(inc float64) {
	// A poll the key did not move in holds no request.
	if !st.perRequest || !(inc > 0) {
		return
	}
	st.step = max(inc, stepDecay*st.step)
}

// step gates one key's reading at poll e.seq, time e.lastT, and records it.
func (e *Estimator) step(st *keyState, v, created, u float64) {
	// A key seen twice in one poll keeps its first reading.
	if st.lastSeq == e.seq {
		return
	}
	st.prevSeq, st.lastSeq = st.lastSeq, e.seq
	now := e.lastT
	pt := point{t: now, v: v, u: u, seq: e.seq}
	st.jump, st.hasWin, st.delta = false, false, 0

	restarted := (created != 0 && st.created != 0 && created != st.created) ||
		(e.procStart != 0 && st.proc != 0 && e.procStart != st.proc) ||
		(e.restartT != 0 && len(st.hist) > st.head && st.hist[len(st.hist)-1].t < e.restartT)
	if created != 0 {
		st.created = created
	}
	st.proc = e.procStart

	// The first sample of a key has nothing to be diffed against.
	if len(st.hist) == st.head {
		st.reason = ReasonNoBaseline
		st.push(pt)
		return
	}
	// A decrease, a new _created or a new process start is a restart: null, never a spike.
	inc := v - st.hist[len(st.hist)-1].v
	if inc < 0 || restarted {
		st.reason = ReasonReset
		st.held = false
		st.rebase(pt)
		return
	}

	// The base is the oldest sample inside the span, else the previous one.
	span, ceiling := e.spanOf(st.span)
	cutoff := now - span - edgeTolerance
	for len(st.hist)-st.head >= 2 && st.hist[st.head].t < cutoff {
		st.head++
	}
	base := st.hist[st.head]
	dt := now - base.t

	// A window longer than the ceiling is a stall: it measured no window.
	if dt > ceiling {
		st.reason = ReasonCeiling
		st.rebase(pt)
		return
	}
	st.delta, st.window, st.hasWin = v-base.v, dt, true
	// A window under the floor is a catch-up poll: refused, window kept, re-based.
	if dt < e.cfg.MinWindow {
		st.reason = ReasonFloor
		st.rebase(pt)
		return
	}
	st.push(pt)
	// A window resting on a sample more uncertain than StaleFraction of it is refused; the sample stays.
	if limit := e.cfg.StaleFraction * dt; base.u > limit || u > limit {
		st.reason = ReasonStale
		return
	}
	st.reason = ""
	// A bucket keeps no jump gate: Histogram reads none.
	if st.bucket {
		return
	}
	// The step the gate weighs is the one learnt before this poll: a
	// poll's own increment never vouches for itself.
	e.jumpGate(st, v, dt, base)
	st.learnStep(inc)
}

// jumpGate is step's last gate: it holds a window whose rate is many times
// the last accepted one, and keeps the rate the next window is weighed
// against.
func (e *Estimator) jumpGate(st *keyState, v, dt float64, base point) {
	now := e.lastT
	span := e.cfg.Span
	if st.span > 0 {
		span = st.span
	}
	rate := st.delta / dt
	limit := e.jumpLimit(st, dt)
	if st.held {
		if base.seq == st.heldBase {
			// A window on the held jump's base sample is no confirmation; a
			// window from the held poll's own sample is independent of that
			// base, and confirms the jump when it too is above the gate.
			// (Without it, a window that cannot slide yet, early in a run or
			// after a reset, would hold a real load start for a whole span.)
			// The rate to confirm is the last accepted one's, without a
			// per-request key's step allowance: one request after an idle
			// spell confirms that the load started.
			if ind := st.find(st.heldAt); now-ind.t >= e.cfg.MinWindow &&
				(v-ind.v)/(now-ind.t) > e.cfg.JumpFactor*max(st.lastRate, e.cfg.JumpFloor) {
				st.held = false
				st.lastRate, st.hasRate = rate, true
				return
			}
			st.jump = true
			return
		}
		// A window on a different base confirms or replaces the held jump.
		st.held = false
	} else if st.hasRate && rate > limit {
		// A rate that many times the last accepted one is held.
		st.held, st.heldBase, st.heldAt, st.jump = true, base.seq, e.seq, true
		return
	}
	// A window stretched past the span (the configured one, or the key's
	// own when longer) rests on a base from before a hole
	// (a stall, a gap): its rate is diluted by the hole, so it is published
	// but the next poll's jump gate keeps comparing with the rate before the
	// hole. Only a key with no rate before the hole takes it as its
	// reference: without request start times, that is what holds a stale
	// body's catch-up.
	// (Spans are positive numbers: a comparison picks the longer, where
	// max would also weigh NaN and signed zeros, at every step.)
	reach := span
	if e.cfg.Span > reach {
		reach = e.cfg.Span
	}
	if dt > reach+edgeTolerance && st.hasRate {
		return
	}
	st.lastRate, st.hasRate = rate, true
}

// push appends p to the history, compacting instead of growing when at
// least half of it is dropped samples: compacting a history that keeps most
// of its samples would copy it on nearly every poll (a long span's window
// fills all but a sample or two of the capacity).
func (st *keyState) push(p point) {
	if len(st.hist) == cap(st.hist) && st.head > 0 && st.head >= len(st.hist)/2 {
		n := copy(st.hist, st.hist[st.head:])
		st.hist, st.head = st.hist[:n], 0
	}
	st.hist = append(st.hist, p)
}

// find returns the sample of poll seq, which must be in the history: the
// held poll's sample is there whenever the held base is, since samples
// leave the history oldest first and a re-base drops the base too.
func (st *keyState) find(seq uint64) point {
	i := len(st.hist) - 1
	for i > st.head && st.hist[i].seq != seq {
		i--
	}
	return st.hist[i]
}

// rebase makes p the only sample of the history.
func (st *keyState) rebase(p point) {
	st.hist, st.head = append(st.hist[:0], p), 0
}

// spanOf is the window span and ceiling of a key or group whose own span
// is s: the estimator's when s is 0.
func (e *Estimator) spanOf(s float64) (span, ceiling float64) {
	if s > 0 {
		return s, e.cfg.CeilingFactor * s
	}
	return e.cfg.Span, e.ceiling
}
