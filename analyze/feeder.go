package analyze

import (
	"bytes"
	"strings"
	"sync"
	"unsafe"

	"github.com/llmrec/llmrec/record/capture"
)

// A replay on several cores: one goroutine (Analyze's) reads the files and
// hands each row, copied into a batch, to the worker that owns the row's
// target; each worker is an analyzer of its own over the same strings,
// replaying its targets' rows in the files' order, as the serial path
// does. A target's replay depends on its own rows only, so once the
// workers are done their targets are those of the serial path, merged
// into the reading analyzer.
//
// The reader's two hooks asked of a row before it is delivered are
// answered without the workers' state: whether every series of a poll is
// known (its family and type are then not decoded) from the reader's own
// record of the series each target's polls delivered, the same set a
// worker registers; whether a 503's body is read, by the target's worker
// once it has replayed the rows before (a 503 of /metrics is rare, and a
// body read that the serial path does not make may fail where it does not).

// Batch limits: a batch is handed over when it holds this many samples or
// rows (about a megabyte).
const (
	batchSamples = 1 << 15
	batchRows    = 1 << 9
)

// queued is how many batches a worker's channel holds: with two, the
// reader stopped at the full channel of one worker while the other ran
// out, and a 24 h replay kept 1.6 of 2 cores busy (8: 1.75, and 0.82-0.93x
// its wall time). A worker holds at most queued + 2 batches (queued, the
// one it replays, the one being filled), all of them free again after.
const queued = 8

// feeder reads for the workers.
type feeder struct {
	an      *analyzer // the reader, into which the workers are merged
	workers []*analyzer
	in      []chan *batch
	fill    []*batch
	free    chan *batch
	targets map[int32]*seen
	load    []int        // by worker: the samples of its targets' first polls
	looked  *capture.Row // the row known looked at, as in analyzer
	same    bool         // known found looked's series all where the target's last poll had them
	wg      sync.WaitGroup
	sinkMu  sync.Mutex
	panics  []any // a worker's panic, by worker
}

// seen is what the reader knows of a target: its worker and the series
// its polls delivered (keys as analyzer.targetState's), with the last
// poll's by position: names, labels, and whether each is in keys (1;
// 0 from a lookup until the row is delivered).
type seen struct {
	worker               int
	polled               bool // its first poll was delivered (and counted in load)
	keys                 map[uint64]struct{}
	prevName, prevLabels []int32
	prevIn               []byte
	// idx is the first of prevName and prevLabels as dictionary indexes.
	idx lastIdx
}

// lastIdx is the first series of a target's last poll as indexes into
// the dictionaries dict names (capture.Row's NameIdx, LabelsIdx, Dict),
// when has: the reader's Same hook, for the feeder (seen) and the serial
// path (targetState) alike.
type lastIdx struct {
	name, labels []int32
	dict         uint64
	has          bool
}

// same says a poll's dictionary indexes are those of the target's last
// poll's first series, under the same dictionaries: each series is where
// that poll had it (the indexes of one dictionary are its strings).
func (l *lastIdx) same(w *capture.Row) bool {
	n := len(w.NameIdx)
	return l.has && l.dict == w.Dict && n <= len(l.name) && sameInt32s(w.NameIdx, l.name[:n]) &&
		sameInt32s(w.LabelsIdx, l.labels[:n])
}

// keep records the dictionary indexes of a poll just delivered (same:
// found in place) as the first of the last poll's series: those of a
// poll looked up, and of one found in place under other dictionaries
// (the first poll of a new file); a poll looked up without them leaves
// none.
func (l *lastIdx) keep(w *capture.Row, same bool) {
	switch {
	case w.NameIdx == nil:
		l.has = l.has && same
	case !same || !l.has || l.dict != w.Dict:
		l.name, l.labels = append(l.name[:0], w.NameIdx...), append(l.labels[:0], w.LabelsIdx...)
		l.dict, l.has = w.Dict, true
	}
}

