package rate

import (
	"math"
	"slices"
)

// The buckets of one histogram label set (SetBucket) are stepped
// together: they share the poll's time and uncertainty and, while every
// one of them is read at every poll and none alone fell, their history's
// times. A group in step keeps that history once (its timeline) and each
// bucket's values in a dense array beside it, and gates a poll once for
// all of them. A group that falls out of step (a bucket absent or alone
// reset, a new bucket, spans apart) hands each bucket the history it would
// have kept alone, and every bucket steps alone (Estimator.step) until
// all of them restart their history at one poll.

// together turns the group stepping on; the tests turn it off to compare.
var together = true

// tpoint is one poll of a group's timeline: a point without its value.
type tpoint struct {
	t, u float64
	seq  uint64
}

// group is the buckets of one histogram label set.
type group struct {
	members []int32 // key slots, in order of SetBucket
	// inStep says every member's history is tl[head:] with its vals, its
	// last known _created is created[m], its process start proc and its
	// span span: the members' own fields for these are not kept then.
	inStep bool
	tl     []tpoint
	head   int
	vals   []float64 // vals[i*len(members)+m]: member m's value at tl[i]
	known  []float64 // by member: the last known _created
	proc   float64
	span   float64

	// The verdict of poll vseq when every member was stepped together:
	// the reason, the window when hasWin and each member's Δ. While the
	// group is in step its verdicts are kept here alone: the members'
	// own (lastSeq lseq, prevSeq pseq, reason, Δ, window) are written
	// when they are read one by one (sync).
	vseq   uint64
	lseq   uint64
	pseq   uint64
	reason string
	hasWin bool
	dt     float64
	delta  []float64
	// The members' le bounds, parsed as addBucket does; lesOK when every
	// member has one, rising when they are strictly rising in member order
	// (prepareBuckets then neither sorts nor merges them).
	les    []float64
	lesOK  bool
	rising bool

	// This poll's readings, by member; mark[m] == seq when it has one,
	// or every member has one when n is their number.
	seq uint64
	n   int // members with a reading this poll
	// run's count of the members that restart, on poll rseq.
	rseq    uint64
	resets  int
	mark    []uint64
	pend    []float64
	created []float64
}

// groupKey is the label set of a bucket without its le label; ok false
// when the set is not well formed.
func groupKey(k Key) (Key, bool) {
	// A plain set is cut where it is, without a copy of its pairs.
	if l, ok := PlainWithout(k.Labels, "le"); ok {
		return Key{Series: k.Series, Labels: l}, true
	}
	var pairs []string
	if !eachLabel(k.Labels, func(name, value string) bool {
		if name != "le" {
			pairs = append(pairs, name, value)
		}
		return true
	}) {
		return Key{}, false
	}
	return Key{Series: k.Series, Labels: Labels(pairs...)}, true
}

// BucketFacts is what joining a bucket's group takes of its key alone: the
// group's key (its label set without le) and its le bound. BucketOf works
// it out once; it serves every estimator the key is registered with.
type BucketFacts struct {
	group   Key
	grouped bool // the label set is well formed
	le      float64
	leOK    bool
}

// BucketOf returns the bucket facts of key k, as SetBucket works them out.
func BucketOf(k Key) BucketFacts {
	var b BucketFacts
	b.group, b.grouped = groupKey(k)
	b.le, b.leOK = parseLe(k.Labels)
	return b
}

// join makes bucket key id, whose facts are b, a member of its label
// set's group.
func (e *Estimator) join(id int32, b BucketFacts) {
	st := &e.keys[id]
	if st.grp != 0 || !together {
		return
	}
	// A label set that does not parse steps alone.
	if !b.grouped {
		return
	}
	gk := b.group
	if e.groupOf == nil {
		e.groupOf = map[Key]int32{}
	}
	gi, ok := e.groupOf[gk]
	if !ok {
		e.groups = append(e.groups, newGroup(st.span))
		gi = int32(len(e.groups))
		e.groupOf[gk] = gi
	}
	g := &e.groups[gi-1]
	// A member joining a group with a history has none of its own; one
	// with a history of its own, or a span of its own, has none of the
	// group's.
	if len(g.tl) > 0 || st.lastSeq != 0 || st.span != g.span {
		e.fallOut(g)
	}
	st.grp, st.member = gi, int32(len(g.members))
	g.members = append(g.members, id)
	g.mark, g.pend, g.created = append(g.mark, 0), append(g.pend, 0), append(g.created, 0)
	g.known, g.delta = append(g.known, st.created), append(g.delta, 0)
	le, ok := b.le, b.leOK
	g.rising = g.rising && ok && (len(g.les) == 0 || g.les[len(g.les)-1] < le)
	g.les, g.lesOK = append(g.les, le), g.lesOK && ok
}

