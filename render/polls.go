package render

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Polls keeps, of each target's polls, what a report draws of them: the
// charted cells' values packed in columns, the waiting split, and the first
// source of each headline cell. An analysis can hand it its polls as it
// replays them (analyze.Options.Polls) instead of holding every poll's
// cells: a day of 8 engines is gigabytes of them. It computes nothing; the
// charts are laid out from it as they would be from Target.Polls. It is not
// safe for concurrent use.
type Polls struct {
	targets map[string]*targetPolls
	strs    interned[string] // Source, Reason and Severity texts, by id
	notes   [][]string       // Notes lists, by id (0: none)
	// buckets are the distinct quantile buckets, by id (0: none): a run
	// has a few dozen, so a poll's cell keeps one uint32, not two Nums.
	buckets interned[rate.Bucket]
	// metas are the distinct cells less their value and window, by id
	// (0: absent): a poll's charted cell is two float64s and a uint32.
	metas interned[cellMeta]
}

// NewPolls returns an empty Polls.
func NewPolls() *Polls {
	return &Polls{targets: map[string]*targetPolls{}, strs: newInterned(""), notes: [][]string{nil},
		buckets: newInterned(rate.Bucket{}), metas: newInterned(cellMeta{})}
}

// targetPolls is one target's polls as the charts need them.
type targetPolls struct {
	t       chunked[float64]     // the drawable polls' times, rising
	brk     chunked[uint32]      // the line break before each drawable poll (analyze.Poll.Break), as an id of Polls.strs
	late    int                  // polls stamped before the one ahead of them, not drawn
	cols    map[string]*cellCol  // charted cell → its value in each drawable poll
	waiting chunked[waitingCell] // waiting_by_reason in each drawable poll
	sources map[string]string    // headline cell → the first non-empty source of any poll
	scratch map[string]bool      // names seen in the poll being added
}

// cellCol is a charted cell in each drawable poll: its value's and
// window's numbers (as their bits), and the rest as an id of Polls.metas.
// A gauge holds its value for long stretches and a cell's meta rarely
// changes: the columns are kept in runs where that is smaller.
type cellCol struct {
	val, win packed[uint64]
	meta     packed[uint32]
	// The poll being added: its value, window and meta, set by its cell.
	pval, pwin uint64
	pmeta      uint32
}

// cellMeta is a cell of one poll less its value's and window's numbers,
// its texts as ids.
type cellMeta struct {
	valueValid, windowValid        bool
	source, reason, severity, note uint32
	bucket                         uint32 // Polls.buckets
	derived, present               bool
}

// chunked is a list kept in chunks of chunkLen: a day of polls grows it
// without copying it, or holding room it does not use.
type chunked[T any] struct {
	chunks [][]T
	n      int
}

const chunkLen = 1 << 10

func (c *chunked[T]) add(v T) {
	if c.n%chunkLen == 0 {
		c.chunks = append(c.chunks, make([]T, 0, chunkLen))
	}
	last := &c.chunks[len(c.chunks)-1]
	*last = append(*last, v)
	c.n++
}

func (c *chunked[T]) at(i int) T { return c.chunks[i/chunkLen][i%chunkLen] }

func (c *chunked[T]) set(i int, v T) { c.chunks[i/chunkLen][i%chunkLen] = v }

func (c *chunked[T]) len() int { return c.n }

// last is the last element; the list is not empty.
func (c *chunked[T]) last() T { return c.at(c.n - 1) }

// packed is a list kept in chunks of chunkLen, each full chunk as its
// runs of equal values where they take less room than the values: what a
// poll adds is the same as the poll before's in most columns.
type packed[T comparable] struct {
	full []packedChunk[T]
	cur  []T // the chunk being filled, as values
	n    int
}

// packedChunk is a full chunk: its values, or (ends not nil) its runs,
// vals[k] up to index ends[k] (exclusive) within the chunk.
type packedChunk[T comparable] struct {
	vals []T
	ends []uint16
}

func (c *packed[T]) add(v T) {
	if c.cur == nil {
		c.cur = make([]T, 0, chunkLen)
	}
	c.cur = append(c.cur, v)
	c.n++
	if len(c.cur) < chunkLen {
		return
	}
	c.full = append(c.full, seal(c.cur))
	c.cur = nil
}