func newFeeder(an *analyzer, n int) *feeder {
	f := &feeder{an: an, targets: map[int32]*seen{}, free: make(chan *batch, (queued+2)*n), panics: make([]any, n), load: make([]int, n)}
	an.r.Known = f.known
	an.r.Same = f.sameIdx
	an.r.WantBody = f.wantBody
	wopts := an.opts
	if sink := an.opts.Polls; sink != nil {
		// Options.Polls is called one call at a time.
		wopts.Polls = func(target string, p *Poll) {
			f.sinkMu.Lock()
			defer f.sinkMu.Unlock()
			sink(target, p)
		}
	}
	for i := range n {
		w := &analyzer{opts: wopts, cfg: an.cfg, spans: an.spans, tab: an.tab, targets: map[int32]*targetState{},
			metas: an.metas, metricsID: an.metricsID, okID: an.okID, httpErrID: an.httpErrID}
		ch := make(chan *batch, queued)
		f.workers, f.in, f.fill = append(f.workers, w), append(f.in, ch), append(f.fill, nil)
		f.wg.Add(1)
		go f.work(i, w, ch)
	}
	return f
}

// work replays the batches of worker i, a.
func (f *feeder) work(i int, a *analyzer, ch chan *batch) {
	defer f.wg.Done()
	defer func() {
		// A panic is the caller's, as on the serial path: it is raised
		// again once the reader is done, and the batches still coming
		// are let go.
		if p := recover(); p != nil {
			f.panics[i] = p
			for b := range ch {
				if b.sync != nil {
					b.sync <- struct{}{}
				}
			}
		}
	}()
	for b := range ch {
		if b.sync != nil {
			b.sync <- struct{}{}
			continue
		}
		for k := range b.rows {
			w := b.at(k)
			// A poll whose series are all where the target's last poll
			// had them is looked up already: the worker's lookup would
			// find each in place (its record of the target's series is
			// the reader's), so the batch holds no names for it.
			a.looked = nil
			if b.rows[k].same {
				a.looked = w
			}
			a.row(w)
		}
		b.reset()
		f.free <- b
	}
}

// sameIdx is the reader's Same: a poll whose dictionary indexes are those
// of the target's last poll's series, under the same dictionaries, has
// every series where that poll had it (peek's same, without reading its
// names and labels as strings).
func (f *feeder) sameIdx(w *capture.Row) bool {
	f.looked, f.same = nil, false
	// Only a poll's samples are replayed.
	if !f.an.isPoll(w) {
		return false
	}
	s, ok := f.targets[w.Target]
	if !ok || !s.idx.same(w) || bytes.IndexByte(s.prevIn[:len(w.NameIdx)], 0) >= 0 {
		return false
	}
	f.looked, f.same = w, true
	return true
}

// known is analyzer.known from the series the reader delivered.
func (f *feeder) known(w *capture.Row) bool {
	f.looked, f.same = nil, false
	// Only a poll's samples are replayed.
	if !f.an.isPoll(w) {
		return true
	}
	// A new target's series are all new.
	s, ok := f.targets[w.Target]
	if !ok {
		return false
	}
	f.looked = w
	all, same := s.peek(w)
	f.same = same
	return all
}

// peek is lookup changing nothing: what the reader knows changes with the
// rows delivered only, as the workers' state does (a row known was asked
// of may be damaged and never delivered).
func (s *seen) peek(w *capture.Row) (all, same bool) { return s.scan(w, false) }

// lookup is targetState.lookup on what the reader knows; same says every
// series was where the target's last poll had it (targetState.lookup
// then changes nothing).
func (s *seen) lookup(w *capture.Row) (all, same bool) { return s.scan(w, true) }

// scan answers peek and lookup; keep records each series' place for the
// next row (lookup) or leaves them as they were (peek).
func (s *seen) scan(w *capture.Row, keep bool) (all, same bool) {
	// Most polls: every series where the last poll had it, found by
	// comparing the poll's names and labels with the last poll's whole
	// (memory compared, not a key a sample).
	if n := len(w.Name); n <= len(s.prevName) && sameInt32s(w.Name, s.prevName[:n]) &&
		sameInt32s(w.Labels, s.prevLabels[:n]) && bytes.IndexByte(s.prevIn[:n], 0) < 0 {
		return true, true
	}
	all, same = true, true
	for j, name := range w.Name {
		if j < len(s.prevName) && s.prevName[j] == name && s.prevLabels[j] == w.Labels[j] && s.prevIn[j] != 0 {
			continue
		}
		same = false
		_, in := s.keys[seriesKey(name, w.Labels[j])]
		all = all && in
		// A peek changes nothing: the row may never be delivered.
		if !keep {
			continue
		}
		b := byte(0)
		if in {
			b = 1
		}
		if j < len(s.prevName) {
			s.prevName[j], s.prevLabels[j], s.prevIn[j] = name, w.Labels[j], b
		} else {
			s.prevName, s.prevLabels, s.prevIn = append(s.prevName, name), append(s.prevLabels, w.Labels[j]), append(s.prevIn, b)
		}
	}
	return all, same
}

