package render

import (
	"cmp"
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
	"github.com/llmrec/llmrec/analyze/phases"
)

// The answer first: one table, a row per target and one for the fleet,
// with the busy figures (the steady phases, from the engines' own
// counters) and a status and its reason as the analysis judged them; then
// the findings, grouped by kind, one plain sentence each. Both are laid
// out here from the analysis; the templates and Markdown only arrange them.

// answerColumns are the answer's figure columns, one per
// analyze.AnswerFigures, with what each means.
var answerColumns = []Column{
	{Title: "decode tok/s", Num: true, Prov: "generated tokens per second: Δ of the engine's generated-token counter over its steady phases / their length"},
	{Title: "prompt tok/s", Num: true, Prov: "prompt tokens per second: Δ of the engine's prompt-token counter over its steady phases / their length (cache hits included where the engine counts them)"},
	{Title: "TTFT p50", Num: true, Prov: "time to first token, median: from the TTFT histogram's bucket deltas across the steady phases"},
	{Title: "TTFT p99", Num: true, Prov: "time to first token, 99th percentile: from the TTFT histogram's bucket deltas across the steady phases"},
	{Title: "ITL p50", Num: true, Prov: "inter-token latency, median: from the ITL histogram's bucket deltas across the steady phases"},
	{Title: "ITL p99", Num: true, Prov: "inter-token latency, 99th percentile: from the ITL histogram's bucket deltas across the steady phases"},
	{Title: "ITL mean", Num: true, Prov: "inter-token latency, exact mean: Δsum / Δcount of the ITL histogram across the steady phases (no bucket in it)"},
	{Title: "e2e mean", Num: true, Prov: "end-to-end request latency, exact mean: Δsum / Δcount of the e2e histogram across the steady phases (no bucket in it)"},
	{Title: "max waiting", Num: true, Prov: "the most requests waiting in the engine's queue at any poll of the steady phases"},
	{Title: "max KV", Num: true, Prov: "the fullest the KV cache was at any poll of the steady phases"},
}

// statusWords are the analysis' statuses as the answer shows them.
var statusWords = map[string]struct{ word, class string }{
	analyze.StatusOK:       {"ok", ClassOK},
	analyze.StatusDegraded: {"degraded", ClassWarn},
	analyze.StatusNoSteady: {"no steady phase", ClassUnknown},
	analyze.StatusWithheld: {"withheld", ClassRefused},
}

// answerTable is the answer: per target and for the fleet, the status,
// the busy figures, the incidents, and why the status is what it is.
func answerTable(res *analyze.Result) Table {
	t := Table{Title: "The answer: each target while busy (its steady phases), from the engine's own counters", Summary: true}
	t.Columns = append(t.Columns, Column{Title: "target"}, Column{Title: "status", Prov: "ok: measured over steady phases with nothing going wrong inside them; degraded: measured, with the caveat in the last column; no steady phase: the engine never ran at one level; withheld: too little to measure"})
	t.Columns = append(t.Columns, answerColumns...)
	t.Columns = append(t.Columns, Column{Title: "incidents", Num: true, Prov: "where the measurement could not be trusted (gaps, restarts, failed scrapes, stalls...), anywhere in the recording"},
		Column{Title: "why this status"})
	// Named phases answer, each load level its own row.
	if len(res.Answer.Phases) > 0 {
		return phaseAnswerTable(res)
	}
	rows := map[string]analyze.AnswerRow{}
	for _, row := range res.Answer.Rows {
		rows[row.Target] = row
	}
	var windows []string
	for i := range res.Targets {
		tg := &res.Targets[i]
		row, ok := rows[tg.Name]
		if !ok {
			row = analyze.AnswerRow{Target: tg.Name, Reason: "not judged by this analysis"}
		}
		name := Cell{Text: tg.Name, Href: "#" + ID("target", tg.Name), Prov: "engine " + tg.Engine}
		t.Rows = append(t.Rows, answerRow(name, row, &tg.Summary.Busy, tg.Engine))
		windows = append(windows, windowText(tg.Name, &tg.Summary.Busy.Bounds))
	}
	if fl, ok := rows[""]; ok && len(res.Targets) > 1 {
		name := Cell{Text: "fleet", Href: "#fleet", Prov: "every target together: sums of their busy figures where figures add, the largest of their maxima"}
		t.Rows = append(t.Rows, answerRow(name, fl, &phases.Figures{Figures: res.FleetBusy.Figures}, ""))
	}
	t.Notes = append(t.Notes,
		"Steady phases: stretches where an engine ran at one load level, between the load edges found on its decode counter; each figure is Δcounter/Δt between their first and last good polls (latencies: quantiles of the histograms' bucket deltas). Hover a number for its source; unknown means the engine publishes no such figure or none could be measured, never 0.",
		"Windows: "+strings.Join(windows, "; ")+".")
	if n := importedAnswerNote(res.Targets); n != "" {
		t.Notes = append(t.Notes, n)
	}
	return t
}

