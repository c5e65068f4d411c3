package client

import (
	"fmt"

	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
)

// RunBounds is the note every figure of a summary-only file carries.
const RunBounds = "aligned by run bounds only: no per-request times"

// SummaryPhases cuts a summary-only file (no per-request records, no
// stages) into phases placed by run bounds: a summary with both bounds of
// its own (llmperf's derived start and end) is its own phase; a file of
// one summary without them is placed over the recording's bounds given
// (the busy span, else the whole recording; why says which). Several
// summaries without bounds cannot be placed: none, and how says why. Each
// phase's Label names its summary.
func SummaryPhases(run *Run, start, end float64, why string) ([]Phase, string) {
	if len(run.Requests) > 0 || len(run.Stages) > 0 || len(run.Summaries) == 0 {
		return nil, ""
	}
	var out []Phase
	unplaced := 0
	for _, s := range run.Summaries {
		if s.Start.Valid && s.End.Valid && s.End.V > s.Start.V {
			out = append(out, Phase{Phase: phases.Phase{Name: s.Name, Kind: phases.KindNamed, Source: Source, Start: s.Start.V, End: s.End.V,
				Why: "the client's summary " + s.Name + " over its own bounds (" + s.Bounds + "): " + RunBounds}, Label: s.Name})
			continue
		}
		unplaced++
	}
	switch {
	case unplaced == 0:
		return out, "the summaries' own bounds: " + RunBounds
	case len(run.Summaries) == 1 && end > start:
		s := run.Summaries[0]
		return []Phase{{Phase: phases.Phase{Name: s.Name, Kind: phases.KindNamed, Source: Source, Start: start, End: end,
			Why: "the client's summary " + s.Name + " placed over " + why + ": " + RunBounds}, Label: s.Name}}, "run bounds (" + why + "): " + RunBounds
	case len(run.Summaries) == 1:
		return out, "no run bounds to place the summary over"
	}
	return out, fmt.Sprintf("%d of %d summaries have no bounds of their own: which part of the recording each covers is unknown, so they are not placed", unplaced, len(run.Summaries))
}

// SummaryFigures are the figures of a summary-only phase (SummaryPhases)
// from its summary's values, each naming the field it came from; a
// quantity the file does not give is absent with the reason.
func SummaryFigures(run *Run, p *Phase) Figures {
	f := Figures{Phase: *p, Records: "the summary " + p.Label + " (" + RunBounds + ")", Started: map[string]int{}, Figures: []Figure{}}
	var s *Summary
	for i := range run.Summaries {
		if run.Summaries[i].Name == p.Label {
			s = &run.Summaries[i]
		}
	}
	get := func(name string) (Value, bool) {
		if s == nil {
			return Value{}, false
		}
		return s.Get(name)
	}
	add := func(name, unit string, v rate.Num, formula string) {
		g := Figure{Name: name, Unit: unit, Value: v, Formula: formula + "; " + RunBounds}
		if !v.Valid {
			g.Why = "the file gives no " + name
		}
		f.Figures = append(f.Figures, g)
	}
	// perS is a rate the file gives, else its total over its duration.
	perS := func(name, rateName, total string) {
		if v, ok := get(rateName); ok {
			add(name, "1/s", rate.Some(v.V), "the file's "+v.Field)
			return
		}
		t, ok1 := get(total)
		d, ok2 := get(VDuration)
		if ok1 && ok2 && d.V > 0 {
			add(name, "1/s", rate.Some(t.V/d.V), "the file's "+t.Field+" ÷ its "+d.Field)
			return
		}
		add(name, "1/s", rate.Num{}, "")
	}
	perS(FOutputTokensPS, VOutTokensPS, VOutTokensSum)
	perS(FInputTokensPS, "input_tokens_per_s", VInTokensSum)
	perS(FRequestsPS, VRequestsPS, VCompleted)
	for _, q := range []string{"ttft", "itl", "e2e"} {
		for _, p := range []string{"_p50_s", "_p90_s", "_p99_s"} {
			if v, ok := get(q + p); ok {
				add(q+p, "s", rate.Some(v.V), "the file's "+v.Field)
			} else {
				add(q+p, "s", rate.Num{}, "")
			}
		}
	}
	errs, ok1 := get(VErrors)
	reqs, ok2 := get(VRequests)
	if !ok2 {
		if done, ok := get(VCompleted); ok && ok1 {
			reqs, ok2 = Value{V: done.V + errs.V, Field: done.Field + " + " + errs.Field}, true
		}
	}
	if ok1 && ok2 && reqs.V > 0 {
		add(FErrorRate, "fraction", rate.Some(errs.V/reqs.V), "the file's "+errs.Field+" ÷ its "+reqs.Field)
	} else {
		add(FErrorRate, "fraction", rate.Num{}, "")
	}
	return f
}
