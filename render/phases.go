package render

import (
	"fmt"
	"strconv"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
)

// busyFigures are the figures a target's busy table shows, in order.
var busyFigures = []string{
	engine.DecodeTokensPerSecond, engine.PromptTokensPerSecond, engine.PromptTokensComputedPerSecond,
	engine.RequestsFinishedPerSecond, engine.PreemptionsPerSecond,
	"requests_running__mean", "requests_running__max", "requests_waiting__mean", "requests_waiting__max",
	"waiting_capacity__mean", "waiting_deferred__mean", "kv_cache_usage_ratio__max", engine.PrefixCacheHitRatio,
	engine.TTFT + "__p50", engine.TTFT + "__p90", engine.TTFT + "__p99",
	engine.TPOT + "__mean", engine.ITL + "__p50", engine.ITL + "__p99",
	engine.E2E + "__p50", engine.E2E + "__p90", engine.E2E + "__p99", engine.Queue + "__p50", engine.Queue + "__p99",
	engine.PerRequestDecodeTokensPerSecond,
}

// busyTable is a target's headline: its figures over its steady phases,
// from its own counters, beside the published values' distribution.
func busyTable(t *analyze.Target) Table {
	b := &t.Summary.Busy
	bd := &b.Bounds
	tbl := Table{Title: "Busy: the steady phases, from the engine's own counters", Summary: true,
		Columns: []Column{{Title: "figure"}, {Title: "value", Num: true, Prov: "Δcounter/Δt between the phases' first and last good polls; quantiles from the bucket deltas"},
			{Title: "bucket", Prov: "the histogram bucket the quantile fell in"},
			{Title: "published p5 / p50 / p95", Prov: "the values published per poll inside the phases"},
			{Title: "published, withheld", Prov: "polls with a published value; polls without one, by reason"}}}
	if bd.Reason == phases.ReasonNoSteady {
		tbl.Notes = append(tbl.Notes, "No steady phase was found: the whole recording's medians below are all there is.")
		return tbl
	}
	tbl.Notes = append(tbl.Notes, fmt.Sprintf("%d steady phase(s); %s differenced over %s (%s of their length) across %d process(es); %d restart interval(s) left out.",
		len(bd.Windows), strconv.Itoa(bd.Intervals)+" poll intervals", Window(bd.Seconds), percent(bd.Coverage), bd.Processes, len(bd.RestartsLeftOut)))
	if bd.Away > 0 {
		tbl.Notes = append(tbl.Notes, fmt.Sprintf("The target was out of the recorder's target set for %s of them (discovery): its counters were differenced across that time, not watched.", Window(bd.Away)))
	}
	for _, name := range busyFigures {
		f, ok := b.Get(name)
		// What the engine does not publish is said in its catalog.
		if !ok || (!f.Value.Valid && f.Reason == engine.ReasonNotExported) {
			continue
		}
		tbl.Rows = append(tbl.Rows, figureRow(&f, bd))
	}
	return tbl
}

// figureRow is one figure: its value with provenance, bucket and the
// published distribution.
func figureRow(f *phases.Figure, bd *phases.Bounds) []Cell {
	prov := fmt.Sprintf("%s; over %s between good polls, %s of the phase", f.Source, Window(bd.Seconds), percent(bd.Coverage))
	if bd.Away > 0 {
		prov += fmt.Sprintf("; %s of it away from the target set", Window(bd.Away))
	}
	if f.Reason != "" {
		prov += "; null: " + f.Reason
	}
	inUnit := func(v float64) string { return unitText(f.Name, v) }
	val := CellOf(rate.Cell{Value: f.Value, Reason: f.Reason, Source: f.Source, Derived: true, Bucket: f.Bucket}, inUnit)
	val.Prov = prov
	if f.Disagrees != "" {
		val.Class = ClassWarn
		val.Text += " ≠ published"
		val.Prov += "; " + f.Disagrees
	}
	bucket := ""
	if !f.Bucket.IsZero() {
		bucket = f.Bucket.Interval(inUnit)
	}
	pub, counts := "", ""
	if p := f.Published; p != nil {
		pub = fmt.Sprintf("%s / %s / %s", optionalIn(f.Name, p.P5), optionalIn(f.Name, p.P50), optionalIn(f.Name, p.P95))
		counts = strconv.Itoa(p.Values)
		if len(p.Nulls) > 0 {
			counts += "; " + outcomes(p.Nulls)
		}
	}
	return []Cell{nameCell(f.Name), val, text(bucket), text(pub), text(counts)}
}

