package engine

import (
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Generic cell name prefixes: an unknown engine's series, one cell each.
const (
	GenericRate  = "rate:"  // rate:<counter>, Δ/Δt summed over label sets
	GenericGauge = "gauge:" // gauge:<series>{labels}, as read
	GenericHist  = "hist:"  // hist:<family>__count … __p99, over the window
)

// newGeneric reads an engine nobody recognised: its canonical cells are not
// exported, and every counter gets a rate cell, every gauge (each label set)
// a value cell and every histogram its five window cells, named after the
// series.
func newGeneric() *reader {
	r := &reader{id: Generic, families: map[string]string{}, readsAll: true}
	r.fill = func(q *query) {
		t := q.t
		for i := range t.slots {
			ns := &t.slots[i]
			if ns.seq != t.seq {
				continue
			}
			first := &t.keys[ns.keys[0]]
			switch {
			case first.Type == "histogram":
				// One set of cells per family, from its _bucket series.
				if !strings.HasSuffix(ns.name, "_bucket") {
					continue
				}
				base := strings.TrimSuffix(ns.name, "_bucket")
				h := q.est.Histogram(base, nil)
				for k, c := range [5]rate.Cell{h.Count, h.Mean, h.P50, h.P95, h.P99} {
					q.dst = append(q.dst, Named{q.genericName(GenericHist, base, histSuffixes[k]), Cell{Cell: c}})
				}
			case first.counter:
				q.dst = append(q.dst, Named{q.genericName(GenericRate, ns.name, ""), Cell{Cell: q.est.Rate(ns.name, nil)}})
			default:
				for _, id := range ns.keys {
					ks := &t.keys[id]
					name := q.genericName(GenericGauge, ns.name, ks.rkey.Labels)
					q.dst = append(q.dst, Named{name, Cell{Cell: rate.Cell{Value: rate.Some(t.vals[id].v), Source: name[len(GenericGauge):]}}})
				}
			}
		}
	}
	return r
}

var histSuffixes = [5]string{SuffixCount, SuffixMean, SuffixP50, SuffixP95, SuffixP99}

// genericName builds a generic cell name once per tracker.
func (q *query) genericName(kind, a, b string) string {
	k := srcKey{kind[0], a, b}
	if s, ok := q.t.names2[k]; ok {
		return s
	}
	s := kind + a + b
	q.t.names2[k] = s
	return s
}