// groupRoom is the members a group has room for when made: its
// per-member slices grown one member at a time were a tenth of a replay's
// allocations (vLLM's histograms have 10 to 30 buckets).
const groupRoom = 32

// newGroup returns an empty group of span span, its per-member slices
// made with room for groupRoom members (the five of float64 in one
// array, each its own third).
func newGroup(span float64) group {
	const n = groupRoom
	f := make([]float64, 5*n)
	return group{inStep: true, span: span, lesOK: true, rising: true,
		members: make([]int32, 0, n), mark: make([]uint64, 0, n),
		pend: f[0:0:n], created: f[n : n : 2*n], known: f[2*n : 2*n : 3*n], delta: f[3*n : 3*n : 4*n], les: f[4*n : 4*n : 5*n]}
}

// wholeRun returns the group whose members are all of series' keys, in
// order, when they were stepped together this poll, every window
// accepted, with strictly rising bounds, a finite first one and +Inf
// last: gather in modeBuckets (no matcher) would read them in one run
// (gatherRun) and prepareBuckets would hand them on as gathered. nil
// otherwise.
func (e *Estimator) wholeRun(series *seriesState) *group {
	gi := e.wholeGroup(series)
	// Keys that are not one group's members: no run.
	if gi == 0 {
		return nil
	}
	g := &e.groups[gi-1]
	M := len(g.members)
	if M < 2 || !g.rising || !math.IsInf(g.les[M-1], 1) || !g.inStep || g.vseq != e.seq ||
		g.reason != "" || !g.hasWin || !g.lesOK {
		return nil
	}
	return g
}

// wholeGroup returns the group (index + 1) whose members are series'
// keys, in order, or 0; found once while no key is added.
func (e *Estimator) wholeGroup(series *seriesState) int32 {
	keys := series.keys
	// Found since the last key was added.
	if series.whole != 0 && series.wholeLen == len(keys) {
		return series.whole
	}
	// No keys, or a first key outside a group: no group.
	if len(keys) == 0 {
		return 0
	}
	st := &e.keys[keys[0]]
	if st.grp == 0 || st.member != 0 {
		return 0
	}
	g := &e.groups[st.grp-1]
	if len(g.members) != len(keys) {
		return 0
	}
	for m, id := range g.members {
		if keys[m] != id {
			return 0
		}
	}
	series.whole, series.wholeLen = st.grp, len(keys)
	return st.grp
}

// spanSet is SetSpan of a member: a span apart from the group's takes the
// group out of step.
func (g *group) spanSet(e *Estimator, span float64) {
	if g.inStep && span != g.span {
		e.fallOut(g)
	}
}

// stash keeps a reading of bucket st (key id) for its group's step at the
// end of the poll.
func (e *Estimator) stash(st *keyState, id int32, v, created float64) {
	g := &e.groups[st.grp-1]
	if g.seq != e.seq {
		g.seq, g.n = e.seq, 0
		e.stepped = append(e.stepped, st.grp)
	}
	// A group with all its readings has only second readings left.
	if g.n == len(g.members) {
		return
	}
	// Targets print a label set's buckets in the same order every poll:
	// the n-th reading is most often the n-th member.
	m := g.n
	if m >= len(g.members) || g.members[m] != id {
		m = int(st.member)
	}
	// A key seen twice in one poll keeps its first reading.
	if g.mark[m] == e.seq {
		return
	}
	g.mark[m], g.pend[m], g.created[m] = e.seq, v, created
	g.n++
}

