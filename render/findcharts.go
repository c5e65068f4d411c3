package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
)

// The charts of the findings' sections: settle polls per span, and the
// fleet's decode sum with its coverage. Laid out from the analysis; nothing
// computed again.

// settleCharts are the median settle poll and the median |ln| error at
// poll 2, per span: two charts, since polls and an error have no unit in
// common.
func settleCharts(res *analyze.Result) ([]Chart, error) {
	if len(res.Settle) == 0 {
		return nil, nil
	}
	poll := Bars{ID: "settle-chart", Title: "Median settle poll, per span", XName: "span", Unit: "polls",
		Notes: []string{"Settle poll: the first poll after a load edge (the edge's next poll is 1) whose published decode tokens/s is within |ln(value / level)| ≤ 0.1 of the new level (exactly 0 after an end)."}}
	lnerr := Bars{ID: "settle-lnerr", Title: "Median |ln| error at poll 2, per span", XName: "span", Unit: "|ln(value / level)|",
		Notes: []string{"|ln| error: |ln(published value / new level)| of decode tokens/s at the second poll after a load start; 0.1 is about 10 % off, 0.69 a factor of 2."}}
	ps, ls := BarSeries{Name: "median settle poll"}, BarSeries{Name: "median |ln| error at poll 2"}
	for _, s := range res.Settle {
		name := spanName(s.Span)
		if s.Published {
			name += " (published)"
		}
		poll.Categories = append(poll.Categories, name)
		lnerr.Categories = append(lnerr.Categories, name)
		ps.Values = append(ps.Values, Value{V: s.MedianSettlePoll, Prov: fmt.Sprintf("over %d judged edges", s.Judged)})
		ls.Values = append(ls.Values, Value{V: s.MedianLnErrPoll2, Prov: fmt.Sprintf("over %d judged start edges", s.Starts)})
	}
	var out []Chart
	for _, b := range []struct {
		bars Bars
		ser  BarSeries
	}{{poll, ps}, {lnerr, ls}} {
		// A chart with no bar at all is no chart: the table says why.
		if !hasBar(b.ser) {
			continue
		}
		b.bars.Series = []BarSeries{b.ser}
		ch, err := b.bars.Chart()
		if err != nil {
			return nil, fmt.Errorf("settle chart: %w", err)
		}
		out = append(out, ch)
	}
	return out, nil
}

func hasBar(s BarSeries) bool {
	for _, v := range s.Values {
		if v.V.Valid {
			return true
		}
	}
	return false
}

// fleetCharts is the fleet's decode sum over time. The sum is drawn as a
// line only at polls where every engine had a value; where fewer had one
// (a scrape failed, a window was refused) the sum of those that had is
// partial, a lower bound: drawn as a point, not on the line, and the span
// shaded with the count on hover. A poll where no engine had a value is
// null. Absent is never 0.
func fleetCharts(fl findings.Fleet) ([]Chart, error) {
	if len(fl.Polls) == 0 {
		return nil, nil
	}
	ts := TimeSeries{ID: "fleet-decode", Title: "Fleet decode tokens per second", Unit: UnitTokensPS,
		Notes: []string{"The line is the sum over every engine. Where fewer engines had a value (shaded blue, the count on hover), " +
			"the sum of those that had is partial, a lower bound: drawn as a point below the line, never joined to it."}}
	full := Series{Name: "fleet decode (every engine)", Canon: "Σ decode_tokens_per_second"}
	part := Series{Name: "partial sum (fewer engines)", Canon: "Σ decode_tokens_per_second, partial", Markers: true}
	partial := 0
	for i, p := range fl.Polls {
		src := fmt.Sprintf("Σ decode_tokens_per_second over %d of %d engines", p.DecodeOf, p.Total)
		if len(p.Absent) > 0 {
			src += " (" + absentText(p.Absent) + " from the target set)"
		}
		c := rate.Cell{Value: p.Decode, Source: src, Derived: true}
		f, q := Point{T: p.T, Cell: c}, Point{T: p.T, Cell: c}
		switch {
		case !p.Decode.Valid:
			f.Cell.Reason = "no engine had a value"
			q.Cell = rate.Cell{Reason: ReasonPartial}
			q.Prov = "no engine had a value"
		case p.DecodeOf < p.Total:
			f.Cell = rate.Cell{Reason: ReasonPartial}
			f.Prov = fmt.Sprintf("partial: %s; their sum is drawn as a point", coverage(p))
			q.Prov = Prov(c) + "; " + coverage(p)
			partial++
		default:
			q.Cell = rate.Cell{Reason: ReasonPartial}
			q.Prov = "every engine had a value: see the line"
		}
		// The engines summed changed (discovery added or removed one): the
		// line breaks, so a sum over fewer engines is not read as a fall.
		if i > 0 && !slices.Equal(p.Absent, fl.Polls[i-1].Absent) {
			prev := fl.Polls[i-1].T
			full.Points = append(full.Points, Point{T: prev + (p.T-prev)/2, Cell: rate.Cell{Reason: analyze.BreakAway},
				Prov: "the target set changed: " + absentText(fl.Polls[i-1].Absent) + " → " + absentText(p.Absent)})
		}
		full.Points = append(full.Points, f)
		part.Points = append(part.Points, q)
		// A run of polls with fewer engines than the fleet has: one span.
		if p.DecodeOf >= p.Total {
			continue
		}
		from, to := p.T, p.T
		if i > 0 {
			from = fl.Polls[i-1].T
		}
		if i+1 < len(fl.Polls) {
			to = fl.Polls[i+1].T
		}
		label := coverage(p)
		if n := len(ts.Partial); n > 0 && ts.Partial[n-1].To >= from {
			ts.Partial[n-1].To = to
			if !strings.Contains(ts.Partial[n-1].Label, label) && len(ts.Partial[n-1].Label) < 200 {
				ts.Partial[n-1].Label += "; " + label
			}
			continue
		}
		ts.Partial = append(ts.Partial, Mark{From: from, To: to, Label: label})
	}
	ts.Series = []Series{full}
	if partial > 0 {
		ts.Series = append(ts.Series, part)
	}
	ch, err := ts.Chart()
	if err != nil {
		return nil, fmt.Errorf("fleet chart: %w", err)
	}
	return []Chart{ch}, nil
}

// coverage says how many engines a fleet poll's sum covers, and why not
// the others: "3 of 4 engines had a value; vllm-1 (jump); 0 did not answer".
func coverage(p findings.FleetPoint) string {
	s := fmt.Sprintf("%d of %d engines had a value", p.DecodeOf, p.Total)
	if len(p.Missing) > 0 {
		s += "; null: " + strings.Join(p.Missing, ", ")
	}
	if down := p.Total - p.Live; down > 0 {
		s += fmt.Sprintf("; %d did not answer", down)
	}
	if len(p.Absent) > 0 {
		s += "; not in the target set (counted nowhere): " + strings.Join(p.Absent, ", ")
	}
	return s
}

// absentText names the engines absent from the target set.
func absentText(absent []string) string {
	if len(absent) == 0 {
		return "every engine present"
	}
	return strings.Join(absent, ", ") + " absent"
}
