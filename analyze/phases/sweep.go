package phases

import (
	"cmp"
	"math"
	"slices"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Histogram is a histogram's bucket Δs across one phase, summed over its
// label sets by le: the counts at or under each bound, rising, the last
// bound +Inf (what a share of observations under a threshold is read
// from). Reason says why there are none.
type Histogram struct {
	Series string    `json:"series"`
	Les    []float64 `json:"les"`
	Counts []float64 `json:"counts"`
	Reason string    `json:"reason,omitempty"`
}

// Total is the observations in the phase (the +Inf bucket).
func (h *Histogram) Total() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// Buckets returns the bucket Δs of histogram base (engine.TTFT, ...) on
// the input's target across phase p, differenced as p's figures are.
func (in *Input) Buckets(p Phase, base string) Histogram {
	s := in.sum([]Phase{p})
	// Too few polls: no Δ to read.
	if s.b.Intervals == 0 || s.dt <= 0 {
		return Histogram{Reason: ReasonFewPolls}
	}
	cells := in.evaluate(s.dt, s.acc)
	c, _ := cells.Get(engine.HistCells(base)[2])
	series, ok := histSeries(c.Source)
	// The reader makes no quantile of this histogram: its reason says why.
	if !ok {
		return Histogram{Reason: cmp.Or(c.Reason, rate.ReasonAbsent)}
	}
	bs := in.Log.buckets(series, s.acc)
	h := Histogram{Series: series}
	switch {
	case len(bs.les) < 2 || !math.IsInf(bs.les[len(bs.les)-1], 1):
		h.Reason = rate.ReasonBuckets
	case bs.mixed:
		h.Reason = rate.ReasonEdges
	case bs.n[len(bs.n)-1] == 0:
		h.Reason = rate.ReasonEmpty
	default:
		h.Les, h.Counts = slices.Clone(bs.les), slices.Clone(bs.n)
	}
	return h
}

// Waiting returns the waiting gauge's published values at the target's
// polls inside phase p, with their stamps: what a slope is fitted to.
func (in *Input) Waiting(p Phase) (ts, vs []float64) {
	ps := &in.Target.Polls
	end := searchT(ps, p.End)
	for i := searchT(ps, p.Start); i < ps.Len() && ps.T(i) < p.End; i++ {
		if w := ps.Waiting(i); w.Valid {
			// Sized once, at the first value, to the polls left in the phase.
			if ts == nil {
				ts, vs = make([]float64, 0, max(1, end-i)), make([]float64, 0, max(1, end-i))
			}
			ts, vs = append(ts, ps.T(i)), append(vs, w.V)
		}
	}
	return ts, vs
}