// run keeps the readings of group gi when rs starts with every member's,
// in order, each a finite number, and the group has no reading yet this
// poll; it reports whether it did. A group in step whose window is
// accepted or stale and none of whose members restarts is stepped here,
// from rs (stepFast); any other is stepped with the poll's other groups
// (stepGroups), run having counted its restarting members on the way.
func (e *Estimator) run(gi int32, rs []Reading, u float64) bool {
	g := &e.groups[gi-1]
	M := len(g.members)
	if g.seq == e.seq || len(rs) < M {
		return false
	}
	rs = rs[:M]
	resets := 0
	if len(g.tl) == 0 {
		// A group without a sample has nothing to restart against.
		for m, id := range g.members {
			r := &rs[m]
			// A reading out of order, or not a number, ends the run.
			if r.ID != id || math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
				return false
			}
		}
	} else {
		known, last := g.known[:M], g.vals[(len(g.tl)-1)*M:][:M]
		for m, id := range g.members {
			r := &rs[m]
			v, c := r.Value, r.Created
			// A reading out of order, or not a number, ends the run
			// (v-v is NaN for NaN and both infinities, 0 for the rest).
			if r.ID != id || v-v != 0 {
				return false
			}
			// A new _created, or a fall: that member restarts.
			if k := known[m]; (c != 0 && k != 0 && c != k) || v < last[m] {
				resets++
			}
		}
	}
	g.seq, g.n = e.seq, M
	if resets == 0 && g.inStep && len(g.tl) > 0 && e.stepFast(g, rs, u) {
		return true
	}
	pend, created := g.pend[:M], g.created[:M]
	for m := range rs {
		pend[m], created[m] = rs[m].Value, rs[m].Created
	}
	g.rseq, g.resets = e.seq, resets
	e.stepped = append(e.stepped, gi)
	return true
}

// stepFast is stepTogether's accepted and stale windows, of a group in
// step with a history and no member restarting, read from its readings
// rs; it reports false, having changed nothing a step reads again, for
// every other verdict.
func (e *Estimator) stepFast(g *group, rs []Reading, u float64) bool {
	now := e.lastT
	// A new process start, a restart flagged after the last sample: stepTogether's.
	if (e.procStart != 0 && g.proc != 0 && e.procStart != g.proc) ||
		(e.restartT != 0 && g.tl[len(g.tl)-1].t < e.restartT) {
		return false
	}
	ceiling := e.groupBase(g, now)
	base := g.tl[g.head]
	dt := now - base.t
	// A stall or a catch-up poll: stepTogether's.
	if dt > ceiling || dt < e.cfg.MinWindow {
		return false
	}
	reason := ""
	// A window resting on a sample more uncertain than StaleFraction of it is refused; the sample stays.
	if limit := e.cfg.StaleFraction * dt; base.u > limit || u > limit {
		reason = ReasonStale
	}
	e.verdictsPush(g, reason, dt, tpoint{t: now, u: u, seq: e.seq}, rs)
	return true
}

// stepGroups steps the groups that had readings in the current poll.
func (e *Estimator) stepGroups(u float64) {
	for _, gi := range e.stepped {
		g := &e.groups[gi-1]
		if !g.inStep || !e.stepTogether(g, u) {
			e.fallOut(g)
			for m, id := range g.members {
				if g.n == len(g.members) || g.mark[m] == e.seq {
					e.step(&e.keys[id], g.pend[m], g.created[m], u)
				}
			}
			e.backInStep(g)
		}
	}
	e.stepped = e.stepped[:0]
}

