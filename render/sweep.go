package render

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/analyze/sweep"
)

// sweepSection is the sweep: per curve its levels as a table, the knee and
// the SLO boundaries in words, and three charts (throughput against
// offered load, latency against throughput, the Pareto front of tokens/s
// per GPU against per user). Every number is the analysis'; none is made
// here. No section when no curve has two levels.
func sweepSection(res *analyze.Result) (Section, bool, error) {
	s := &res.Sweep
	sec := Section{ID: "sweep", Title: "Sweep: throughput and latency by load level"}
	for _, c := range s.Curves {
		if len(c.Points) < 2 {
			continue
		}
		name := c.Target
		if name == "" {
			name = "fleet"
		}
		sub := Section{ID: ID("sweep", name), Title: name, Notes: curveNotes(s, &c)}
		sub.Tables = append(sub.Tables, sweepTable(s, &c))
		charts, err := sweepCharts(s, &c, name)
		if err != nil {
			return Section{}, false, err
		}
		sub.Charts = charts
		sec.Sections = append(sec.Sections, sub)
	}
	if len(sec.Sections) == 0 {
		return Section{}, false, nil
	}
	basis := "the named phases (a warmup left out)"
	if s.Basis == "found" {
		basis = "each target's steady phases, found at its load edges"
	}
	sec.Notes = []string{"Each level is " + basis + ", in order of offered load (the client's requests in flight, else the engine's mean running + waiting); every figure is the engine's own counters across the level."}
	return sec, true, nil
}

// curveNotes are the knee and the boundaries in words.
func curveNotes(s *sweep.Sweep, c *sweep.Curve) []string {
	out := []string{"Knee: " + c.Knee.Text + "."}
	if c.Knee.Fact != "" {
		out = append(out, "The engine's own word: "+c.Knee.Fact+".")
	}
	for _, b := range c.Boundaries {
		line := "SLO " + b.SLO + ": " + b.Text
		if b.At.Valid {
			line += "; the fitted margin crosses 0 at offered " + format(b.At.V)
		}
		if b.Shape != "" {
			line += " (" + b.Shape + ")"
		}
		out = append(out, line+".")
	}
	return out
}

