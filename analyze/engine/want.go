package engine

import (
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// ReasonNotComputed: the caller told the tracker it reads no such cell
// (Tracker.Want), so the reader did not compute it. Such a cell is never
// published: a caller that prints it asked for it.
const ReasonNotComputed = "not_computed"

// notComputed is the cell of a canonical cell nobody wanted.
var notComputed = Cell{Cell: rate.Cell{Reason: ReasonNotComputed}}

// allCells wants every canonical cell (the default).
const allCells = ^uint64(0)

// Want makes End compute the canonical cells named and what they depend
// on, and the reader skip the others it can (null with reason
// [ReasonNotComputed]); a histogram's cell wants its histogram, and
// only the cells of it wanted are made. A cell not wanted may still be
// made, as a full tracker makes it (a histogram's mean that a wanted
// speed is made from). The counters that feed only cells not wanted are
// not fed to the estimator.
// Names that are not canonical are ignored; none wants every cell (the
// default). Call it before the first Key.
func (t *Tracker) Want(names ...string) {
	if len(names) == 0 {
		t.want = allCells
		return
	}
	t.want = wantBits(names...)
}

// wantBits are the bits of the canonical cells named (by their position
// in Canonical); a histogram base stands for its five cells.
func wantBits(names ...string) uint64 {
	var m uint64
	for _, n := range names {
		if i, ok := canonIndex[n]; ok {
			m |= 1 << i
		}
		if i, ok := histIndex[n]; ok {
			m |= 0x1f << i
		}
	}
	return m
}

// feedMask is the cells a catalog entry's feeds text names, by their
// bits; every cell when it names something else (a cell this package
// does not list is no reason to starve a counter). A parenthesised
// remark ends the list.
func feedMask(feeds string) uint64 {
	var m uint64
	for _, f := range strings.Fields(feeds) {
		// "(pre-0.9 name)", "(NIM)": a remark, not a cell.
		if strings.HasPrefix(f, "(") {
			break
		}
		b := wantBits(f)
		if b == 0 {
			return allCells
		}
		m |= b
	}
	return m
}

// feedsWanted reports whether the reader reads family's counters through
// the estimator for a cell in want (feeds, narrowed to the wanted cells).
func (r *reader) feedsWanted(family string, want uint64) bool {
	if !r.feeds(family) {
		return false
	}
	// A reader that makes every cell whatever is wanted reads every
	// family it knows.
	if want == allCells || r.readsAll || !r.skips {
		return true
	}
	return r.masks[family]&want != 0
}

// histOthers are the bits of every histogram's cells but its mean: what
// a histogram's _sum does not feed.
var histOthers = func() uint64 {
	var m uint64
	for _, h := range Histograms {
		m |= 0x1d << histIndex[h]
	}
	return m
}()

// feedsSeries is feedsWanted for one series of family: a histogram's
// _sum feeds its mean alone (and what is made from the mean, which the
// catalog names), so it is starved when no such cell is wanted.
func (r *reader) feedsSeries(s *Series, want uint64) bool {
	if !r.feedsWanted(s.Family, want) {
		return false
	}
	// A reader that makes every cell whatever is wanted reads every
	// series of a family it reads.
	if want == allCells || r.readsAll || !r.skips || s.Type != "histogram" || s.Name != s.Family+"_sum" {
		return true
	}
	return r.masks[s.Family]&^histOthers&want != 0
}

// feedMasks fills r.masks from r.families.
func (r *reader) feedMasks() {
	r.masks = make(map[string]uint64, len(r.families))
	for f, feeds := range r.families {
		r.masks[f] = feedMask(feeds)
	}
}

// wants reports whether a cell of bits (wantBits) is wanted this poll.
func (q *query) wants(bits uint64) bool { return q.want&bits != 0 }
