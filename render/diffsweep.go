package render

import (
	"github.com/llmrec/llmrec/analyze/diff"
	"github.com/llmrec/llmrec/analyze/sweep"
)

// diffSweepSection is the sweeps of a comparison: per target pair the
// change at each level, each SLO boundary's shift in words, and both
// sides' curves overlaid (throughput vs concurrency, latency vs
// throughput). Every number is the comparison's.
func diffSweepSection(rep *diff.Report) (Section, bool, error) {
	sec := Section{ID: "sweeps", Title: "Sweeps: both sides' curves"}
	for _, d := range rep.Sweeps {
		name := d.Target
		if name == "" {
			name = "fleet"
		}
		sub := Section{ID: ID("sweeps", name), Title: name,
			Notes: []string{"Knee, baseline: " + d.Baseline.Knee.Text + ".", "Knee, candidate: " + d.Candidate.Knee.Text + "."}}
		for _, b := range d.Boundaries {
			sub.Notes = append(sub.Notes, "SLO "+b.Text+".")
		}
		t := Table{Title: "Change at each level (candidate ÷ baseline − 1)", Summary: true, Columns: []Column{{Title: "baseline level"},
			{Title: "candidate level"}, {Title: "baseline offered", Num: true}, {Title: "candidate offered", Num: true},
			{Title: "decode tok/s", Num: true}, {Title: "TTFT p99", Num: true}, {Title: "ITL p99", Num: true}, {Title: "saturated"}}}
		for _, l := range d.Levels {
			t.Rows = append(t.Rows, []Cell{text(l.Baseline), text(l.Candidate), text(numOr(l.BaseOffered)), text(numOr(l.CandOffered)),
				text(relText(l.Decode)), text(relText(l.TTFTp99)), text(relText(l.ITLp99)),
				text(yesNo(l.BaseSaturated) + " → " + yesNo(l.CandSaturated))})
		}
		sub.Tables = []Table{t}
		sides := []struct {
			name string
			c    *sweep.Curve
		}{{"baseline", &d.Baseline}, {"candidate", &d.Candidate}}
		series := func(x func(*sweep.Point) sweep.Value, y func(*sweep.Point) sweep.Value, scale float64, label string) []XYSeries {
			var out []XYSeries
			for _, s := range sides {
				var pts []XYPoint
				for i := range s.c.Points {
					p := &s.c.Points[i]
					yv := y(p)
					if yv.Value.Valid {
						yv.Value.V *= scale
					}
					pts = append(pts, XYPoint{X: x(p).Value, Y: yv.Value, Prov: s.name + ", " + p.Phase + ": " + yv.Source})
				}
				out = append(out, XYSeries{Name: label + ", " + s.name, Points: pts})
			}
			return out
		}
		offered := func(p *sweep.Point) sweep.Value { return p.Offered }
		decode := func(p *sweep.Point) sweep.Value { return p.Decode }
		ttft := func(p *sweep.Point) sweep.Value { return p.TTFTp99 }
		itl := func(p *sweep.Point) sweep.Value { return p.ITLp99 }
		for _, x := range []XY{
			{ID: ID("sweeps", name, "throughput"), Title: "Throughput vs concurrency", XName: "offered load (requests)", Unit: "tokens/s",
				Series: series(offered, decode, 1, "decode")},
			{ID: ID("sweeps", name, "latency"), Title: "Latency vs throughput", XName: "decode tokens/s", Unit: "ms",
				Series: append(series(decode, ttft, 1000, "TTFT p99"), series(decode, itl, 1000, "ITL p99")...)},
		} {
			ch, err := x.Chart()
			if err != nil {
				return Section{}, false, err
			}
			sub.Charts = append(sub.Charts, ch)
		}
		sec.Sections = append(sec.Sections, sub)
	}
	return sec, len(sec.Sections) > 0, nil
}