func optional(n rate.Num) string {
	if !n.Valid {
		return "—"
	}
	return format(n.V)
}

// optionalIn is n in the unit of the cell name, or "—".
func optionalIn(name string, n rate.Num) string {
	if !n.Valid {
		return "—"
	}
	return unitText(name, n.V)
}

func percent(n rate.Num) string {
	if !n.Valid {
		return "—"
	}
	return strconv.FormatFloat(100*n.V, 'f', 0, 64) + " %"
}

// phasesSection lists the phases (named first) with each target's decode,
// running and TTFT figures, and the figures the published values disagree
// with.
func phasesSection(res *analyze.Result) (Section, bool) {
	o := &res.Output
	if len(o.Phases) == 0 {
		return Section{}, false
	}
	t0 := runStart(res)
	s := Section{ID: "phases", Title: "Phases",
		Notes: []string{"Named phases (a --phases file, marks made while recording) come first and span every target; then the idle, ramp and steady phases found at each target's load edges. Each figure is Δcounter/Δt between the phase's first and last good polls, per process across a restart."}}
	tbl := Table{Title: "Phases and their figures", Fold: len(o.Phases) > 40, Columns: []Column{{Title: "phase"}, {Title: "kind"}, {Title: "source"},
		{Title: "target"}, {Title: "start"}, {Title: "length", Num: true}, {Title: "decode tokens/s", Num: true},
		{Title: "running (mean)", Num: true}, {Title: "TTFT p50", Num: true}, {Title: "coverage", Num: true}}}
	for _, m := range o.Phases {
		for _, tf := range m.Targets {
			fig := func(name string) Cell {
				f, _ := tf.Get(name)
				c := CellOf(rate.Cell{Value: f.Value, Reason: f.Reason, Source: f.Source, Derived: true}, formatIn(name))
				if f.Disagrees != "" {
					c.Class, c.Text, c.Prov = ClassWarn, c.Text+" ≠ published", c.Prov+"; "+f.Disagrees
				}
				return c
			}
			tbl.Rows = append(tbl.Rows, []Cell{{Text: m.Name, Prov: m.Why}, text(m.Kind), text(m.Source), text(tf.Target),
				elapsed(t0, m.Start), text(Window(m.Duration())), fig(engine.DecodeTokensPerSecond), fig("requests_running__mean"),
				fig(engine.TTFT + "__p50"), text(percent(tf.Bounds.Coverage))})
		}
		if m.Fleet != nil {
			for _, f := range m.Fleet.Figures {
				if f.Name == engine.DecodeTokensPerSecond {
					tbl.Notes = append(tbl.Notes, fmt.Sprintf("%s, fleet decode: %s tokens/s (%s)", m.Name, optional(f.Value), f.Source))
				}
			}
		}
	}
	s.Tables = append(s.Tables, tbl)
	if len(o.Disagreements) > 0 {
		// A long list stays in the page; the summary points to it.
		d := Table{Title: "Figures the published values disagree with (by more than 10 %)", Summary: len(o.Disagreements) <= 20,
			Columns: []Column{{Title: "phase"}, {Title: "target"}, {Title: "figure"}, {Title: "value", Num: true},
				{Title: "published median", Num: true}, {Title: "refused", Num: true}, {Title: "what it means"}}}
		for _, x := range o.Disagreements {
			d.Rows = append(d.Rows, []Cell{text(x.Phase), text(x.Target), nameCell(x.Figure), text(optionalIn(x.Figure, x.Value)),
				text(optionalIn(x.Figure, x.Median)), text(strconv.Itoa(x.Refused)), text(x.Detail)})
		}
		s.Tables = append(s.Tables, d)
	}
	for _, p := range o.Problems {
		s.Notes = append(s.Notes, "phases: "+p)
	}
	return s, true
}
