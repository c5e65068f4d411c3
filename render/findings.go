package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
)

// The run's story, laid out: verdict lines above the numbers, the incidents
// table with counterfactuals, settle polls per span (table and chart), the
// fleet with its seams, facts and drift. Everything here is read from the
// analysis; nothing is computed again.

// findingVerdicts are the verdict lines of the findings: the queue ceiling
// and reason first (what the engine said), then incidents, seams, drift.
func findingVerdicts(res *analyze.Result) []Verdict {
	var vs []Verdict
	for _, tf := range res.Facts {
		for _, f := range tf.Facts {
			if f.Name != findings.FactCeiling && f.Name != findings.FactQueueReason {
				continue
			}
			class := ClassOK
			if f.Name == findings.FactCeiling && f.Value.Valid {
				class = ClassWarn
			}
			vs = append(vs, Verdict{Topic: strings.ReplaceAll(f.Name, "_", " "), Class: class, Href: "#facts",
				Text: tf.Target + ": " + f.Text, Prov: factProv(f)})
		}
	}
	if n := len(res.Incidents); n > 0 {
		kinds := map[string]int{}
		for _, in := range res.Incidents {
			kinds[in.Kind]++
		}
		vs = append(vs, Verdict{Topic: "incidents", Class: ClassWarn, Href: "#incidents",
			Text: fmt.Sprintf("%d incidents: %s", n, outcomes(kinds)), Prov: "where the measurement could not be trusted, and why"})
	}
	for _, s := range res.Settle {
		if s.Published && s.Text != "" {
			vs = append(vs, Verdict{Topic: "settle", Class: ClassNone, Href: "#settle", Text: s.Text,
				Prov: fmt.Sprintf("published span %s: edges judged when the new load holds for 5 polls", spanName(s.Span))})
		}
	}
	if len(res.Seams) > 0 {
		var ids []string
		for _, s := range res.Seams {
			ids = append(ids, s.ID)
		}
		vs = append(vs, Verdict{Topic: "seams", Class: ClassWarn, Href: "#fleet",
			Text: "engines count differently: " + strings.Join(ids, ", "), Prov: "fleet sums name what they add up"})
	}
	for _, d := range res.Drift {
		if len(d.Missing)+len(d.Renamed) == 0 {
			continue
		}
		vs = append(vs, Verdict{Topic: "drift", Class: ClassWarn, Href: "#drift",
			Text: fmt.Sprintf("%s (%s %s): %d quantities not published, %d series under old names", d.Target, d.Engine, d.Version, len(d.Missing), len(d.Renamed)),
			Prov: "version from " + d.VersionSource})
	}
	for _, r := range res.Rollups {
		if r.Cap.Valid && r.AboveCap > 0 {
			vs = append(vs, Verdict{Topic: "plausibility", Class: ClassFail, Href: "#rollups",
				Text: fmt.Sprintf("%s %s: %d published values above the cap %s", r.Target, r.Cell, r.AboveCap, format(r.Cap.V))})
		}
	}
	return vs
}

func factProv(f findings.Fact) string {
	c := rate.Cell{Value: f.Value, Source: f.Source, Derived: f.Derived, Window: f.Window, Reason: f.Reason}
	p := Prov(c)
	if f.Status != "" {
		p += "; " + f.Status
	}
	return p
}

func when(n rate.Num) string {
	if !n.Valid {
		return ""
	}
	return unix(n.V)
}

