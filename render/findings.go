package render

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
)

// The run's story, laid out: verdict lines above the numbers, the incidents
// table with counterfactuals, settle polls per span (table and chart), the
// fleet with its seams, facts and drift. Everything here is read from the
// analysis; nothing is computed again.

func factProv(f findings.Fact) string {
	c := rate.Cell{Value: f.Value, Source: f.Source, Derived: f.Derived, Window: f.Window, Reason: f.Reason}
	p := Prov(c)
	if f.Status != "" {
		p += "; " + f.Status
	}
	return p
}

// elapsed is t as time into the run, "+1:02" or "+1:02:03", with the UTC
// time on hover: short enough to repeat in every row.
func elapsed(t0, t float64) Cell {
	if t == 0 {
		return text("—")
	}
	// Rule: a run without a poll has no start to count from: the clock time.
	if t0 == 0 {
		return Cell{Text: unix(t), Prov: "UTC; no target answered, so the run has no first poll to count time from"}
	}
	d := time.Duration(math.Round(t-t0)) * time.Second
	sign := "+"
	if d < 0 {
		sign, d = "−", -d
	}
	h, m, sec := int(d/time.Hour), int(d/time.Minute)%60, int(d/time.Second)%60
	s := fmt.Sprintf("%s%d:%02d", sign, m, sec)
	if h > 0 {
		s = fmt.Sprintf("%s%d:%02d:%02d", sign, h, m, sec)
	}
	return Cell{Text: s, Prov: unix(t) + " (time into the run since its first poll, " + unix(t0) + ")"}
}

// span is the stretch from a to b as time into the run, with its length.
func span(t0, a, b float64) Cell {
	from, to := elapsed(t0, a), elapsed(t0, b)
	return Cell{Text: from.Text + " – " + to.Text + " (" + time.Duration(math.Round(b-a)*1e9).String() + ")",
		Prov: unix(a) + " – " + unix(b)}
}

// runStart is the run's first poll, Unix seconds; 0 without polls.
func runStart(res *analyze.Result) float64 {
	first := 0.0
	for _, t := range res.Targets {
		if t.Summary.First != 0 && (first == 0 || t.Summary.First < first) {
			first = t.Summary.First
		}
	}
	return first
}