// record puts the series of a poll of n samples just looked up into
// keys.
func (s *seen) record(n int) {
	for j := range n {
		if s.prevIn[j] == 0 {
			s.keys[seriesKey(s.prevName[j], s.prevLabels[j])] = struct{}{}
			s.prevIn[j] = 1
		}
	}
}

// seriesKey is a series' key in seen.keys: its name and labels, as
// analyzer.targetState's.
func seriesKey(name, labels int32) uint64 { return uint64(uint32(name))<<32 | uint64(uint32(labels)) }

// sameInt32s says a and b, of one length, hold the same values, compared
// as memory.
func sameInt32s(a, b []int32) bool {
	if len(a) == 0 {
		return true
	}
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 4*len(a)), unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), 4*len(b)))
}

// wantBody is analyzer.wantBody asked of the target's worker once it has
// replayed the target's rows before this one.
func (f *feeder) wantBody(w *capture.Row) bool {
	a := f.an
	// Not a 503 of /metrics: no target state is asked.
	if w.Endpoint != a.metricsID || w.Outcome != a.httpErrID || w.Err < 0 || !strings.HasPrefix(a.tab.Str(w.Err), "HTTP 503") {
		return false
	}
	s, ok := f.targets[w.Target]
	// A target no row was delivered of has no state in its worker either.
	if !ok {
		return true
	}
	i := s.worker
	if b := f.fill[i]; b != nil {
		f.in[i] <- b
		f.fill[i] = nil
	}
	done := make(chan struct{})
	f.in[i] <- &batch{sync: done}
	<-done
	// The worker waits for its next batch: its state is the reader's to
	// read until then.
	if f.panics[i] != nil {
		return false
	}
	return f.workers[i].wantBody(w)
}

// row hands a row to its target's worker.
func (f *feeder) row(w *capture.Row) {
	a := f.an
	a.rows++
	s, ok := f.targets[w.Target]
	if !ok {
		s = &seen{worker: f.lightest(), keys: map[uint64]struct{}{}}
		f.targets[w.Target] = s
	}
	same := f.place(s, w)
	b := f.fill[s.worker]
	if b == nil {
		select {
		case b = <-f.free:
		default:
			b = &batch{}
		}
		f.fill[s.worker] = b
	}
	b.add(w, same)
	if len(b.vals) >= batchSamples || len(b.rows) >= batchRows {
		f.in[s.worker] <- b
		f.fill[s.worker] = nil
	}
}

// lightest is the worker a new target goes to: the one whose targets'
// first polls held the fewest samples (the lowest index of equals). A
// target's replay costs about its samples a poll, and engines differ
// tenfold (a vLLM page against a llama.cpp one): dealt in turn, one worker
// could get the heavy ones and the replay wait for it alone.
func (f *feeder) lightest() int {
	i := 0
	for j, l := range f.load {
		if l < f.load[i] {
			i = j
		}
	}
	return i
}

// place records the series of row w of target s (row's bookkeeping):
// same says it is a poll found where the target's last poll had its
// series.
func (f *feeder) place(s *seen, w *capture.Row) (same bool) {
	a := f.an
	if a.isPoll(w) {
		// A poll the reader's Same knew has no names: its values count.
		a.samples += int64(len(w.Value))
		if !s.polled {
			s.polled = true
			f.load[s.worker] += len(w.Value)
		}
		// A row known found in place changes nothing; else (a changed
		// poll, or one known was not asked of) it is looked up here.
		// (A poll of no samples known is not asked of changes nothing.)
		if f.looked == w && f.same {
			same = true
		} else {
			_, same = s.lookup(w)
		}
		// A poll found in place has every series in keys already.
		if !same {
			s.record(len(w.Name))
		}
		s.idx.keep(w, same)
	}
	f.looked, f.same = nil, false
	return same
}