// sweepTable is a row per level.
func sweepTable(s *sweep.Sweep, c *sweep.Curve) Table {
	t := Table{Title: "Levels", Summary: true, Columns: []Column{{Title: "level"}, {Title: "status"},
		{Title: "offered", Num: true, Prov: "the client's mean requests in flight, else the engine's mean running + waiting"},
		{Title: "running", Num: true, Prov: "the engine's mean requests_running"},
		{Title: "decode tok/s", Num: true}, {Title: "prompt tok/s", Num: true},
		{Title: "TTFT p50 ms", Num: true}, {Title: "TTFT p99 ms", Num: true}, {Title: "ITL p50 ms", Num: true},
		{Title: "ITL p99 ms", Num: true}, {Title: "e2e p99 ms", Num: true}, {Title: "waiting", Num: true},
		{Title: "max KV %", Num: true}, {Title: "preemptions/s", Num: true}}}
	if s.GPUs.Valid {
		t.Columns = append(t.Columns, Column{Title: "tok/s per GPU", Num: true})
	}
	t.Columns = append(t.Columns, Column{Title: "tok/s per user", Num: true})
	if s.GPUHourUSD.Valid {
		t.Columns = append(t.Columns, Column{Title: "USD per M tokens", Num: true})
	}
	for _, o := range s.SLOs {
		t.Columns = append(t.Columns, Column{Title: o.Name, Prov: "share of the level's observations at or under " +
			strconv.FormatFloat(1000*o.Threshold, 'g', 4, 64) + " ms; pass when it reaches " + strconv.FormatFloat(100*o.Quantile, 'g', 4, 64) + " %"})
	}
	t.Columns = append(t.Columns, Column{Title: "saturation"})
	for i := range c.Points {
		p := &c.Points[i]
		row := []Cell{text(p.Phase), statusCell(p.Status), valCell(p.Offered, 1), valCell(p.Running, 1), valCell(p.Decode, 1),
			valCell(p.Prompt, 1), msCell(p.TTFTp50), msCell(p.TTFTp99), msCell(p.ITLp50), msCell(p.ITLp99), msCell(p.E2Ep99),
			valCell(p.Waiting, 1), valCell(p.KV, 100), valCell(p.Preemptions, 1)}
		if s.GPUs.Valid {
			row = append(row, valCell(p.PerGPU, 1))
		}
		row = append(row, valCell(p.PerUser, 1))
		if s.GPUHourUSD.Valid {
			row = append(row, valCell(p.CostPerMTokens, 1))
		}
		for _, a := range p.SLOs {
			row = append(row, sloCell(&a))
		}
		row = append(row, saturationCell(p))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// statusCell is the answer's status as a badge.
func statusCell(st string) Cell {
	cl := ClassOK
	switch st {
	case analyze.StatusOK:
	case analyze.StatusDegraded:
		cl = ClassWarn
	default:
		cl = ClassUnknown
	}
	return Cell{Text: strings.ReplaceAll(st, "_", " "), Class: cl, Badge: true}
}

// valCell is a value scaled by factor (100: a ratio in %), "unknown" with
// its reason when null.
func valCell(v sweep.Value, factor float64) Cell {
	if !v.Value.Valid {
		return Cell{Text: "unknown", Prov: nullProv(v), Class: ClassUnknown}
	}
	return Cell{Text: format(factor * v.Value.V), Prov: v.Source}
}

// msCell is a latency in ms as its bucket lets it; a mean in a
// quantile's place is marked "mean".
func msCell(v sweep.Value) Cell {
	if !v.Value.Valid {
		return Cell{Text: "unknown", Prov: nullProv(v), Class: ClassUnknown}
	}
	ms := func(x float64) string { return format(1000 * x) }
	c := Cell{Text: v.Bucket.Text(v.Value.V, ms), Prov: v.Source}
	if !v.Bucket.IsZero() {
		c.Prov += "; fell in bucket " + v.Bucket.Interval(ms) + " ms"
	}
	if v.Mean != "" {
		c.Text += " (mean)"
		c.Prov += "; " + v.Mean
	}
	return c
}

// nullProv says why a value is null.
func nullProv(v sweep.Value) string {
	why := strings.ReplaceAll(v.Reason, "_", " ")
	if v.Source == "" {
		return why
	}
	return v.Source + ": " + why
}

// sloCell is an SLO's verdict at a level, with its share.
func sloCell(a *sweep.Attainment) Cell {
	cl := map[string]string{sweep.Pass: ClassOK, sweep.Fail: ClassFail, sweep.Unresolved: ClassWarn}[a.Verdict]
	if cl == "" {
		cl = ClassUnknown
	}
	c := Cell{Text: a.Verdict, Class: cl, Badge: true, Prov: a.Source}
	switch {
	case !a.Lo.Valid:
		c.Prov += ": " + strings.ReplaceAll(a.Reason, "_", " ")
	case a.Exact:
		c.Text += " " + pctText(a.Lo)
	default:
		c.Text += " " + pctText(a.Lo) + "–" + pctText(a.Hi)
	}
	if a.Client.Valid {
		c.Prov += "; the client's requests: " + pctText(a.Client) + " under"
	}
	return c
}

// pctText is a share in %.
func pctText(n rate.Num) string { return strconv.FormatFloat(100*n.V, 'f', 1, 64) + " %" }

// saturationCell names the evidence at a level.
func saturationCell(p *sweep.Point) Cell {
	if len(p.Saturation) == 0 {
		return Cell{Text: "none", Class: ClassOK}
	}
	var kinds, texts []string
	for _, e := range p.Saturation {
		kinds = append(kinds, strings.ReplaceAll(e.Kind, "_", " "))
		texts = append(texts, e.Text)
	}
	// A batch that slowed but still gains is noted, not saturated.
	if !p.Saturated {
		return Cell{Text: "not saturated; " + strings.Join(kinds, ", "), Prov: strings.Join(texts, "; ")}
	}
	return Cell{Text: strings.Join(kinds, ", "), Prov: strings.Join(texts, "; "), Class: ClassWarn}
}

// sweepCharts are the curve's three charts.
func sweepCharts(s *sweep.Sweep, c *sweep.Curve, name string) ([]Chart, error) {
	pts := c.Points
	xy := func(x func(*sweep.Point) sweep.Value, y func(*sweep.Point) sweep.Value, scale float64) []XYPoint {
		var out []XYPoint
		for i := range pts {
			p := &pts[i]
			xv, yv := x(p), y(p)
			if yv.Value.Valid {
				yv.Value.V *= scale
			}
			out = append(out, XYPoint{X: xv.Value, Y: yv.Value, Prov: p.Phase + ": " + yv.Source})
		}
		return out
	}
	offered := func(p *sweep.Point) sweep.Value { return p.Offered }
	decode := func(p *sweep.Point) sweep.Value { return p.Decode }
	tput := XY{ID: ID("sweep", name, "throughput"), Title: "Throughput vs concurrency", XName: "offered load (requests)", Unit: "tokens/s",
		Series: []XYSeries{{Name: "decode", Points: xy(offered, decode, 1)},
			{Name: "prompt", Points: xy(offered, func(p *sweep.Point) sweep.Value { return p.Prompt }, 1)}}}
	if c.Knee.First != "" {
		tput.Notes = []string{"Knee: " + c.Knee.Text + "."}
	}
	lat := XY{ID: ID("sweep", name, "latency"), Title: "Latency vs throughput", XName: "decode tokens/s", Unit: "ms",
		Series: []XYSeries{{Name: "TTFT p99", Points: xy(decode, func(p *sweep.Point) sweep.Value { return p.TTFTp99 }, 1000)},
			{Name: "ITL p99", Points: xy(decode, func(p *sweep.Point) sweep.Value { return p.ITLp99 }, 1000)}}}
	perGPU := func(p *sweep.Point) sweep.Value { return p.PerGPU }
	unit := "tokens/s per GPU"
	if !s.GPUs.Valid {
		perGPU, unit = decode, "tokens/s per engine (no --gpus)"
	}
	perUser := func(p *sweep.Point) sweep.Value { return p.PerUser }
	var front []XYPoint
	for i, q := range xy(perUser, perGPU, 1) {
		if pts[i].Pareto {
			front = append(front, q)
		}
	}
	par := XY{ID: ID("sweep", name, "pareto"), Title: "Pareto front: tokens/s per GPU vs per user", XName: "tokens/s per user", Unit: unit,
		Series: []XYSeries{{Name: "levels", Points: xy(perUser, perGPU, 1)}, {Name: "Pareto front", Points: front, Markers: true}}}
	var out []Chart
	for _, x := range []XY{tput, lat, par} {
		ch, err := x.Chart()
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// kneeFinding is the sweep's knees as one line of the findings: where
// the engines' capacity ends, seen from the server. One curve says its
// knee and boundaries; several name the saturated ones and link the
// section. None without a curve of two levels.
func kneeFinding(cs []sweep.Curve) *Verdict {
	var drawn, saturated []string
	var one *sweep.Curve
	for i := range cs {
		c := &cs[i]
		if len(c.Points) < 2 {
			continue
		}
		name := cmp.Or(c.Target, "fleet")
		drawn = append(drawn, name)
		one = c
		if c.Knee.First != "" {
			saturated = append(saturated, name)
		}
	}
	if len(drawn) == 0 {
		return nil
	}
	v := &Verdict{Topic: "knee", Class: ClassOK, Href: "#sweep",
		Prov: "the sweep: each level's saturation evidence from the engine's own gauges and counters"}
	if len(saturated) > 0 {
		v.Class = ClassWarn
	}
	if len(drawn) > 1 {
		v.Text = fmt.Sprintf("%d of %d curves saturate at some level", len(saturated), len(drawn))
		if len(saturated) > 0 {
			v.Text += ": " + strings.Join(saturated, ", ")
		}
		v.Text += " (the sweep names each knee and its evidence)"
		return v
	}
	v.Text = cmp.Or(one.Target, "fleet") + ": " + one.Knee.Text
	v.Href = "#" + ID("sweep", cmp.Or(one.Target, "fleet"))
	for _, b := range one.Boundaries {
		v.Text += "; SLO " + b.SLO + ": " + b.Text
	}
	return v
}
