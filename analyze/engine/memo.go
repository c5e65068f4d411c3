package engine

import (
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Memo keeps what Tracker.Key works out of a series alone, whatever its
// target: its canonical labels, whether it is a counter, its _created
// sibling's key, its bucket's group and le. A replay's targets of one
// engine kind publish the same series (six vLLM targets, the same 347):
// with one Memo shared by their trackers, the second target's series are
// a lookup. It is not safe for concurrent use: one per replaying
// goroutine.
type Memo struct {
	m map[Series]*seriesFacts
	// The facts are made in blocks (a replay's distinct series are some
	// 2,000 an hour of 8 engines: as many allocations, one a series).
	block []seriesFacts
	// created is the _created sibling's name of a series name: one name
	// serves every label set of a family (a histogram's buckets).
	created map[string]string
}

// factsBlock is how many facts a Memo makes at once.
const factsBlock = 128

// seriesFacts are one series' target-independent facts, never modified
// once made.
type seriesFacts struct {
	rkey       rate.Key
	counter    bool
	createdKey rate.Key
	bucket     bool // a histogram's _bucket, a counter
	bf         rate.BucketFacts
}

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	return &Memo{m: make(map[Series]*seriesFacts), created: make(map[string]string)}
}

// facts returns new zero facts, from m's block.
func (m *Memo) facts() *seriesFacts {
	// A full block stays where it is: its facts are pointed at.
	if len(m.block) == cap(m.block) {
		m.block = make([]seriesFacts, 0, factsBlock)
	}
	m.block = m.block[:len(m.block)+1]
	return &m.block[len(m.block)-1]
}

// createdName is createdOf's name of series name, from m.
func (m *Memo) createdName(name string) string {
	if c, ok := m.created[name]; ok {
		return c
	}
	c := createdName(name)
	m.created[name] = c
	return c
}

// UseMemo makes t take the facts of the series it keys from m, and keep
// there those it works out; nil works each out per tracker. Call it before
// the first Key.
func (t *Tracker) UseMemo(m *Memo) { t.memo = m }

// Memo returns the memo t uses (UseMemo), nil for none.
func (t *Tracker) Memo() *Memo { return t.memo }

// factsOf returns the facts of series s, from the memo when there is one.
func (t *Tracker) factsOf(s Series) *seriesFacts {
	if t.memo != nil {
		if f, ok := t.memo.m[s]; ok {
			return f
		}
	}
	var f *seriesFacts
	if t.memo != nil {
		f = t.memo.facts()
	} else {
		f = &seriesFacts{}
	}
	f.rkey = rate.Key{Series: s.Name, Labels: canonicalLabels(s.Labels)}
	f.counter = rateable(s, f.rkey.Labels)
	if f.counter {
		if t.memo != nil {
			f.createdKey = createdWith(t.memo.createdName(s.Name), s.Name, f.rkey.Labels)
		} else {
			f.createdKey = createdOf(s, f.rkey.Labels)
		}
		// A histogram's bucket is read by Histogram alone (no reader
		// rates a _bucket series): no jump gate to keep.
		if s.Type == "histogram" && strings.HasSuffix(s.Name, "_bucket") {
			f.bucket, f.bf = true, rate.BucketOf(f.rkey)
		}
	}
	if t.memo != nil {
		t.memo.m[s] = f
	}
	return f
}