// phaseAnswerTable is the answer of named phases: a row per phase and
// target in time order, with the phase's concurrency beside the figures.
func phaseAnswerTable(res *analyze.Result) Table {
	t := Table{Title: "The answer: each named phase, in time order, from the engine's own counters over it", Summary: true}
	t.Columns = append(t.Columns, Column{Title: "phase", Prov: "named by a --phases file, marks made while recording, else the client's stages"}, Column{Title: "target"},
		Column{Title: "concurrency", Num: true, Prov: "the engine's mean requests running + waiting over the phase; the client's mean in flight after the slash when a client record names it"},
		Column{Title: "status", Prov: "judged over the phase alone: ok, degraded (the caveat in the last column), withheld (too little to measure)"})
	t.Columns = append(t.Columns, answerColumns...)
	t.Columns = append(t.Columns, Column{Title: "incidents", Num: true, Prov: "incidents touching the phase"}, Column{Title: "why this status"})
	for i := range res.Answer.Phases {
		row := &res.Answer.Phases[i]
		eng := ""
		for k := range res.Targets {
			if res.Targets[k].Name == row.Target {
				eng = res.Targets[k].Engine
			}
		}
		conc := "unknown"
		if row.Concurrency.Valid {
			conc = strconv.FormatFloat(row.Concurrency.V, 'f', 1, 64)
		}
		if row.ClientConcurrency.Valid {
			conc += " / " + strconv.FormatFloat(row.ClientConcurrency.V, 'f', 1, 64)
		}
		cells := answerRow(Cell{Text: row.Target, Href: "#" + ID("target", row.Target), Prov: "engine " + eng}, row.AnswerRow, res.PhaseFigures(row), eng)
		t.Rows = append(t.Rows, append([]Cell{{Text: row.Phase, Href: "#phases", Prov: row.Source}, cells[0], text(conc)}, cells[1:]...))
	}
	t.Notes = append(t.Notes, "Each figure is Δcounter/Δt between the phase's first and last good polls (latencies: quantiles of the histograms' bucket deltas across it). Hover a number for its source; unknown means the engine publishes no such figure or none could be measured, never 0. The busy figures (every steady phase blended) are in each target's section.")
	return t
}

// answerRow is one row of the answer.
func answerRow(name Cell, row analyze.AnswerRow, figs *phases.Figures, eng string) []Cell {
	sw, ok := statusWords[row.Status]
	if !ok {
		sw.word, sw.class = "unknown", ClassUnknown
	}
	cells := []Cell{name, {Text: sw.word, Class: sw.class, Prov: row.Reason}}
	for _, f := range analyze.AnswerFigures {
		cells = append(cells, figureCell(figs, f, eng))
	}
	inc := Cell{Text: strconv.Itoa(row.Incidents)}
	if row.Incidents > 0 {
		inc.Href = "#incidents"
	}
	return append(cells, inc, text(row.Reason))
}

// figureCell is one answer figure: its value in its unit with its source
// and window on hover, or "unknown" with the reason.
func figureCell(figs *phases.Figures, name, eng string) Cell {
	f, ok := figs.Get(name)
	if !ok || !f.Value.Valid {
		why := f.Reason
		switch {
		case !ok:
			why = "not measured"
		case why == engine.ReasonNotExported && eng != "":
			why = eng + " does not publish it"
		case why == "":
			why = "no observation in the steady phases"
		}
		return Cell{Text: "unknown", Class: ClassUnknown, Prov: strings.ReplaceAll(why, "_", " ") + cmpOr(prefix("; ", f.Source))}
	}
	c := Cell{Text: f.Bucket.Text(f.Value.V, func(v float64) string { return unitText(name, v) }), Prov: f.Source}
	if b := figs.Bounds; b.Seconds > 0 {
		c.Prov += fmt.Sprintf("; over %s of steady phases between good polls (%s of them)", Window(b.Seconds), percent(b.Coverage))
	}
	if !f.Bucket.IsZero() {
		c.Prov += "; fell in bucket " + f.Bucket.Interval(format) + " s"
		if w := f.Bucket.Flags.Words(); len(w) > 0 {
			c.Prov += " (" + strings.Join(w, ", ") + ")"
		}
	}
	if f.Disagrees != "" {
		c.Prov += "; the published values disagree: " + f.Disagrees
	}
	return c
}