// finish hands over the last batches, waits for the workers and merges
// their targets into the reader's analyzer.
func (f *feeder) finish() {
	for i, b := range f.fill {
		if b != nil {
			f.in[i] <- b
		}
		close(f.in[i])
	}
	f.wg.Wait()
	for _, p := range f.panics {
		if p != nil {
			panic(p)
		}
	}
	a := f.an
	for _, w := range f.workers {
		// Target ids are the shared strings': no two workers hold one.
		for id, st := range w.targets {
			a.targets[id] = st
		}
		a.floors = append(a.floors, w.floors...)
		if a.err == nil {
			a.err = w.err
		}
	}
}

// batch is rows copied for a worker: their samples and bytes in arenas,
// the rows' slices rebuilt by at.
type batch struct {
	// sync, when set, is a batch of no rows: the worker says on it that
	// it has replayed every batch before.
	sync  chan struct{}
	rows  []batchRow
	ints  []int32
	vals  []float64
	bytes []byte
}

// batchRow is a row with its slices as offsets into the batch.
type batchRow struct {
	w              capture.Row // slices nil
	ints, vals, n  int         // the samples: names, labels, then families and types when kinds
	kinds          bool
	same           bool // looked up already (feeder.same): values only, no names nor labels
	body, headers  int  // offsets in bytes; -1 nil
	nBody, nHeader int
}

func (b *batch) reset() {
	b.rows, b.ints, b.vals, b.bytes = b.rows[:0], b.ints[:0], b.vals[:0], b.bytes[:0]
}

// add copies w into the batch; a row looked up already (same) without
// its names and labels. The row is written in place, never built apart
// and copied (a Row is some 400 bytes).
func (b *batch) add(w *capture.Row, same bool) {
	k := len(b.rows)
	if k < cap(b.rows) {
		b.rows = b.rows[:k+1]
	} else {
		b.rows = append(b.rows, batchRow{})
	}
	r := &b.rows[k]
	r.w = *w
	r.ints, r.vals, r.n, r.body, r.headers, r.nBody, r.nHeader = len(b.ints), len(b.vals), len(w.Value), -1, -1, 0, 0
	r.kinds = len(w.Family) == len(w.Name) && len(w.Type) == len(w.Name) && len(w.Name) > 0 && !same
	r.same = same
	r.w.Family, r.w.Type, r.w.Name, r.w.Labels, r.w.Value, r.w.Body, r.w.Headers = nil, nil, nil, nil, nil, nil, nil
	r.w.NameIdx, r.w.LabelsIdx = nil, nil
	if !same {
		b.ints = append(b.ints, w.Name...)
		b.ints = append(b.ints, w.Labels...)
	}
	if r.kinds {
		b.ints = append(b.ints, w.Family...)
		b.ints = append(b.ints, w.Type...)
	}
	b.vals = append(b.vals, w.Value...)
	if w.Body != nil {
		r.body, r.nBody = len(b.bytes), len(w.Body)
		b.bytes = append(b.bytes, w.Body...)
	}
	if w.Headers != nil {
		r.headers, r.nHeader = len(b.bytes), len(w.Headers)
		b.bytes = append(b.bytes, w.Headers...)
	}
}

// at returns row k of the batch, its slices set to the batch's: the
// batch's own row, not a copy (the worker reads it in place).
func (b *batch) at(k int) *capture.Row {
	r := &b.rows[k]
	w := &r.w
	n, i := r.n, r.ints
	if !r.same {
		w.Name, w.Labels = b.ints[i:i+n:i+n], b.ints[i+n:i+2*n:i+2*n]
	}
	if r.kinds {
		w.Family, w.Type = b.ints[i+2*n:i+3*n:i+3*n], b.ints[i+3*n:i+4*n:i+4*n]
	}
	w.Value = b.vals[r.vals : r.vals+n : r.vals+n]
	if r.body >= 0 {
		w.Body = b.bytes[r.body : r.body+r.nBody : r.body+r.nBody]
	}
	if r.headers >= 0 {
		w.Headers = b.bytes[r.headers : r.headers+r.nHeader : r.headers+r.nHeader]
	}
	return w
}