// seal keeps a full chunk as its runs when they are smaller than its
// values, each run costing one value and a uint16.
func seal[T comparable](vals []T) packedChunk[T] {
	runs := 1
	for i := 1; i < len(vals); i++ {
		if vals[i] != vals[i-1] {
			runs++
		}
	}
	size := binary.Size(vals[0])
	// Runs no smaller than the values: keep the values.
	if runs*(size+2) >= len(vals)*size {
		return packedChunk[T]{vals: vals}
	}
	pc := packedChunk[T]{vals: make([]T, 0, runs), ends: make([]uint16, 0, runs)}
	for i, v := range vals {
		if i > 0 && v != vals[i-1] {
			pc.ends = append(pc.ends, uint16(i))
			pc.vals = append(pc.vals, vals[i-1])
		}
	}
	pc.ends = append(pc.ends, uint16(len(vals)))
	pc.vals = append(pc.vals, vals[len(vals)-1])
	return pc
}

func (c *packed[T]) at(i int) T {
	k, j := i/chunkLen, i%chunkLen
	if k == len(c.full) {
		return c.cur[j]
	}
	pc := &c.full[k]
	if pc.ends == nil {
		return pc.vals[j]
	}
	r, _ := slices.BinarySearch(pc.ends, uint16(j+1))
	return pc.vals[r]
}

func (c *packed[T]) len() int { return c.n }

type waitingCell struct {
	present        bool
	by             map[string]float64 // shared with the poll: the engine does not change it afterwards
	source, reason uint32
}

// charted are the cells the target charts draw.
var charted = func() map[string]bool {
	m := map[string]bool{}
	for _, spec := range targetCharts {
		for _, c := range spec.cells {
			m[c] = true
		}
	}
	return m
}()

var headline = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range engine.Headline {
		m[c] = true
	}
	return m
}()

func (ps *Polls) target(name string) *targetPolls {
	tp := ps.targets[name]
	if tp == nil {
		tp = &targetPolls{cols: map[string]*cellCol{}, sources: map[string]string{}, scratch: map[string]bool{}}
		for c := range charted {
			tp.cols[c] = &cellCol{}
		}
		ps.targets[name] = tp
	}
	return tp
}

// Add keeps what the report draws of target's poll p; polls come in the
// order of Target.Polls. p's cells need not outlive the call.
func (ps *Polls) Add(target string, p *analyze.Poll) {
	tp := ps.target(target)
	for _, c := range p.Cells {
		if headline[c.Name] && c.Cell.Source != "" && tp.sources[c.Name] == "" {
			tp.sources[c.Name] = c.Cell.Source
		}
	}
	// A poll stamped before the one ahead of it is not drawn: a chart's x
	// must grow.
	if tp.t.len() > 0 && p.T <= tp.t.last() {
		tp.late++
		return
	}
	tp.t.add(p.T)
	tp.brk.add(ps.id(p.Break))
	tp.waiting.add(waitingCell{})
	i := tp.t.len() - 1
	clear(tp.scratch)
	for _, c := range p.Cells {
		// A name seen twice in a poll is the first one's (Cells.Get).
		if tp.scratch[c.Name] {
			continue
		}
		tp.scratch[c.Name] = true
		if c.Name == engine.WaitingByReason {
			tp.waiting.set(i, waitingCell{present: true, by: c.Cell.By, source: ps.id(c.Cell.Source), reason: ps.id(c.Cell.Reason)})
		}
		col, ok := tp.cols[c.Name]
		if !ok {
			continue
		}
		rc := c.Cell.Cell
		col.pval, col.pwin = math.Float64bits(rc.Value.V), math.Float64bits(rc.Window.V)
		col.pmeta = ps.metas.id(cellMeta{valueValid: rc.Value.Valid, windowValid: rc.Window.Valid, source: ps.id(rc.Source),
			reason: ps.id(rc.Reason), severity: ps.id(rc.Severity), note: ps.noteID(rc.Notes), bucket: ps.buckets.id(rc.Bucket),
			derived: rc.Derived, present: true})
	}
	// A cell not in the poll is kept as zeros: meta 0 is absent.
	for _, col := range tp.cols {
		col.val.add(col.pval)
		col.win.add(col.pwin)
		col.meta.add(col.pmeta)
		col.pval, col.pwin, col.pmeta = 0, 0, 0
	}
}

func (ps *Polls) id(s string) uint32 { return ps.strs.id(s) }