func prefix(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// unitText is a figure in its unit (render/names.go): durations in ms
// under a second, ratios in %, counts as integers.
func unitText(name string, v float64) string {
	switch n, _ := NameOf(name); n.Unit {
	case UnitSeconds:
		return seconds(v)
	case UnitRatio:
		return strconv.FormatFloat(100*v, 'f', 0, 64) + " %"
	}
	return format(v)
}

// formatIn is unitText of the cell name, as a formatter for CellOf.
func formatIn(name string) func(float64) string {
	return func(v float64) string { return unitText(name, v) }
}

// seconds is a duration in s, or in ms under one second.
func seconds(v float64) string {
	if math.Abs(v) < 1 {
		return strconv.FormatFloat(1000*v, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " s"
}

// windowText is the legend of one target's busy windows.
func windowText(name string, b *phases.Bounds) string {
	if b.Reason == phases.ReasonNoSteady || len(b.Windows) == 0 {
		return name + " none"
	}
	return fmt.Sprintf("%s %d steady phase(s), %s of counters (%s)", name, len(b.Windows),
		time.Duration(b.Seconds*1e9).Round(time.Second), percent(b.Coverage))
}

// answerFindings are the findings in brief, at most one line per kind,
// each naming its targets, with its number and a link to its section,
// the most severe first (Severity); within one severity, what could not be
// read first, then what went wrong, then what the engines said, then how
// the measurement itself behaved.
func answerFindings(res *analyze.Result) []Verdict {
	var vs []Verdict
	add := func(v *Verdict) {
		if v != nil {
			vs = append(vs, *v)
		}
	}
	add(problemsFinding(res))
	add(capFinding(res))
	add(incidentsFinding(res))
	add(ceilingFinding(res))
	add(kneeFinding(res.Sweep.Curves))
	add(withheldFinding(res))
	add(disagreeFinding(res))
	add(clientFinding(res))
	add(driftFinding(res))
	add(seamsFinding(res))
	add(settleFinding(res))
	slices.SortStableFunc(vs, func(a, b Verdict) int { return cmp.Compare(Severity(a.Class), Severity(b.Class)) })
	return vs
}

// Severity ranks a class for ordering findings, the most severe first:
// fail, warn, refused, unknown, a plain note, ok.
func Severity(class string) int {
	switch class {
	case ClassFail:
		return 0
	case ClassWarn:
		return 1
	case ClassRefused:
		return 2
	case ClassUnknown:
		return 3
	case ClassOK:
		return 5
	}
	return 4
}

func problemsFinding(res *analyze.Result) *Verdict {
	if len(res.Problems) == 0 {
		return nil
	}
	// The topic names the worst: a file skipped whole, read in part, or
	// read unverified under a damaged seal ledger.
	topic := "seal ledger"
	var files, errs []string
	for _, p := range res.Problems {
		switch {
		case p.Kind == analyze.ProblemSkipped:
			topic = "skipped file"
		case p.Kind == analyze.ProblemPartial && topic != "skipped file":
			topic = "file read in part"
		}
		files = append(files, p.File+" ("+p.Kind+")")
		errs = append(errs, p.File+": "+p.Error)
	}
	return &Verdict{Topic: topic, Class: ClassFail,
		Text: fmt.Sprintf("%d file(s) of the recording could not be read whole: %s; the figures leave out what they hold.", len(res.Problems), strings.Join(files, ", ")),
		Prov: "skipped: none of its rows analysed; partial: the rows before the damage analysed; seals: the files a damaged ledger line sealed were read unverified. " + strings.Join(errs, "; ")}
}

func capFinding(res *analyze.Result) *Verdict {
	var who []string
	n := 0
	for _, r := range res.Rollups {
		if r.Cap.Valid && r.AboveCap > 0 {
			who = append(who, r.Target+" "+r.Cell)
			n += r.AboveCap
		}
	}
	if n == 0 {
		return nil
	}
	return &Verdict{Topic: "plausibility", Class: ClassFail, Href: "#rollups",
		Text: fmt.Sprintf("%d published value(s) exceed the plausibility cap: %s.", n, strings.Join(uniq(who), ", ")),
		Prov: "a cap (llmrec analyze --cap) is the most a cell can plausibly be; a published value above it is a bug"}
}

func incidentsFinding(res *analyze.Result) *Verdict {
	if len(res.Incidents) == 0 {
		return &Verdict{Topic: "incidents", Class: ClassOK, Href: "#incidents",
			Text: "No incident: every poll came on time and every window passed the gates."}
	}
	kinds := map[string]int{}
	var who []string
	for _, in := range res.Incidents {
		kinds[analyze.IncidentKey(&in)]++
		if in.Target != "" {
			who = append(who, string(in.Target))
		} else {
			who = append(who, in.Targets...)
		}
	}
	who = uniq(who)
	return &Verdict{Topic: "incidents", Class: ClassWarn, Href: "#incidents",
		Text: fmt.Sprintf("%d incidents on %s: %s.", len(res.Incidents), targetsText(who), analyze.IncidentWords(kinds)),
		Prov: "an incident is a stretch where the measurement could not be trusted (a gap between polls, a restart, failed scrapes, a stall); the incidents table says what a naive Δ/Δt would have printed there instead"}
}

// ceilingFinding: which engines queued requests on KV capacity, and the
// most that waited; or that none did.
func ceilingFinding(res *analyze.Result) *Verdict {
	var hit, under []string
	most := 0.0
	for _, tf := range res.Facts {
		for _, f := range tf.Facts {
			if f.Name != findings.FactCeiling || !f.Value.Valid {
				continue
			}
			if f.Value.V == 0 {
				under = append(under, tf.Target)
				continue
			}
			hit = append(hit, tf.Target)
			most = max(most, f.Value.V)
		}
		for _, f := range tf.Facts {
			if f.Name == findings.FactQueueReason && f.By != nil && slices.Contains(hit, tf.Target) {
				most = max(most, f.By["capacity_max"])
			}
		}
	}
	prov := "the ceiling: requests the engine says wait for KV-cache capacity (vllm:num_requests_waiting_by_reason{reason=\"capacity\"}): load past what the KV pool holds at once becomes queue, not throughput"
	switch {
	case len(hit) == 0 && len(under) == 0:
		return nil
	case len(hit) == 0:
		return &Verdict{Topic: "queue ceiling", Class: ClassOK, Href: "#facts", Prov: prov,
			Text: fmt.Sprintf("No request waited for KV-cache capacity on %s: the load stayed under the ceiling.", targetsText(under))}
	}
	text := fmt.Sprintf("%s reached the KV-cache ceiling: up to %s requests waited for capacity, so more load became queue, not throughput.", targetsText(hit), format(most))
	if len(under) > 0 {
		text += fmt.Sprintf(" %s stayed under it.", targetsText(under))
	}
	return &Verdict{Topic: "queue ceiling", Class: ClassWarn, Href: "#facts", Text: text, Prov: prov}
}

// withheldFinding: the values the gates withheld where a reader needed
// them, by reason, on which targets.
func withheldFinding(res *analyze.Result) *Verdict {
	reasons := map[string]int{}
	var who []string
	n := 0
	for _, t := range res.Targets {
		for _, byReason := range t.Summary.Withheld {
			for r, k := range byReason {
				reasons[r] += k
				n += k
			}
		}
		if len(t.Summary.Withheld) > 0 {
			who = append(who, t.Name)
		}
	}
	prov := "a gate is a check of the rate estimator (floor, ceiling, stale, jump, reset, order) that refuses a window it cannot trust; a refused value is published as null with its reason, never interpolated; the first poll's missing baseline and a jump confirmed at the next poll are normal and not counted"
	var silent []string
	for _, t := range res.Targets {
		if t.Summary.Polls == 0 {
			silent = append(silent, t.Name)
		}
	}
	// Rule: no target answered, so the gates judged nothing: not "ok".
	if len(silent) == len(res.Targets) {
		return &Verdict{Topic: "gates", Class: ClassUnknown, Prov: prov, Text: "No target answered a scrape: there was no value for the gates to judge."}
	}
	if n == 0 && len(silent) > 0 {
		return &Verdict{Topic: "gates", Class: ClassOK, Prov: prov, Text: fmt.Sprintf("Every per-poll value a reader needed passed the estimator's gates on the targets that answered; %s never answered.", targetsText(silent))}
	}
	if n == 0 {
		return &Verdict{Topic: "gates", Class: ClassOK, Prov: prov, Text: "Every per-poll value a reader needed passed the estimator's gates."}
	}
	return &Verdict{Topic: "refused windows", Class: ClassRefused, Href: "#" + ID("target", who[0]), Prov: prov,
		Text: fmt.Sprintf("The gates withheld %d per-poll value(s) on %s (%s): shown as gaps in the charts, never guessed; the answer's figures come from the counters and are not affected.",
			n, targetsText(who), outcomes(reasons))}
}

// disagreeFinding: the phase figures whose published per-poll values
// tell another story.
func disagreeFinding(res *analyze.Result) *Verdict {
	ds := res.Disagreements
	if len(ds) == 0 {
		return nil
	}
	var who, figs []string
	for _, d := range ds {
		who = append(who, d.Target)
		figs = append(figs, HumanName(d.Figure))
	}
	return &Verdict{Topic: "published values", Class: ClassWarn, Href: "#phases",
		Prov: "each phase figure is compared with the median of the values the engine's metrics gave per poll inside the phase (windowed rates and quantiles); more than 10 % apart is a finding; the figure from the counters is the one to quote",
		Text: fmt.Sprintf("On %s, %d phase figure(s) differ by more than 10 %% from the median of the per-poll values (%s): a per-poll chart would mislead there.",
			targetsText(uniq(who)), len(ds), strings.Join(uniq(figs), ", "))}
}

// driftFinding groups the targets whose engine version publishes fewer or
// older series than it should, by what they lack.
func driftFinding(res *analyze.Result) *Verdict {
	groups := map[string][]string{}
	for _, d := range res.Drift {
		if len(d.Missing)+len(d.Renamed) == 0 {
			continue
		}
		ver := "version unknown"
		if d.Version != "" {
			ver = "version " + d.Version
		}
		var what []string
		if n := len(d.Missing); n > 0 {
			what = append(what, fmt.Sprintf("%d quantities missing", n))
		}
		if n := len(d.Renamed); n > 0 {
			what = append(what, fmt.Sprintf("%d series under old names", n))
		}
		key := fmt.Sprintf("%s, %s: %s", d.Engine, ver, strings.Join(what, ", "))
		groups[key] = append(groups[key], d.Target)
	}
	if len(groups) == 0 {
		return nil
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		parts = append(parts, fmt.Sprintf("%s (%s)", targetsText(groups[k]), k))
	}
	return &Verdict{Topic: "version drift", Class: ClassWarn, Href: "#drift",
		Prov: "drift: what an engine of its version should publish and did not, or publishes under an older name; read from what the engine reported about its version",
		Text: "Series differ from what the engine version should publish: " + strings.Join(parts, "; ") + "."}
}

func seamsFinding(res *analyze.Result) *Verdict {
	if len(res.Seams) == 0 {
		return nil
	}
	var ids []string
	for _, s := range res.Seams {
		ids = append(ids, strings.ReplaceAll(s.ID, "_", " "))
	}
	return &Verdict{Topic: "seams", Class: ClassNone, Href: "#fleet",
		Prov: "a seam is where two engines count a quantity differently, so that adding them up compares different things; fleet sums name them",
		Text: fmt.Sprintf("The engines count %d things differently (%s): fleet sums add them anyway and say so.", len(ids), strings.Join(ids, ", "))}
}

// settleFinding says in words how fast the published decode rate followed
// a change of load, under the published span.
func settleFinding(res *analyze.Result) *Verdict {
	for _, s := range res.Settle {
		if !s.Published {
			continue
		}
		prov := "a load change is judged when the new load holds for 5 polls; poll 1 is the first after the change; the rate has settled at the first poll within 10 % of the new level (|ln(value/level)| ≤ 0.1)"
		if s.Judged == 0 {
			return &Verdict{Topic: "load changes", Class: ClassNone, Href: "#settle", Prov: prov,
				Text: fmt.Sprintf("%d load change(s) found, none held 5 polls: how fast the published rates follow the load was not judged.", s.Edges)}
		}
		text := fmt.Sprintf("After %d of %d load changes the published decode rate was within 10 %% of the new level by the 2nd poll", s.ByPoll2, s.Judged)
		if s.MedianSettlePoll.Valid {
			text += fmt.Sprintf("; the median change took %s poll(s)", format(s.MedianSettlePoll.V))
		}
		if s.Unsettled > 0 {
			text += fmt.Sprintf("; %d never came within 10 %% before the next change", s.Unsettled)
		}
		class := ClassOK
		if s.ByPoll2 < s.Judged {
			class = ClassNone
		}
		return &Verdict{Topic: "load changes", Class: class, Href: "#settle", Prov: prov, Text: text + "."}
	}
	return nil
}

// targetsText names targets: all of them up to four, else the first three
// and how many more.
func targetsText(names []string) string {
	switch {
	case len(names) == 0:
		return "no target"
	case len(names) <= 4:
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}

// uniq is names sorted, each once.
func uniq(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}