func findingSections(res *analyze.Result) ([]Section, error) {
	var out []Section
	t0 := runStart(res)

	inc := Table{Title: "Incidents", Summary: true, Columns: []Column{{Title: "kind"}, {Title: "target"}, {Title: "when"},
		{Title: "gate"}, {Title: "counterfactual", Prov: "what a naive Δ/Δt would have printed, and what was published instead"}, {Title: "detail"}}}
	for _, in := range res.Incidents {
		target := string(in.Target)
		if target == "" {
			target = "all: " + strings.Join(in.Targets, ", ")
		}
		at := text("—")
		switch {
		case in.Start.Valid && in.End.Valid:
			at = span(t0, in.Start.V, in.End.V)
		case in.T.Valid:
			at = elapsed(t0, in.T.V)
		}
		inc.Rows = append(inc.Rows, []Cell{text(in.Kind), text(target), at, text(string(in.Gate)),
			text(in.Counterfactual), text(in.Detail)})
	}
	if len(inc.Rows) == 0 {
		inc.Notes = append(inc.Notes, "no incident: every poll came on time and every window passed the gates")
	}
	out = append(out, Section{ID: "incidents", Title: "Incidents", Tables: []Table{inc},
		Notes: []string{"An incident is a stretch where the measurement could not be trusted. Times are into the run (hover for UTC). The gate is the rate estimator's check that refused a window there (floor, ceiling, stale, jump, reset, order, no_baseline); the counterfactual is what a naive Δ/Δt between two polls would have printed, beside what was published."}})

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
	sec := Section{ID: "settle", Title: "Load edges and settle polls", Tables: []Table{settle},
		Notes: []string{"A load edge is a change of load found on a target's decode counter. Its settle poll is the first poll after it (poll 1 is the first) whose published rate is within 10 % of the new level; the |ln| error at poll 2 is |ln(value/level)| there: 0.1 is about 10 % off, 0.69 a factor of 2. Each span (how far back a window may reach) is replayed to show what a longer or shorter one would have published."}}
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
		edges.Rows = append(edges.Rows, []Cell{text(e.Target), {Text: e.Kind, Prov: "found on the " + e.Signal}, elapsed(t0, e.T),
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
	fleet := Section{ID: "fleet", Title: "Fleet",
		Notes: []string{"The fleet is every engine target together: per tick, the sum over the engines that answered. A seam is a quantity engines count differently (tokenizers, cache hits, when a counter moves): a sum across it adds unlike things, and the seams table names each."}}
	sum := Table{Title: "Fleet totals", Summary: true, Columns: []Column{{Title: "quantity"}, {Title: "value", Num: true}}}
	fs := fl.Summary
	sum.Rows = [][]Cell{
		{text("engine targets"), text(strings.Join(fl.Targets, ", "))},
		{text("ticks every engine answered"), text(fmt.Sprintf("%d of %d (fewest live: %d)", fs.AllLive, fs.Points, fs.MinLive))},
		{text("decode tokens/s, median of the sum"), Cell{Text: numText(fs.DecodeMedian), Prov: "sum over the engines that answered, each its published cell"}},
		{text("decode tokens/s, max of the sum"), Cell{Text: numText(fs.DecodeMax), Prov: "sum over the engines that answered"}},
		{text("requests waiting, max"), text(numText(fs.WaitingMax))},
		{text("KV pressure, max"), Cell{Text: optionalIn(engine.KVCacheUsageRatio, fs.KVMax), Prov: "the fullest engine, never a sum"}},
		{text("tokens over the run"), Cell{Text: numText(fs.TokensRun), Prov: "Σ over engines and their processes of the rise of tokens_total; a restarted process counted from 0"}},
		{text("lifetime tokens at the end"), Cell{Text: numText(fs.TokensTotal), Prov: "Σ tokens_total (prompt incl. cache hits + generated), each engine's processes summed across restarts"}},
	}
	// Discovery changed the target set: say how, and that absence is no 0.
	if fs.Joins+fs.Leaves > 0 {
		sum.Rows = append(sum.Rows, []Cell{text("targets joining and leaving (discovery)"),
			Cell{Text: fmt.Sprintf("%d joined, %d left; %d of %d ticks with an engine absent", fs.Joins, fs.Leaves, fs.AbsentPoints, fs.Points),
				Prov: "the recorder's target set (file_sd re-read, DNS re-resolved), from the manifests' presence intervals: an absent engine is out of the sums, neither down nor 0; the target_join and target_leave incidents say when"}})
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
		ver := "version unknown"
		if d.Version != "" {
			ver = d.Version + " (version from " + cmpOr(d.VersionSource, "unknown") + ")"
		}
		t := Table{Title: fmt.Sprintf("%s: %s %s", d.Target, d.Engine, ver), Columns: []Column{{Title: "what"}, {Title: "series"}, {Title: "note"}}}
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
	// Rule: only engine targets are compared with their version's catalog.
	if len(res.Drift) == 0 {
		drift.Notes = append(drift.Notes, "no engine target: drift compares what an engine's version should publish with what it did")
	}
	out = append(out, drift)

	roll := Table{Title: "Plausibility: published values above the cap (must be 0) next to naive Δ/Δt", Summary: true,
		Columns: []Column{{Title: "target"}, {Title: "cell"}, {Title: "cap", Num: true}, {Title: "published above", Num: true},
			{Title: "naive above", Num: true}, {Title: "max published", Num: true}, {Title: "max naive", Num: true}, {Title: "max of 1 m means", Num: true}}}
	for _, r := range res.Rollups {
		if !r.Cap.Valid {
			continue
		}
		roll.Rows = append(roll.Rows, []Cell{text(r.Target), text(r.Cell), text(optionalIn(r.Cell, r.Cap)), text(strconv.Itoa(r.AboveCap)),
			text(strconv.Itoa(r.NaiveAboveCap)), text(optionalIn(r.Cell, r.Max)), text(optionalIn(r.Cell, r.NaiveMax)), text(optionalIn(r.Cell, r.MinuteMeanMax))})
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