// stepTogether is Estimator.step for every member of g at once; it
// reports false, having changed nothing, when the members would not stay
// in step: one absent, one alone reset.
func (e *Estimator) stepTogether(g *group, u float64) bool {
	// A member without a reading this poll leaves the others' step.
	if g.n != len(g.members) {
		return false
	}
	now := e.lastT
	// The group-wide restart evidence: a new process start, a restart
	// flagged after the last sample.
	restarted := (e.procStart != 0 && g.proc != 0 && e.procStart != g.proc) ||
		(e.restartT != 0 && len(g.tl) > g.head && g.tl[len(g.tl)-1].t < e.restartT)
	M := len(g.members)
	resets := 0
	switch {
	case g.rseq == e.seq:
		// Counted by run on its way.
		resets = g.resets
	case len(g.tl) > 0:
		last := g.vals[(len(g.tl)-1)*M:]
		for m, v := range g.pend {
			// A new _created, or a fall: that member restarts.
			c, k := g.created[m], g.known[m]
			if (c != 0 && k != 0 && c != k) || v < last[m] {
				resets++
			}
		}
	}
	pt := tpoint{t: now, u: u, seq: e.seq}
	switch {
	case len(g.tl) == g.head:
		// The first sample of a key has nothing to be diffed against.
		e.verdicts(g, ReasonNoBaseline, 0, false, nil)
		g.push(pt, g.pend)
		return true
	case restarted || resets == M:
		// A restart of every member: null, never a spike.
		e.verdicts(g, ReasonReset, 0, false, nil)
		g.rebase(pt)
		return true
	case resets > 0:
		// One member alone reset: it leaves the others' step.
		return false
	}
	ceiling := e.groupBase(g, now)
	base := g.tl[g.head]
	dt := now - base.t
	baseVals := g.vals[g.head*M : g.head*M+M]
	switch {
	case dt > ceiling:
		// A window longer than the ceiling is a stall: it measured no window.
		e.verdicts(g, ReasonCeiling, 0, false, nil)
		g.rebase(pt)
	case dt < e.cfg.MinWindow:
		// A window under the floor is a catch-up poll: refused, window kept, re-based.
		e.verdicts(g, ReasonFloor, dt, true, baseVals)
		g.rebase(pt)
	default:
		reason := ""
		// A window resting on a sample more uncertain than StaleFraction of it is refused; the sample stays.
		if limit := e.cfg.StaleFraction * dt; base.u > limit || u > limit {
			reason = ReasonStale
		}
		e.verdictsPush(g, reason, dt, pt, nil)
	}
	return true
}

// verdictsPush is verdicts with a window against the group's base sample
// tl[head] followed by push, in one pass over the members: each one's
// value kept, its Δ and its last known _created; the readings are rs when
// not nil (stepFast), else the kept ones (pend, created).
func (e *Estimator) verdictsPush(g *group, reason string, dt float64, p tpoint, rs []Reading) {
	M := len(g.members)
	g.proc = e.procStart
	g.vseq, g.reason, g.hasWin, g.dt = e.seq, reason, true, dt
	g.pseq, g.lseq = g.lseq, e.seq
	// Compacting first, as keyState.push does: it moves the base sample's row.
	if len(g.tl) == cap(g.tl) && g.head > 0 && g.head >= len(g.tl)/2 {
		n := copy(g.tl, g.tl[g.head:])
		copy(g.vals, g.vals[g.head*M:])
		g.tl, g.vals, g.head = g.tl[:n], g.vals[:n*M], 0
	}
	g.tl = append(g.tl, p)
	n := len(g.vals)
	g.vals = slices.Grow(g.vals, M)[:n+M]
	row, base := g.vals[n:n+M], g.vals[g.head*M:][:M]
	known, delta := g.known[:M], g.delta[:M]
	if rs != nil {
		for m := range rs[:M] {
			r := &rs[m]
			v := r.Value
			row[m], delta[m] = v, v-base[m]
			if c := r.Created; c != 0 {
				known[m] = c
			}
		}
		return
	}
	pend, created := g.pend[:M], g.created[:M]
	for m, v := range pend {
		row[m], delta[m] = v, v-base[m]
		if c := created[m]; c != 0 {
			known[m] = c
		}
	}
}

// verdicts keeps the verdict of the current poll for every member of g,
// as step does, in the group (each member's own fields are written when
// read: sync): the window dt and each member's Δ against base when
// hasWin; the members' last known _created and process start are the
// group's.
func (e *Estimator) verdicts(g *group, reason string, dt float64, hasWin bool, base []float64) {
	for m, c := range g.created {
		if c != 0 {
			g.known[m] = c
		}
	}
	g.proc = e.procStart
	g.vseq, g.reason, g.hasWin, g.dt = e.seq, reason, hasWin, dt
	g.pseq, g.lseq = g.lseq, e.seq
	if !hasWin {
		return
	}
	pend := g.pend[:len(g.members)]
	base, delta := base[:len(pend)], g.delta[:len(pend)]
	for m, v := range pend {
		delta[m] = v - base[m]
	}
}