func findingSections(res *analyze.Result) ([]Section, error) {
	var out []Section

	inc := Table{Title: "Incidents", Summary: true, Columns: []Column{{Title: "kind"}, {Title: "target"}, {Title: "when"},
		{Title: "gate"}, {Title: "counterfactual", Prov: "what a naive Δ/Δt would have printed, and what was published instead"}, {Title: "detail"}}}
	for _, in := range res.Incidents {
		target := string(in.Target)
		if target == "" {
			target = "all: " + strings.Join(in.Targets, ", ")
		}
		at := when(in.T)
		if in.Start.Valid {
			at = when(in.Start) + " – " + when(in.End)
		}
		inc.Rows = append(inc.Rows, []Cell{text(in.Kind), text(target), text(at), text(string(in.Gate)),
			text(in.Counterfactual), text(in.Detail)})
	}
	if len(inc.Rows) == 0 {
		inc.Notes = append(inc.Notes, "no incident: every poll came on time and every window passed the gates")
	}
	out = append(out, Section{ID: "incidents", Title: "Incidents", Tables: []Table{inc}})

	settle := Table{Title: "Settle polls per span", Summary: true, Columns: []Column{{Title: "span"}, {Title: "edges", Num: true},
		{Title: "judged", Num: true}, {Title: "settled by poll 2", Num: true}, {Title: "unsettled", Num: true},
		{Title: "median settle poll", Num: true}, {Title: "median |ln| at poll 2", Num: true}, {Title: "summary"}}}
	for _, s := range res.Settle {
		name := spanName(s.Span)
		if s.Published {
			name += " (published)"
		}
		settle.Rows = append(settle.Rows, []Cell{text(name), text(strconv.Itoa(s.Edges)), text(strconv.Itoa(s.Judged)),
			text(strconv.Itoa(s.ByPoll2)), text(strconv.Itoa(s.Unsettled)), numCell(s.MedianSettlePoll), numCell(s.MedianLnErrPoll2), text(s.Text)})
	}
	sec := Section{ID: "settle", Title: "Load edges and settle polls", Tables: []Table{settle}}
	settleCh, err := settleCharts(res)
	if err != nil {
		return nil, err
	}
	sec.Charts = append(sec.Charts, settleCh...)
	edges := Table{Title: "Edges", Fold: true, Columns: []Column{{Title: "target"}, {Title: "kind"}, {Title: "t"},
		{Title: "level", Num: true}, {Title: "judged"}, {Title: "settle poll", Num: true}, {Title: "|ln| at poll 2", Num: true}}}
	// The table lists judged edges, at most maxEdgeRows; the JSON has all.
	unjudged, shown := 0, 0
	for _, e := range res.Edges {
		if !e.Judged {
			unjudged++
			continue
		}
		if shown == maxEdgeRows {
			continue
		}
		shown++
		sp := "—"
		if e.SettlePoll != nil {
			sp = strconv.Itoa(*e.SettlePoll)
		}
		edges.Rows = append(edges.Rows, []Cell{text(e.Target), {Text: e.Kind, Prov: "found on the " + e.Signal}, text(unix(e.T)),
			Cell{Text: numText(e.Level), Prov: e.LevelSource}, text("yes"), text(sp), numCell(e.LnErrPoll2)})
	}
	judged := len(res.Edges) - unjudged
	if unjudged > 0 {
		edges.Notes = append(edges.Notes, fmt.Sprintf("%d edges not judged (the new load held fewer than 5 polls, or no decode level held) are not listed; the analysis JSON has every edge.", unjudged))
	}
	if judged > shown {
		edges.Notes = append(edges.Notes, fmt.Sprintf("%d more judged edges are in the analysis JSON.", judged-shown))
	}
	sec.Tables = append(sec.Tables, edges)
	out = append(out, sec)

	fl := res.Fleet
	fleet := Section{ID: "fleet", Title: "Fleet"}
	sum := Table{Title: "Fleet totals", Summary: true, Columns: []Column{{Title: "quantity"}, {Title: "value", Num: true}}}
	fs := fl.Summary
	sum.Rows = [][]Cell{
		{text("engine targets"), text(strings.Join(fl.Targets, ", "))},
		{text("ticks every engine answered"), text(fmt.Sprintf("%d of %d (fewest live: %d)", fs.AllLive, fs.Points, fs.MinLive))},
		{text("decode tokens/s, median of the sum"), Cell{Text: numText(fs.DecodeMedian), Prov: "sum over the engines that answered, each its published cell"}},
		{text("decode tokens/s, max of the sum"), Cell{Text: numText(fs.DecodeMax), Prov: "sum over the engines that answered"}},
		{text("requests waiting, max"), text(numText(fs.WaitingMax))},
		{text("KV pressure, max"), Cell{Text: numText(fs.KVMax), Prov: "the fullest engine, never a sum"}},
		{text("tokens over the run"), Cell{Text: numText(fs.TokensRun), Prov: "Σ over engines and their processes of the rise of tokens_total; a restarted process counted from 0"}},
		{text("lifetime tokens at the end"), Cell{Text: numText(fs.TokensTotal), Prov: "Σ tokens_total (prompt incl. cache hits + generated), each engine's processes summed across restarts"}},
	}
	seams := Table{Title: "Seams: where engines count differently", Summary: true, Columns: []Column{{Title: "seam"}, {Title: "cells"}, {Title: "targets"}, {Title: "note"}}}
	for _, s := range res.Seams {
		var groups []string
		for _, k := range slices.Sorted(maps.Keys(s.Targets)) {
			groups = append(groups, k+": "+strings.Join(s.Targets[k], ", "))
		}
		seams.Rows = append(seams.Rows, []Cell{text(s.ID), text(strings.Join(s.Cells, ", ")), text(strings.Join(groups, "; ")), text(s.Note)})
	}
	fleet.Tables = append(fleet.Tables, sum, seams)
	fleetCh, err := fleetCharts(fl)
	if err != nil {
		return nil, err
	}
	fleet.Charts = append(fleet.Charts, fleetCh...)
	out = append(out, fleet)

	facts := Section{ID: "facts", Title: "What the engines already know"}
	for _, tf := range res.Facts {
		t := Table{Title: tf.Target + " (" + tf.Engine + ")", Summary: true, Columns: []Column{{Title: "fact"}, {Title: "value", Num: true}, {Title: "what it says"}}}
		for _, f := range tf.Facts {
			v := numText(f.Value)
			if !f.Value.Valid {
				v = "— (" + cmpOr(f.Status, f.Reason, "unknown") + ")"
			} else if f.Unit != "" {
				v += " " + f.Unit
			}
			t.Rows = append(t.Rows, []Cell{text(f.Name), {Text: v, Prov: factProv(f), Class: factClass(f)}, text(f.Text)})
		}
		facts.Tables = append(facts.Tables, t)
	}
	if res.Energy != nil {
		e := res.Energy
		c := rate.Cell{Value: e.JoulesPerToken, Source: e.Source, Derived: e.Derived, Reason: e.Reason, Window: rate.Some(e.Busy)}
		facts.Tables = append(facts.Tables, Table{Title: "Energy", Summary: true, Columns: []Column{{Title: "quantity"}, {Title: "value", Num: true}},
			Rows: [][]Cell{
				{text("joules per generated token, busy windows"), CellOf(c, format)},
				{text("sources"), text(strings.Join(e.Sources, ", ") + " (" + e.Method + ")")},
			}, Notes: e.Notes})
	}
	out = append(out, facts)

	drift := Section{ID: "drift", Title: "Engine-version drift"}
	for _, d := range res.Drift {
		t := Table{Title: fmt.Sprintf("%s: %s %s (version from %s)", d.Target, d.Engine, d.Version, d.VersionSource), Columns: []Column{{Title: "what"}, {Title: "series"}, {Title: "note"}}}
		for _, m := range d.Missing {
			t.Rows = append(t.Rows, []Cell{text("missing " + m.Cell), text(strings.Join(m.Series, ", ")), text(m.Note)})
		}
		for _, r := range d.Renamed {
			t.Rows = append(t.Rows, []Cell{text("renamed (" + r.Published + ")"), text(r.Old + " → " + r.New), text(r.Note)})
		}
		for _, l := range d.Lookalikes {
			t.Rows = append(t.Rows, []Cell{text("looks like " + l.Like), text(l.Series), text("")})
		}
		if len(t.Rows) == 0 {
			t.Notes = append(t.Notes, "publishes every quantity its engine and version should")
		}
		drift.Tables = append(drift.Tables, t)
	}
	out = append(out, drift)

	roll := Table{Title: "Plausibility: published values above the cap (must be 0) next to naive Δ/Δt", Summary: true,
		Columns: []Column{{Title: "target"}, {Title: "cell"}, {Title: "cap", Num: true}, {Title: "published above", Num: true},
			{Title: "naive above", Num: true}, {Title: "max published", Num: true}, {Title: "max naive", Num: true}, {Title: "max of 1 m means", Num: true}}}
	for _, r := range res.Rollups {
		if !r.Cap.Valid {
			continue
		}
		roll.Rows = append(roll.Rows, []Cell{text(r.Target), text(r.Cell), text(numText(r.Cap)), text(strconv.Itoa(r.AboveCap)),
			text(strconv.Itoa(r.NaiveAboveCap)), text(numText(r.Max)), text(numText(r.NaiveMax)), text(numText(r.MinuteMeanMax))})
	}
	if len(roll.Rows) == 0 {
		roll.Notes = append(roll.Notes, "no plausibility cap configured (llmrec analyze --cap)")
	}
	out = append(out, Section{ID: "rollups", Title: "Rollups and plausibility", Tables: []Table{roll}})
	return out, nil
}

// maxEdgeRows bounds the edges table: a day of a busy fleet has thousands.
const maxEdgeRows = 200

func factClass(f findings.Fact) string {
	if f.Status == "unimplemented" {
		return ClassUnknown
	}
	if !f.Value.Valid {
		return ClassRefused
	}
	return ClassNone
}

func numText(n rate.Num) string {
	if !n.Valid {
		return "—"
	}
	return format(n.V)
}

func numCell(n rate.Num) Cell { return text(numText(n)) }

func cmpOr(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// spanName names a settle row's span: a published span of 0 is the
// edges' own spans, by counter kind.
func spanName(span float64) string {
	if span == 0 {
		return "by counter kind"
	}
	return Window(span)
}
