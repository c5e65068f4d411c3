package engine

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/llmrec/llmrec/internal/engines"
)

// Engine ids (package engines names them).
const (
	VLLM     = engines.VLLM
	VLLMV0   = engines.VLLMV0
	NIM      = engines.NIM
	LlamaCpp = engines.LlamaCpp
	SGLang   = engines.SGLang
	TGI      = engines.TGI
	TRTLLM   = engines.TRTLLM
	Triton   = engines.Triton
	Generic  = engines.Generic
)

// Engines lists the engine ids, Generic last.
var Engines = engines.IDs

// reader is one engine: the series it knows and how its cells are made.
type reader struct {
	id       string
	families map[string]string // family → the cells it feeds ("" known, not used)
	readsAll bool              // it reads every counter, known or not (the generic reader)
	prefixes []string          // families with these prefixes are known (client libraries' own)
	notes    map[string]string // cell → what it means for this engine
	variant  func(t *Tracker) string
	fill     func(q *query)
	// decode makes the decode cell alone in *c, which is zero (nil: the
	// engine exports none), for a tracker that reads nothing else
	// (Tracker.DecodeOnly).
	decode func(q *query, c *Cell)
	// decodeReads is the counter decode reads: a decode-only tracker feeds
	// the estimator no other (a histogram's buckets, when it reads the sum).
	decodeReads string
	// everyStep are the counter families that move on every engine step
	// (vLLM's token counters), as opposed to those that move when a
	// request completes: they get the tracker's step span (SetStepSpan).
	// The families a cell divides or subtracts are in it together, so
	// that one cell never mixes two spans.
	everyStep map[string]bool
	// atCompletion are the counter families that move once per request,
	// when it completes (or, for a prompt counter, when its prompt is
	// done): they get the span chosen from the typical request duration
	// (Tracker.SetCompletionSpan), read from duration. The families a
	// cell divides or subtracts are in it together.
	atCompletion map[string]bool
	duration     durationSource
	// masks are the wanted-cell bits each family feeds (feedMask of
	// families), for Tracker.Want; skips says its fill skips the cells
	// not wanted that are read through the estimator (query.wants).
	masks map[string]uint64
	skips bool
}

// EveryStep reports whether engine's reader counts family on every engine
// step (and so windows it over the step span, Tracker.SetStepSpan).
func EveryStep(engine, family string) bool {
	r := readerFor(engine)
	return r != nil && r.everyStep[family]
}

// DecodeAtCompletion reports whether engine's reader reads its decode cell
// from a counter that moves once per request, when the request completes
// (llama.cpp's tokens_predicted_total), rather than on every step.
func DecodeAtCompletion(engine string) bool {
	r := readerFor(engine)
	if r == nil {
		return false
	}
	for family := range r.atCompletion {
		if slices.Contains(strings.Fields(r.families[family]), DecodeTokensPerSecond) {
			return true
		}
	}
	return false
}

// knows reports whether family is in the reader's catalog.
func (r *reader) knows(family string) bool {
	if _, ok := r.families[family]; ok {
		return true
	}
	for _, p := range r.prefixes {
		if strings.HasPrefix(family, p) {
			return true
		}
	}
	// prometheus_client prints a counter's or histogram's creation time as
	// a family of its own: known when its base is.
	if base, ok := strings.CutSuffix(family, "_created"); ok {
		_, k1 := r.families[base+"_total"]
		_, k2 := r.families[base]
		return k1 || k2
	}
	return false
}

// feeds reports whether the reader reads family's counters through the
// estimator: a family its catalog says feeds a cell. (Under strictFeeds a
// query of any other panics.)
func (r *reader) feeds(family string) bool {
	return r.readsAll || r.families[family] != ""
}

// cells fills a poll's cells: the canonical ones, then the reader's own;
// with only, the decode cell alone.
func (r *reader) cells(q *query, dst Cells, only bool) Cells {
	if only {
		// Written in place: a cell is as large as a cache line or three.
		dst = append(dst, Named{Name: DecodeTokensPerSecond})
		c := &dst[len(dst)-1].Cell
		if r.decode == nil {
			*c = notExported
			return dst
		}
		r.decode(q, c)
		return dst
	}
	// The canonical cells are written in place: the reader puts most of
	// them, and only those it did not put are made not exported after.
	n := len(dst) + len(Canonical)
	if cap(dst) < n {
		dst = slices.Grow(dst, n)
	}
	q.dst, q.put1 = dst[:n], 0
	r.fill(q)
	// The reader may have appended cells of its own (and moved the slice).
	canon := q.dst[n-len(Canonical) : n]
	for i := range canon {
		if q.put1&(1<<i) == 0 {
			// Not wanted (Tracker.Want): skipped, not asked of the engine.
			// Written once: a cell is as large as a cache line or three.
			if q.want&(1<<i) == 0 {
				canon[i].Cell = notComputed
			} else {
				canon[i].Cell = notExported
			}
		}
		canon[i].Name = Canonical[i]
	}
	return q.dst
}

var (
	readersOnce sync.Once
	readers     map[string]*reader
)

func readerFor(id string) *reader {
	readersOnce.Do(func() {
		readers = map[string]*reader{
			VLLM:     newVLLM(VLLM, "vllm:"),
			VLLMV0:   newVLLM(VLLMV0, "vllm:"),
			NIM:      newVLLM(NIM, ""),
			LlamaCpp: newLlamaCpp(),
			SGLang:   newSGLang(),
			TGI:      newTGI(),
			TRTLLM:   newTriton(TRTLLM),
			Triton:   newTriton(Triton),
			Generic:  newGeneric(),
		}
		for _, r := range readers {
			r.feedMasks()
		}
	})
	return readers[id]
}

// Known is one entry of a reader's catalog.
type Known struct {
	Family string `json:"family"`
	Feeds  string `json:"feeds"` // the cells it feeds, "" when known but not used
}

// Catalog returns the families engine's reader knows, sorted, and the
// prefixes under which every family is known; nil for an unknown engine.
func Catalog(engine string) (families []Known, prefixes []string) {
	r := readerFor(engine)
	if r == nil {
		return nil, nil
	}
	for f, feeds := range r.families {
		families = append(families, Known{f, feeds})
	}
	slices.SortFunc(families, func(a, b Known) int { return strings.Compare(a.Family, b.Family) })
	return families, slices.Clone(r.prefixes)
}

// catalog builds a family → cells map from pairs.
func catalog(pairs ...string) map[string]string {
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// SpecCounters returns the speculative-decoding counters engine's reader
// reads, each list current name first: the accepted draft tokens, the
// drafted tokens and the draft rounds. They are nil for an engine without
// such counters (SGLang publishes only a recent-batch gauge).
func SpecCounters(engine string) (accepted, drafted, drafts []string) {
	switch engine {
	case VLLM, VLLMV0:
		return []string{"vllm:spec_decode_num_accepted_tokens_total"}, []string{"vllm:spec_decode_num_draft_tokens_total"},
			[]string{"vllm:spec_decode_num_drafts_total"}
	case NIM:
		return []string{"spec_decode_num_accepted_tokens_total"}, []string{"spec_decode_num_draft_tokens_total"},
			[]string{"spec_decode_num_drafts_total"}
	case LlamaCpp:
		return slices.Clone(lcAccepted), slices.Clone(lcDrafted), nil
	}
	return nil, nil, nil
}
