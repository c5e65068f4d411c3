package sweep

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Attain is the share of a histogram's observations at or under the
// SLO's threshold: les are the bucket bounds (rising, the last +Inf),
// counts the cumulative counts at each.
func Attain(slo SLO, les, counts []float64) (lo, hi rate.Num, exact bool) {
	// No observation: no share.
	if len(les) == 0 || len(les) != len(counts) || counts[len(counts)-1] <= 0 {
		return rate.Num{}, rate.Num{}, false
	}
	n := counts[len(counts)-1]
	k, found := slices.BinarySearch(les, slo.Threshold)
	if found {
		return rate.Some(counts[k] / n), rate.Some(counts[k] / n), true
	}
	below := 0.0
	if k > 0 {
		below = counts[k-1]
	}
	return rate.Some(below / n), rate.Some(counts[k] / n), false
}

// Verdict is pass, fail or unresolved from a share's bracket.
func Verdict(slo SLO, lo, hi rate.Num) string {
	switch {
	case !lo.Valid || !hi.Valid:
		return Unknown
	case lo.V >= slo.Quantile:
		return Pass
	case hi.V < slo.Quantile:
		return Fail
	}
	return Unresolved
}

// Finish sorts the curve's points by offered load and judges them: the
// saturation evidence of each against the level below, the knee, the
// Pareto front and the SLO boundaries.
func (c *Curve) Finish(slos []SLO) {
	slices.SortStableFunc(c.Points, func(a, b Point) int {
		return cmp.Compare(orInf(a.Offered.Value), orInf(b.Offered.Value))
	})
	for i := range c.Points {
		var below *Point
		if i > 0 {
			below = &c.Points[i-1]
		}
		p := &c.Points[i]
		p.Saturation = evidence(p, below)
		p.Saturated = saturated(p.Saturation)
	}
	c.Knee = knee(c.Points, c.Slots, c.SlotsSource)
	pareto(c.Points)
	c.Boundaries = []Boundary{}
	for k, s := range slos {
		c.Boundaries = append(c.Boundaries, boundary(c.Points, s.Name, func(p *Point) (string, rate.Num) {
			return p.SLOs[k].Verdict, p.SLOs[k].Margin
		}))
	}
	if len(slos) > 1 {
		c.Boundaries = append(c.Boundaries, boundary(c.Points, "all", func(p *Point) (string, rate.Num) {
			return allOf(p)
		}))
	}
}

// orInf sorts an unknown load last.
func orInf(n rate.Num) float64 {
	if !n.Valid {
		return math.Inf(1)
	}
	return n.V
}

// evidence is the saturation evidence of p against the level below it
// (nil for the lowest).
func evidence(p, below *Point) []Evidence {
	out := []Evidence{}
	if s := p.WaitingSlope; s != nil && s.T >= SlopeT && s.Rise >= 1 {
		out = append(out, Evidence{Kind: EvWaitingRising, Text: fmt.Sprintf("waiting rose %s requests across the level (%s/s, t = %s over %d polls)",
			g3(s.Rise), g3(s.PerSecond), g3(s.T), s.N)})
	}
	if w := p.Waiting.Value; w.Valid && w.V >= QueuedFloor && (below == nil || !below.Waiting.Value.Valid || w.V > below.Waiting.Value.V) {
		text := fmt.Sprintf("%s requests waited on average", g3(w.V))
		if r := p.Running.Value; r.Valid {
			text += fmt.Sprintf(" beside %s running", g3(r.V))
		}
		out = append(out, Evidence{Kind: EvQueued, Text: text})
	}
	if kv := p.KV.Value; kv.Valid && kv.V >= KVFull {
		out = append(out, Evidence{Kind: EvKVFull, Text: fmt.Sprintf("KV cache %.0f %% used at most", 100*kv.V)})
	}
	if pr := p.Preemptions.Value; pr.Valid && pr.V > 0 && (below == nil || !below.Preemptions.Value.Valid || pr.V > below.Preemptions.Value.V) {
		out = append(out, Evidence{Kind: EvPreemptions, Text: fmt.Sprintf("%s preemptions/s", g3(pr.V))})
	}
	if c := p.CapacityWaiting.Value; c.Valid && c.V > 0 {
		out = append(out, Evidence{Kind: EvCapacity, Text: fmt.Sprintf("the engine says %s requests waited on capacity on average", g3(c.V))})
	}
	if o, e := p.Offered.Value, p.Engine.Value; o.Valid && e.Valid && o.V > 0 && e.V < HiddenShare*o.V && p.Offered.Source != p.Engine.Source {
		out = append(out, Evidence{Kind: EvHiddenQueue, Text: fmt.Sprintf("the client had %s requests in flight, the engine %s running + waiting: the rest waited before it, unseen by its gauges",
			g3(o.V), g3(e.V))})
	}
	if below == nil {
		return out
	}
	x0, x1, y0, y1 := below.Offered.Value, p.Offered.Value, below.Decode.Value, p.Decode.Value
	// The load must have risen for the throughput's rise to be weighed.
	if x0.Valid && x1.Valid && y0.Valid && y1.Valid && x0.V > 0 && y0.V > 0 && x1.V > 1.1*x0.V {
		load, got := x1.V/x0.V-1, y1.V/y0.V-1
		if got < ScaleShare*load {
			e := Evidence{Kind: EvBelowOffered, Text: fmt.Sprintf("offered load rose %.0f %% from %s, decode tokens/s %+.0f %%",
				100*load, below.Phase, 100*got)}
			e.Flat = got < FlatShare*load
			out = append(out, e)
		}
	}
	return out
}

