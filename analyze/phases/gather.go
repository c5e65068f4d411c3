package phases

import (
	"math"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
)

// pass is what one pass over a stretch's polls gathers for its figures:
// the gauges' statistics, and the published values of the findings' rate
// cells with their nulls (the gauges and the rate cells were a pass each).
// The log's PubCells are read one at a time from its own array (published):
// a buffer for each would double the scratch of a day's target.
type pass struct {
	gs    gaugeStats
	rxs   [findings.NRates][]float64
	rnull [findings.NRates]map[string]int // by reason
	xs    []float64                       // one PubCell's at a time (published)
	nulls [256]int                        // its nulls by reason code (published)
	// keep, while on, is given a copy of what gather reads: the steady
	// phases' polls, which the busy headline is made of.
	keep kept
}

// kept is what the passes over a target's steady phases gathered, as one
// pass over their polls one phase after the other (the busy headline's)
// gathers it: the gauges' statistics added poll after poll, the rate
// cells' values appended, their nulls counted by reason.
type kept struct {
	on    bool
	gs    gaugeStats
	rxs   [findings.NRates][]float64
	rnull [findings.NRates]map[string]int
}

// start empties k for a target of n polls, keeping its buffers, and turns
// it on.
func (k *kept) start(n int) {
	k.on, k.gs = true, newGaugeStats()
	for c := range k.rxs {
		if cap(k.rxs[c]) < n {
			k.rxs[c] = make([]float64, 0, n)
		}
		k.rxs[c], k.rnull[c] = k.rxs[c][:0], map[string]int{}
	}
}

// use makes p what gather over the kept polls would make it, without
// reading them again, and turns keeping off. The kept and the pass's
// buffers are swapped (the pass's are the smaller): done swaps them back.
func (p *pass) use() {
	k := &p.keep
	k.on = false
	p.gs = k.gs
	for c := range p.rxs {
		p.rxs[c], k.rxs[c] = k.rxs[c], p.rxs[c]
		p.rnull[c] = k.rnull[c]
	}
}

// done gives the kept buffers back after use.
func (p *pass) done() {
	for c := range p.rxs {
		p.rxs[c], p.keep.rxs[c] = p.keep.rxs[c], p.rxs[c]
	}
}

// reset empties p for a new stretch, keeping its buffers; the null maps
// are new (each Published keeps its own).
func (p *pass) reset() {
	p.gs = newGaugeStats()
	for k := range p.rxs {
		p.rxs[k] = p.rxs[k][:0]
		p.rnull[k] = map[string]int{}
	}
}

// reserve makes room for n values of a PubCell, kept when there is (the
// rate cells' room is made by gather for its stretch: the busy headline's,
// the longest, are kept).
func (p *pass) reserve(n int) {
	if cap(p.xs) < n {
		p.xs = make([]float64, 0, n)
	}
}

// pollFields are the fields a pass reads of each poll: the gauges', then
// the rate cells'.
var pollFields = func() (fs [len(gauges) + findings.NRates]findings.Field) {
	copy(fs[:], gaugeFields[:])
	copy(fs[len(gauges):], rateFields[:])
	return fs
}()

// gather reads the polls idx once into p (reset first).
func (in *Input) gather(p *pass, idx runs) {
	p.reset()
	if n := idx.len(); cap(p.rxs[0]) < n {
		for k := range p.rxs {
			p.rxs[k] = make([]float64, 0, n)
		}
	}
	ps := &in.Target.Polls
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
		if p.keep.on {
			// Added poll after poll, as over the kept polls in one pass.
			p.keep.gs.add(gv)
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
	}
	for k := range run {
		if run[k].n > 0 {
			p.rnull[k][run[k].reason] += run[k].n
		}
	}
	// The counts by reason add up to what one pass over the kept polls
	// counts: its runs only group the same polls' nulls otherwise.
	if p.keep.on {
		for k := range p.rxs {
			p.keep.rxs[k] = append(p.keep.rxs[k], p.rxs[k]...)
			for r, n := range p.rnull[k] {
				p.keep.rnull[k][r] += n
			}
		}
	}
}

// publishedRates are the distributions of the findings' rate cells the
// pass gathered (their values reordered), in dst (findings.NRates of them:
// one allocation for every distribution of a stretch).
func (p *pass) publishedRates(dst []Published) [findings.NRates]*Published {
	var out [findings.NRates]*Published
	for k := range out {
		dst[k] = Published{Cell: findings.RateCells[k], Nulls: p.rnull[k]}
		out[k] = &dst[k]
		out[k].finish(p.rxs[k])
	}
	return out
}

// published is the distribution of PubCells[k] over idx, in out.
func (p *pass) published(l *Log, name string, k int, idx runs, out *Published) *Published {
	*out = Published{Cell: name, Nulls: map[string]int{}}
	xs := p.xs[:0]
	// A count for each of the log's reasons' codes (a handful), not for
	// every code a byte holds: 2 KiB cleared and walked a cell and stretch.
	nulls := p.nulls[:len(l.reasons)]
	clear(nulls)
	for i := range idx.all() {
		v, code := l.publishedCode(i, k)
		if code != 0 {
			nulls[code]++
			continue
		}
		xs = append(xs, v)
	}
	for c, n := range nulls {
		if n > 0 {
			out.Nulls[l.Reason(uint8(c))] += n
		}
	}
	out.finish(xs)
	p.xs = xs[:0]
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
