package phases

import (
	"math"
	"slices"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
)

// pass is what one pass over a stretch's polls gathers for its figures:
// the gauges' statistics, and the published values of the findings' rate
// cells and of the log's PubCells with their nulls. The gauges, the rate
// cells and each published cell were a pass over the polls each.
type pass struct {
	gs    gaugeStats
	rxs   [findings.NRates][]float64
	rnull [findings.NRates]map[string]int // by reason
	pxs   [][]float64                     // by PubCells index
	pnull [][256]int                      // by PubCells index, by reason code
}

// reset empties p for a new stretch, keeping its buffers; the null maps
// are new (each Published keeps its own).
func (p *pass) reset() {
	p.gs = newGaugeStats()
	for k := range p.rxs {
		p.rxs[k] = p.rxs[k][:0]
		p.rnull[k] = map[string]int{}
	}
	if p.pxs == nil {
		p.pxs = make([][]float64, len(PubCells))
		p.pnull = make([][256]int, len(PubCells))
	}
	for k := range p.pxs {
		p.pxs[k] = p.pxs[k][:0]
		clear(p.pnull[k][:])
	}
}

// reserve makes room for n values a cell.
func (p *pass) reserve(n int) {
	for k := range p.rxs {
		p.rxs[k] = slices.Grow(p.rxs[k], n)
	}
	for k := range p.pxs {
		p.pxs[k] = slices.Grow(p.pxs[k], n)
	}
}

// absorb appends o's published values and adds its nulls to p, as a pass
// over p's polls and then o's would have (the values in the same order,
// before o's percentiles reorder them); the gauges are not absorbed
// (their sums must run poll by poll: gather's busy).
func (p *pass) absorb(o *pass) {
	for k := range p.rxs {
		p.rxs[k] = append(p.rxs[k], o.rxs[k]...)
		for r, n := range o.rnull[k] {
			p.rnull[k][r] += n
		}
	}
	for k := range p.pxs {
		p.pxs[k] = append(p.pxs[k], o.pxs[k]...)
		for c, n := range o.pnull[k] {
			p.pnull[k][c] += n
		}
	}
}

// pollFields are the fields a pass reads of each poll: the gauges', then
// the rate cells'.
var pollFields = func() (fs [len(gauges) + findings.NRates]findings.Field) {
	copy(fs[:], gaugeFields[:])
	copy(fs[len(gauges):], rateFields[:])
	return fs
}()

// gather reads the polls idx once into p (reset first). With busy, each
// poll's gauges are added to it too, poll by poll, as a pass over every
// steady phase's polls in turn would add them.
func (in *Input) gather(p *pass, idx runs, busy *gaugeStats) {
	p.reset()
	ps, l := &in.Target.Polls, in.Log
	// Nulls are counted by reason as they come, in runs: a run of polls
	// refused for one reason costs one map update.
	var run [findings.NRates]struct {
		reason string
		n      int
	}
	var vs [len(pollFields)]rate.Num
	for i := range idx.all() {
		ps.Read(i, pollFields[:], vs[:])
		gv := (*[len(gauges)]rate.Num)(vs[:len(gauges)])
		p.gs.add(gv)
		if busy != nil {
			busy.add(gv)
		}
		rv := vs[len(gauges):]
		// The reasons are decoded only for a poll with a null cell.
		var reasons [findings.NRates]string
		for _, v := range rv {
			if !v.Valid {
				reasons = ps.Reasons(i)
				break
			}
		}
		for k, v := range rv {
			if !v.Valid {
				if run[k].n > 0 && run[k].reason != reasons[k] {
					p.rnull[k][run[k].reason] += run[k].n
					run[k].n = 0
				}
				run[k].reason = reasons[k]
				run[k].n++
				continue
			}
			p.rxs[k] = append(p.rxs[k], v.V)
		}
		for k := range p.pxs {
			v, code := l.publishedCode(i, k)
			if code != 0 {
				p.pnull[k][code]++
				continue
			}
			p.pxs[k] = append(p.pxs[k], v)
		}
	}
	for k := range run {
		if run[k].n > 0 {
			p.rnull[k][run[k].reason] += run[k].n
		}
	}
}

// publishedRates are the distributions of the findings' rate cells the
// pass gathered (their values reordered).
func (p *pass) publishedRates() [findings.NRates]*Published {
	var out [findings.NRates]*Published
	for k := range out {
		out[k] = &Published{Cell: findings.RateCells[k], Nulls: p.rnull[k]}
		out[k].finish(p.rxs[k])
	}
	return out
}

// published is the distribution of PubCells[k] the pass gathered (its
// values reordered).
func (p *pass) published(l *Log, name string, k int) *Published {
	out := &Published{Cell: name, Nulls: map[string]int{}}
	for c, n := range p.pnull[k] {
		if n > 0 {
			out.Nulls[l.Reason(uint8(c))] += n
		}
	}
	out.finish(p.pxs[k])
	return out
}

// gaugeStats are the gauges' sums, maxima and counts over some polls.
type gaugeStats struct {
	sum, hi [len(gauges)]float64
	n       [len(gauges)]int
}

// newGaugeStats are the statistics of no poll.
func newGaugeStats() gaugeStats {
	var g gaugeStats
	for k := range g.hi {
		g.hi[k] = math.Inf(-1)
	}
	return g
}

// add adds one poll's gauges.
func (g *gaugeStats) add(vs *[len(gauges)]rate.Num) {
	for k, v := range vs {
		if !v.Valid {
			continue
		}
		g.sum[k], g.hi[k], g.n[k] = g.sum[k]+v.V, max(g.hi[k], v.V), g.n[k]+1
	}
}