// sync writes the verdicts of st's group, kept in the group while it is
// in step, into the member's own fields, as step would have: gather
// reading a bucket alone, and the group falling out of step, read them
// there.
func (e *Estimator) sync(st *keyState) {
	g := &e.groups[st.grp-1]
	// A group out of step has its members' own fields; a member synced
	// since the group's last verdict has them too.
	if !g.inStep || st.lastSeq == g.lseq {
		return
	}
	st.prevSeq, st.lastSeq = g.pseq, g.lseq
	st.jump, st.hasWin, st.reason, st.delta = false, g.hasWin, g.reason, 0
	if g.hasWin {
		st.delta, st.window = g.delta[st.member], g.dt
	}
}

// push appends a poll to g's timeline and the members' readings to
// their values. It starts a timeline (a first sample, a rebase): a step
// that keeps the history appends, and compacts, in verdictsPush.
func (g *group) push(p tpoint, vals []float64) {
	g.tl = append(g.tl, p)
	g.vals = append(g.vals, vals...)
}

// rebase makes the current poll g's only sample.
func (g *group) rebase(p tpoint) {
	g.tl, g.vals, g.head = g.tl[:0], g.vals[:0], 0
	g.push(p, g.pend)
}

// fallOut hands each member of an in-step group the history, _created
// and process start it would have kept alone; from then on each steps
// alone.
func (e *Estimator) fallOut(g *group) {
	if !g.inStep {
		return
	}
	M := len(g.members)
	for m, id := range g.members {
		st := &e.keys[id]
		e.sync(st)
		st.created, st.proc = g.known[m], g.proc
		st.hist, st.head = st.hist[:0], 0
		for i := g.head; i < len(g.tl); i++ {
			p := g.tl[i]
			st.hist = append(st.hist, point{t: p.t, v: g.vals[i*M+m], u: p.u, seq: p.seq})
		}
	}
	g.tl, g.vals, g.head = g.tl[:0], g.vals[:0], 0
	g.inStep = false
}

// backInStep puts g back in step when every member's history is the one
// sample of the current poll (each restarted its history at it, or it was
// their first) and their spans and process starts agree: from there they
// share their history's times.
func (e *Estimator) backInStep(g *group) {
	first := &e.keys[g.members[0]]
	for _, id := range g.members {
		st := &e.keys[id]
		if len(st.hist)-st.head != 1 || st.hist[st.head].seq != e.seq || st.span != first.span ||
			st.proc != first.proc {
			return
		}
	}
	p := first.hist[first.head]
	g.tl, g.vals, g.head = append(g.tl[:0], tpoint{t: p.t, u: p.u, seq: p.seq}), g.vals[:0], 0
	g.proc, g.span = first.proc, first.span
	// Every member's last poll is this one (its history's one sample).
	g.lseq = e.seq
	for m, id := range g.members {
		st := &e.keys[id]
		g.vals = append(g.vals, st.hist[st.head].v)
		g.known[m] = st.created
		st.hist, st.head = st.hist[:0], 0
	}
	g.inStep = true
}

// gatherRun is gather's loop over the members of group gi in one pass,
// when keys starts with them in order and the group was stepped together
// this poll, every window accepted, and every member has an le bound: the
// same sums in the same order, the deltas and bounds read from the
// group's dense arrays. It reports how many keys it read, 0 for none.
func (e *Estimator) gatherRun(gi int32, keys []int32, sum, window *float64) int {
	g := &e.groups[gi-1]
	M := len(g.members)
	if !g.inStep || g.vseq != e.seq || g.reason != "" || !g.hasWin || !g.lesOK || len(keys) < M {
		return 0
	}
	for m, id := range g.members {
		if keys[m] != id {
			return 0
		}
	}
	s, w, dt := *sum, *window, g.dt
	les, delta := g.les[:M], g.delta[:M]
	for m, d := range delta {
		w = maxOf(w, dt)
		e.buckets = append(e.buckets, bucket{les[m], d})
		s += d
	}
	*sum, *window = s, w
	return M
}

// groupBase moves g's base to the oldest sample inside its span at now,
// else the one before it, and returns the span's ceiling.
func (e *Estimator) groupBase(g *group, now float64) (ceiling float64) {
	span, ceiling := e.spanOf(g.span)
	cutoff := now - span - edgeTolerance
	for len(g.tl)-g.head >= 2 && g.tl[g.head].t < cutoff {
		g.head++
	}
	return ceiling
}