// interned numbers distinct values in order of first use, the zero
// value 0: a packed cell keeps the number, not the value.
type interned[K comparable] struct {
	list []K
	ids  map[K]uint32
}

func newInterned[K comparable](zero K) interned[K] {
	return interned[K]{list: []K{zero}, ids: map[K]uint32{zero: 0}}
}

func (in *interned[K]) id(k K) uint32 {
	if i, ok := in.ids[k]; ok {
		return i
	}
	i := uint32(len(in.list))
	in.list = append(in.list, k)
	in.ids[k] = i
	return i
}

// noteID is the id of a Notes list; lists are few and short, and equal
// ones share an id.
func (ps *Polls) noteID(notes []string) uint32 {
	if notes == nil {
		return 0
	}
	for i, n := range ps.notes[1:] {
		if slices.Equal(n, notes) && (len(n) > 0) == (len(notes) > 0) {
			return uint32(i + 1)
		}
	}
	ps.notes = append(ps.notes, slices.Clone(notes))
	return uint32(len(ps.notes) - 1)
}

// cell unpacks the cell of col in drawable poll i.
func (ps *Polls) cell(col *cellCol, i int) rate.Cell {
	c := ps.metas.list[col.meta.at(i)]
	return rate.Cell{Value: rate.Num{V: math.Float64frombits(col.val.at(i)), Valid: c.valueValid},
		Window: rate.Num{V: math.Float64frombits(col.win.at(i)), Valid: c.windowValid},
		Source: ps.strs.list[c.source], Reason: ps.strs.list[c.reason], Severity: ps.strs.list[c.severity], Notes: ps.notes[c.note],
		Bucket: ps.buckets.list[c.bucket], Derived: c.derived}
}

// series is the points of cell name, and whether the engine publishes it
// at all (a series it does not publish is not drawn).
func (ps *Polls) series(tp *targetPolls, name string) (points []Point, any bool) {
	col := tp.cols[name]
	if col == nil {
		return nil, false
	}
	for i := range col.meta.len() {
		if !ps.metas.list[col.meta.at(i)].present {
			continue
		}
		cell := ps.cell(col, i)
		if cell.Value.Valid || (cell.Reason != rate.ReasonAbsent && cell.Reason != engine.ReasonNotExported) {
			any = true
		}
		points = ps.breakBefore(tp, points, i)
		points = append(points, Point{T: tp.t.at(i), Cell: cell})
	}
	return points, any
}

// breakBefore appends, when the analysis says a line breaks before
// drawable poll i (a hole in the polls, a restart), a null point halfway
// to it: no line is drawn across the hole, gauges included.
func (ps *Polls) breakBefore(tp *targetPolls, points []Point, i int) []Point {
	brk := ps.strs.list[tp.brk.at(i)]
	// Nothing drawn yet: nothing to break from.
	if brk == "" || len(points) == 0 {
		return points
	}
	prev := points[len(points)-1].T
	return append(points, Point{T: prev + (tp.t.at(i)-prev)/2, Cell: rate.Cell{Reason: brk}})
}

// waitingByReason splits requests_waiting by the reason the engine gives
// (vLLM's num_requests_waiting_by_reason): one series per reason.
func (ps *Polls) waitingByReason(tp *targetPolls) []Series {
	reasons := map[string]bool{}
	for i := range tp.waiting.len() {
		for k := range tp.waiting.at(i).by {
			reasons[k] = true
		}
	}
	var out []Series
	for _, reason := range slices.Sorted(maps.Keys(reasons)) {
		ser := Series{Name: "waiting: " + reason, Canon: engine.WaitingByReason + `{reason="` + reason + `"}`, Step: true}
		for i := range tp.waiting.len() {
			w := tp.waiting.at(i)
			if !w.present {
				continue
			}
			pc := rate.Cell{Source: ps.strs.list[w.source] + `{reason="` + reason + `"}`, Reason: ps.strs.list[w.reason]}
			if v, ok := w.by[reason]; ok {
				pc.Value, pc.Reason = rate.Some(v), ""
			} else if pc.Reason == "" {
				pc.Reason = rate.ReasonAbsent
			}
			ser.Points = ps.breakBefore(tp, ser.Points, i)
			ser.Points = append(ser.Points, Point{T: tp.t.at(i), Cell: pc})
		}
		out = append(out, ser)
	}
	return out
}