// saturated reports whether the evidence shows saturation: any sign of
// a queue, a full cache or preemptions; a decode rate that did not follow
// the load only when it stayed flat (a batch that merely slowed is not
// yet saturated: it still gains).
func saturated(ev []Evidence) bool {
	for _, e := range ev {
		if e.Kind != EvBelowOffered || e.Flat {
			return true
		}
	}
	return false
}

// knee names the first saturated level and the one below it.
func knee(ps []Point, slots rate.Num, from string) Knee {
	k := Knee{Evidence: []Evidence{}}
	queued := false
	for i := range ps {
		if r := ps[i].Running.Value; slots.Valid && slots.V > 0 && r.Valid && r.V >= SlotsFull*slots.V {
			k.AtSlots = append(k.AtSlots, ps[i].Phase)
			if w := ps[i].Waiting.Value; w.Valid && w.V >= QueuedFloor {
				queued = true
			}
		}
	}
	best := -1
	for i := range ps {
		if d := ps[i].Decode.Value; d.Valid && (best < 0 || d.V > ps[best].Decode.Value.V) {
			best = i
		}
	}
	if best >= 0 {
		k.Capacity, k.CapacityAt = ps[best].Decode.Value, ps[best].Phase
	}
	first := slices.IndexFunc(ps, func(p Point) bool { return p.Saturated })
	switch {
	case len(ps) == 0:
		k.Text = "no level measured"
		return k
	case first < 0 && len(k.AtSlots) > 0:
		// Running at the slot count is the engine's ceiling: no claim
		// that the capacity lies above it.
		k.Text = fmt.Sprintf("no level showed saturation by the engine's gauges, but the mean running held the engine's %s slots (%s) at %s: the capacity is reached there, not above the highest level",
			g3(slots.V), from, strings.Join(k.AtSlots, ", "))
		if !queued && !slices.ContainsFunc(ps, func(p Point) bool { return p.Offered.Source != p.Engine.Source }) {
			k.Text += "; the engine shows no queue (requests beyond its slots wait where no series counts them): without the client's record the offered load is unknown above the slots"
			if len(k.AtSlots) > 1 {
				k.Text += ", and those levels' order says nothing of it"
			}
		}
		return k
	case first < 0:
		k.Text = fmt.Sprintf("no level showed saturation: the capacity is above the highest level (%s)", ps[len(ps)-1].Phase)
		return k
	}
	f := &ps[first]
	k.First, k.FirstOffered, k.Evidence = f.Phase, f.Offered.Value, f.Saturation
	var why []string
	for _, e := range f.Saturation {
		why = append(why, e.Text)
	}
	if first == 0 {
		k.Text = fmt.Sprintf("saturated from the lowest level (%s): %s", f.Phase, strings.Join(why, "; "))
		return k
	}
	l := &ps[first-1]
	k.Last, k.LastOffered = l.Phase, l.Offered.Value
	k.Text = fmt.Sprintf("knee between %s (offered %s, %s decode tokens/s) and %s (offered %s): %s",
		l.Phase, g3n(l.Offered.Value), g3n(l.Decode.Value), f.Phase, g3n(f.Offered.Value), strings.Join(why, "; "))
	return k
}

// pareto marks the levels no other level beats on decode tokens/s (per
// GPU: the same order for every GPU count) and per user at once.
func pareto(ps []Point) {
	for i := range ps {
		a, au := ps[i].Decode.Value, ps[i].PerUser.Value
		if !a.Valid || !au.Valid {
			continue
		}
		ps[i].Pareto = !slices.ContainsFunc(ps, func(q Point) bool {
			b, bu := q.Decode.Value, q.PerUser.Value
			return b.Valid && bu.Valid && b.V >= a.V && bu.V >= au.V && (b.V > a.V || bu.V > au.V)
		})
	}
}

// allOf is every SLO at once at p: fail if any fails, pass if all pass,
// else unresolved or unknown; the margin is the smallest.
func allOf(p *Point) (string, rate.Num) {
	v, m := Pass, rate.Num{}
	for _, a := range p.SLOs {
		switch {
		case a.Verdict == Fail:
			v = Fail
		case a.Verdict == Unknown && v != Fail:
			v = Unknown
		case a.Verdict == Unresolved && v == Pass:
			v = Unresolved
		}
		if a.Margin.Valid && (!m.Valid || a.Margin.V < m.V) {
			m = a.Margin
		}
	}
	return v, m
}

