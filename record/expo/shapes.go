package expo

import "sync/atomic"

// Many targets serve pages of one shape: the replicas of one engine version
// with one model differ in their values alone. A target's first page is
// otherwise parsed in full (expfmt and the flattening, a few milliseconds
// for a vLLM page, where a page read by its values takes a few tens of
// microseconds), and a recorder starting with a thousand targets spent
// seconds of one core on their first pages.
//
// Shapes keeps the maps of a few pages the full parse made (the page, where
// each value is and the samples it made), shared by the Interners of a
// recording. An Interner with no map of its own, or whose own map does not
// fit its page, tries them before the full parse: a page whose bytes outside
// the values are a kept page's is read by its values against that page,
// exactly as a target's next page is read against its last (see reuse.go),
// and its samples are the kept page's with its own values. The bytes outside
// the values being equal, the samples are what the full parse gives
// whichever target's page the map came from: names, labels, help texts and
// types are those bytes.

// maxShapes is how many page shapes a Shapes keeps: a fleet runs a few
// engine versions and models. A new shape replaces the oldest.
const maxShapes = 8

// maxShapeBytes is the largest page kept as a shape (an engine's page is
// about 47 KB); a larger page is parsed in full as its target's first.
const maxShapeBytes = 1 << 20

// Shapes is the shared memory of page shapes (see above). It is safe for
// concurrent use; the zero value is ready.
type Shapes struct {
	list atomic.Pointer[[]*shape] // published whole, never written after
	next atomic.Int64             // the slot the next new shape takes
}

// shape is one kept page and its map; never written after it is kept.
type shape struct {
	page []byte
	at   []valueAt
	last []Sample
}

// load is the shapes kept now.
func (sh *Shapes) load() []*shape {
	if sh == nil {
		return nil
	}
	if p := sh.list.Load(); p != nil {
		return *p
	}
	return nil
}

// keep adds page, its map at and its samples last (copied: the Interner
// goes on using its own) as a shape.
func (sh *Shapes) keep(page []byte, at []valueAt, last []Sample) {
	if sh == nil || len(at) == 0 || len(page) > maxShapeBytes {
		return
	}
	s := &shape{page: append([]byte(nil), page...), at: append([]valueAt(nil), at...),
		last: append([]Sample(nil), last...)}
	for {
		old := sh.list.Load()
		var list []*shape
		if old != nil {
			list = *old
		}
		next := make([]*shape, len(list), maxShapes)
		copy(next, list)
		if len(next) < maxShapes {
			next = append(next, s)
		} else {
			next[int(sh.next.Add(1)-1)%maxShapes] = s
		}
		if sh.list.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Len is how many shapes are kept (for the tests and the recorder's
// figures).
func (sh *Shapes) Len() int { return len(sh.load()) }
