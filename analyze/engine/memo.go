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
}

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
func NewMemo() *Memo { return &Memo{m: make(map[Series]*seriesFacts)} }

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
	f := &seriesFacts{rkey: rate.Key{Series: s.Name, Labels: canonicalLabels(s.Labels)}}
	f.counter = rateable(s, f.rkey.Labels)
	if f.counter {
		f.createdKey = createdOf(s, f.rkey.Labels)
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