// boundary is where one SLO stops being met: the first failing level,
// the highest passing one below it, and the fitted crossing.
func boundary(ps []Point, name string, of func(*Point) (string, rate.Num)) Boundary {
	b := Boundary{SLO: name}
	fail := slices.IndexFunc(ps, func(p Point) bool { v, _ := of(&p); return v == Fail })
	pass := -1
	for i := range ps {
		if v, _ := of(&ps[i]); v == Pass && (fail < 0 || i < fail) {
			pass = i
		}
	}
	if pass >= 0 {
		b.Pass, b.PassOffered = ps[pass].Phase, ps[pass].Offered.Value
	}
	if fail >= 0 {
		b.Fail, b.FailOffered = ps[fail].Phase, ps[fail].Offered.Value
	}
	switch {
	case fail < 0 && pass < 0:
		b.Text = "no level could be judged"
		return b
	case fail < 0:
		b.Text = fmt.Sprintf("every judged level passes, up to %s (offered %s): the boundary is above", b.Pass, g3n(b.PassOffered))
		return b
	case pass < 0:
		b.Text = fmt.Sprintf("fails from the lowest level judged (%s, offered %s)", b.Fail, g3n(b.FailOffered))
		return b
	}
	b.Text = fmt.Sprintf("passes up to %s (offered %s), fails from %s (offered %s)", b.Pass, g3n(b.PassOffered), b.Fail, g3n(b.FailOffered))
	if fail != pass+1 {
		b.Text += fmt.Sprintf("; %d level(s) between could not be judged", fail-pass-1)
	}
	fit(&b, ps, of)
	return b
}

// fit interpolates the boundary: the margins by offered load (levels at
// one load averaged), made non-increasing by isotonic regression, then a
// monotone PCHIP through them, solved for 0 between the passing and the
// failing level; the shape is a cliff when the fit falls across the
// boundary CliffFactor times faster (per unit of load) than anywhere
// below it.
func fit(b *Boundary, ps []Point, of func(*Point) (string, rate.Num)) {
	var xs, ys []float64
	var ns []int
	for i := range ps {
		_, m := of(&ps[i])
		x := ps[i].Offered.Value
		if !m.Valid || !x.Valid {
			continue
		}
		if n := len(xs); n > 0 && xs[n-1] == x.V {
			ys[n-1] += m.V
			ns[n-1]++
			continue
		}
		xs, ys, ns = append(xs, x.V), append(ys, m.V), append(ns, 1)
	}
	for i := range ys {
		ys[i] /= float64(ns[i])
	}
	// Two loads at least, and the load must be known at both sides.
	if len(xs) < 2 || !b.PassOffered.Valid || !b.FailOffered.Valid {
		b.How = "no interpolation: fewer than two levels with a margin and a load"
		return
	}
	iso := Isotonic(ys)
	p := NewPCHIP(xs, iso)
	a, z := b.PassOffered.V, b.FailOffered.V
	b.How = "margins (threshold − estimate) ÷ threshold by offered load, isotonic (non-increasing) regression, monotone PCHIP (Fritsch–Carlson) solved for 0"
	if p.At(a) >= 0 && p.At(z) < 0 {
		b.At = rate.Some(p.Root(a, z))
	} else {
		b.How += "; the fit does not cross 0 between the passing and failing level (a pooled margin): no crossing"
	}
	// The steepest fall per unit of load below the boundary.
	steep := 0.0
	for i := 1; i < len(xs) && xs[i] <= a; i++ {
		steep = max(steep, (iso[i-1]-iso[i])/(xs[i]-xs[i-1]))
	}
	across := (p.At(a) - p.At(z)) / (z - a)
	switch {
	case steep == 0 && len(xs) > 2 && xs[1] <= a:
		b.Shape = "cliff"
		b.How += "; cliff: the margin was flat below the boundary and falls across it"
	case steep > 0 && across >= CliffFactor*steep:
		b.Shape = "cliff"
		b.How += fmt.Sprintf("; cliff: the margin falls %s× faster across the boundary than anywhere below", g3(across/steep))
	case steep > 0:
		b.Shape = "smooth"
		b.How += fmt.Sprintf("; smooth: the margin falls %s× as fast across the boundary as at its steepest below", g3(across/steep))
	default:
		b.How += "; shape unknown: no level below the passing one to compare the fall with"
	}
}

// g3 formats a number to 3 significant digits, a large one whole.
func g3(x float64) string {
	if math.Abs(x) >= 1000 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// g3n formats a Num, "unknown" when null.
func g3n(n rate.Num) string {
	if !n.Valid {
		return "unknown"
	}
	return g3(n.V)
}
