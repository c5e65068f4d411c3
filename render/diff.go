package render

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/llmrec/llmrec/analyze/diff"
	"github.com/llmrec/llmrec/analyze/rate"
)

// The outputs of `llmrec diff`: a terminal table, a Markdown summary for a
// pull request, and one offline page. They lay out a diff.Report and
// compute nothing.

// MaxDiffVisible is the most lines the Markdown summary shows unfolded.
const MaxDiffVisible = 40

// MaxDiffCharts is the most charts the diff page draws.
const MaxDiffCharts = 64

// verdictText is a verdict in plain words: no sign (an emoji renders as
// an empty box where no emoji font is installed); the page colours it.
func verdictText(v string) string {
	if v == diff.Same {
		return "no change"
	}
	return v
}

// rowVerdictText is a row's verdict in words, with the phase length an
// insufficient row's phase would need.
func rowVerdictText(r *diff.Row) string {
	if r.Verdict == diff.Insufficient && r.NeedSeconds > 0 {
		return fmt.Sprintf("insufficient: needs a %s phase", secondsText(r.NeedSeconds))
	}
	return verdictText(r.Verdict)
}

// secondsText is a length in seconds, "50 s", "250 s".
func secondsText(s float64) string {
	return format(s) + " s"
}

// overall is the page's verdict in a word and its class: the worst of the
// rows' (worse, then unlike, then insufficient), else better when a row
// is, else no change; a blocking seam (a phase or target left out) keeps
// the class from ok.
func overall(rep *diff.Report) (string, string) {
	n := map[string]int{}
	for _, r := range rep.Rows {
		n[r.Verdict]++
	}
	word, class := verdictText(diff.Same), ClassOK
	switch {
	case n[diff.Worse] > 0:
		return diff.Worse, ClassFail
	case len(rep.Rows) == 0:
		return "nothing compared", ClassUnknown
	case n[diff.Unlike] > 0:
		word, class = diff.Unlike, ClassWarn
	case n[diff.Insufficient] > 0:
		word, class = diff.Insufficient, ClassWarn
	case n[diff.Better] > 0:
		word = diff.Better
	}
	if slices.ContainsFunc(rep.Seams, func(s diff.Seam) bool { return s.Blocks }) {
		class = ClassWarn
	}
	return word, class
}

// needText says how many rows lack blocks for a phase too short, and the
// longest phase length they need; "" when none does.
func needText(rep *diff.Report) string {
	k, need := 0, 0.0
	for _, r := range rep.Rows {
		if r.NeedSeconds > 0 {
			k, need = k+1, max(need, r.NeedSeconds)
		}
	}
	if k == 0 {
		return ""
	}
	return fmt.Sprintf("%d row%s insufficient because a phase is too short for blocks: record phases of at least %s between good polls (50 poll intervals) to compare them", k, plural(k), secondsText(need))
}

func verdictClass(v string) string {
	switch v {
	case diff.Better:
		return ClassOK
	case diff.Worse:
		return ClassFail
	case diff.Unlike:
		return ClassRefused
	case diff.Insufficient:
		return ClassUnknown
	}
	return ClassNone
}

// rank orders rows for the reader: worse first, then better, unlike,
// insufficient, ~.
func rank(v string) int {
	return map[string]int{diff.Worse: 0, diff.Better: 1, diff.Unlike: 2, diff.Insufficient: 3, diff.Same: 4}[v]
}

// sideText is one side of a row: the samples' median ± the half-width of
// its interval, as a percentage; the phase figure when there is no median.
func sideText(v diff.Value, unit string) string {
	if !v.Median.Valid {
		if v.Figure.Valid {
			return quantityValue(v.Figure.V, unit) + " (figure)"
		}
		return "null (" + cmp.Or(v.Reason, "no value") + ")"
	}
	s := quantityValue(v.Median.V, unit)
	if v.Lo.Valid && v.Hi.Valid && v.Median.V != 0 {
		s += fmt.Sprintf(" ±%.0f%%", 100*max(v.Hi.V-v.Median.V, v.Median.V-v.Lo.V)/math.Abs(v.Median.V))
	}
	return s
}

// quantityValue formats a value in its unit: ratios as percentages,
// seconds below one as milliseconds.
func quantityValue(x float64, unit string) string {
	switch {
	case unit == "ratio":
		return fmt.Sprintf("%.1f%%", 100*x)
	case unit == "s" && math.Abs(x) < 1:
		return format(1000*x) + " ms"
	}
	return format(x) + " " + unit
}

// pointsText is a shift of a 0–1 ratio in signed points, "+0.2".
func pointsText(n rate.Num) string {
	if !n.Valid {
		return "?"
	}
	return fmt.Sprintf("%+.1f", 100*n.V)
}

func signed(n rate.Num) string {
	if !n.Valid {
		return "?"
	}
	return fmt.Sprintf("%+.1f%%", 100*n.V)
}

// changeText is the change with its interval, "−10.0% [−10.2%, −9.8%]";
// a ratio compared in points in points, "+0.2 pt [+0.1, +0.3]".
func changeText(r *diff.Row) string {
	if r.Shift.Valid {
		return fmt.Sprintf("%s pt [%s, %s]", pointsText(r.Shift), pointsText(r.ShiftLo), pointsText(r.ShiftHi))
	}
	if !r.Change.Valid {
		return "—"
	}
	return fmt.Sprintf("%s [%s, %s]", signed(r.Change), signed(r.ChangeLo), signed(r.ChangeHi))
}

func pText(p rate.Num) string {
	switch {
	case !p.Valid:
		return "—"
	case p.V < 0.001:
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", p.V)
}

func targetText(r *diff.Row) string {
	if r.CandTarget != "" && r.CandTarget != r.Target {
		return r.Target + " ↔ " + r.CandTarget
	}
	return r.Target
}

// numOr is a load to 3 digits, "unknown" when null.
func numOr(n rate.Num) string {
	if !n.Valid {
		return "unknown"
	}
	return strconv.FormatFloat(n.V, 'g', 3, 64)
}

// relText is a relative change in %, "unknown" when null.
func relText(n rate.Num) string {
	if !n.Valid {
		return "unknown"
	}
	return strconv.FormatFloat(100*n.V, 'f', 1, 64) + " %"
}

// yesNo is a flag in words.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// DiffText writes the comparison as a terminal table in benchstat's
// spirit: the seams first, then per phase and target each quantity's
// baseline and candidate (median ± interval), the change with its
// interval, the p-value and the verdict.
func DiffText(w io.Writer, rep *diff.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("baseline:  %s (%d run%s)\ncandidate: %s (%d run%s)\n", strings.Join(rep.Baseline.Dirs, " "), rep.Baseline.Repeats, plural(rep.Baseline.Repeats),
		strings.Join(rep.Candidate.Dirs, " "), rep.Candidate.Repeats, plural(rep.Candidate.Repeats))
	p("samples: %s; alpha %g; intervals at %g; threshold %s\n", samplesText(rep), rep.Settings.Alpha, rep.Settings.Conf, thresholdText(rep.Settings.Thresholds))
	p("rule: %s\n", rep.Settings.Rule)
	if len(rep.Seams) > 0 {
		p("\nseams:\n")
		for _, s := range rep.Seams {
			mark := " "
			if s.Blocks {
				mark = "!"
			}
			p("%s %s\t%s\n", mark, s.Kind, oneLine(s.Detail))
		}
	}
	group := ""
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if g := r.Phase + "\x00" + targetText(r); g != group {
			group = g
			p("\n%s · %s\t baseline\t candidate\t change [%g%% interval]\t p\t verdict\n", oneLine(r.Phase), oneLine(targetText(r)), 100*rep.Settings.Conf)
		}
		p("  %s\t %s\t %s\t %s\t %s\t %s\n", r.Label, sideText(r.Baseline, r.Unit), sideText(r.Candidate, r.Unit), changeText(r), pText(r.P), rowVerdictText(r))
	}
	if len(rep.Rows) == 0 {
		p("\nno rows: nothing was compared (see the seams)\n")
	}
	for _, d := range rep.Sweeps {
		name := d.Target
		if name == "" {
			name = "fleet"
		}
		p("\nsweep on %s: level\t baseline offered\t candidate offered\t decode tok/s\t TTFT p99\t ITL p99\t saturated\n", oneLine(name))
		for _, l := range d.Levels {
			p("  %s\t %s\t %s\t %s\t %s\t %s\t %s → %s\n", oneLine(l.Baseline), numOr(l.BaseOffered), numOr(l.CandOffered),
				relText(l.Decode), relText(l.TTFTp99), relText(l.ITLp99), yesNo(l.BaseSaturated), yesNo(l.CandSaturated))
		}
		p("  knee: baseline %s; candidate %s\n", oneLine(d.Baseline.Knee.Text), oneLine(d.Candidate.Knee.Text))
		for _, b := range d.Boundaries {
			p("  SLO %s\n", oneLine(b.Text))
		}
	}
	// Why rows have no verdict, each reason once.
	var whys []string
	count := map[string]int{}
	for _, r := range rep.Rows {
		if r.Verdict != diff.Insufficient && r.Verdict != diff.Unlike {
			continue
		}
		w := r.Verdict + ": " + r.Why
		if r.Verdict == diff.Unlike {
			w, _, _ = strings.Cut(w, "; the change would be")
		}
		if count[w] == 0 {
			whys = append(whys, w)
		}
		count[w]++
	}
	if len(whys) > 0 {
		p("\n")
	}
	for k, w := range whys {
		if k == 6 {
			p("… and %d more reasons (--json has every row's)\n", len(whys)-k)
			break
		}
		p("%s (%d row%s)\n", oneLine(w), count[w], plural(count[w]))
	}
	if n := needText(rep); n != "" {
		p("%s\n", n)
	}
	word, _ := overall(rep)
	p("\n%s: %s\n", word, countsText(rep))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("render: write diff: %w", err)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func samplesText(rep *diff.Report) string {
	s := "non-overlapping blocks of each phase"
	if rep.Settings.Samples == "repeats" {
		s = "one value per run folder (the phase figure of each)"
	}
	if slices.ContainsFunc(rep.Rows, func(r diff.Row) bool { return r.Samples == diff.SamplesRequests }) {
		s += "; the client's latency and error rows: each request, pooled over a side's runs"
	}
	return s
}

func thresholdText(t diff.Thresholds) string {
	s := fmt.Sprintf("±%g%%", 100*t.Default)
	inPoints := map[string]bool{}
	for _, q := range diff.Quantities {
		if q.Points > 0 {
			inPoints[q.Key] = true
			if _, given := t.By[q.Key]; !given {
				s += fmt.Sprintf(", %s ±%g points", q.Key, 100*q.Points)
			}
		}
	}
	for _, k := range slices.Sorted(keys(t.By)) {
		unit := "%"
		if inPoints[k] {
			unit = " points"
		}
		s += fmt.Sprintf(", %s ±%g%s", k, 100*t.By[k], unit)
	}
	return s
}

func keys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// oneLine keeps a label on one line of the terminal.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// countsText counts the rows by verdict in words: worse and better
// always, the others when there are some, "7 worse, 2 better, 40 no
// change, 3 insufficient (of 52 rows)".
func countsText(rep *diff.Report) string {
	if len(rep.Rows) == 0 {
		return "no row was compared (see the seams)"
	}
	n := map[string]int{}
	for _, r := range rep.Rows {
		n[r.Verdict]++
	}
	parts := []string{fmt.Sprintf("%d worse", n[diff.Worse]), fmt.Sprintf("%d better", n[diff.Better])}
	for _, v := range []string{diff.Same, diff.Unlike, diff.Insufficient} {
		if n[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[v], verdictText(v)))
		}
	}
	return fmt.Sprintf("%s (of %d rows)", strings.Join(parts, ", "), len(rep.Rows))
}

// DiffMarkdown writes the comparison for a pull request: the verdict in a
// word and the counts in words first, then the table of the worse, better
// and unlike rows with their change (at most MaxDiffVisible lines
// visible), then the seams, the remaining rows and the method folded in
// <details>. Verdicts are words, never signs. Every string is escaped as
// text.
func DiffMarkdown(w io.Writer, rep *diff.Report) error {
	var b strings.Builder
	visible := 0
	line := func(s string) {
		b.WriteString(s)
		b.WriteByte('\n')
		visible++
	}
	rows := make([]*diff.Row, 0, len(rep.Rows))
	for i := range rep.Rows {
		rows = append(rows, &rep.Rows[i])
	}
	slices.SortStableFunc(rows, func(x, y *diff.Row) int { return cmp.Compare(rank(x.Verdict), rank(y.Verdict)) })
	blocking := 0
	for _, s := range rep.Seams {
		if s.Blocks {
			blocking++
		}
	}
	word, _ := overall(rep)
	line("## llmrec diff")
	line("")
	line(fmt.Sprintf("**Verdict: %s.** %s", mdInline(word), mdInline(countsText(rep))))
	line("")
	if n := needText(rep); n != "" {
		line(mdInline(n) + ".")
		line("")
	}
	head := "| phase | target | quantity | baseline | candidate | change [interval] | verdict |\n|---|---|---|---|---|---|---|"
	tableRow := func(r *diff.Row) string {
		return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", mdInline(r.Phase), mdInline(targetText(r)), mdInline(r.Label),
			mdInline(sideText(r.Baseline, r.Unit)), mdInline(sideText(r.Candidate, r.Unit)), mdInline(changeText(r)), mdInline(rowVerdictText(r)))
	}
	// Room for the table's head, the folded parts' summaries and a note.
	room := MaxDiffVisible - visible - 2 - 6
	if blocking > 0 {
		room -= 2 // the line under the table that names them
	}
	shown := 0
	for _, r := range rows {
		if rank(r.Verdict) > 2 || shown >= room {
			break
		}
		if shown == 0 {
			line(head)
			visible++
		}
		line(tableRow(r))
		shown++
	}
	if shown == 0 {
		line("No row is better, worse or unlike.")
	}
	if blocking > 0 {
		verb := "leaves"
		if blocking > 1 {
			verb = "leave"
		}
		line("")
		line(fmt.Sprintf("%d blocking seam%s %s rows without a verdict (see Seams below).", blocking, plural(blocking), verb))
	}
	if rest := len(rows) - shown; rest > 0 {
		line("")
		b.WriteString(fmt.Sprintf("<details><summary>%d more rows (no change, insufficient%s)</summary>\n\n", rest, map[bool]string{true: ", and more", false: ""}[shown >= room]))
		visible++
		b.WriteString(head + "\n")
		for _, r := range rows[shown:] {
			b.WriteString(tableRow(r) + "\n")
		}
		b.WriteString("\n</details>\n")
	}
	if len(rep.Seams) > 0 {
		b.WriteString(fmt.Sprintf("\n<details><summary>Seams: %d (%d blocking)</summary>\n\n", len(rep.Seams), blocking))
		visible++
		for _, s := range rep.Seams {
			mark := ""
			if s.Blocks {
				mark = " (blocking)"
			}
			b.WriteString(fmt.Sprintf("- **%s**%s: %s\n", mdInline(s.Kind), mark, mdInline(s.Detail)))
		}
		b.WriteString("\n</details>\n")
	}
	b.WriteString("\n<details><summary>Method</summary>\n\n")
	visible++
	b.WriteString(fmt.Sprintf("- Samples: %s; baseline %s (%d), candidate %s (%d).\n", samplesText(rep),
		mdInline(strings.Join(rep.Baseline.Dirs, " ")), rep.Baseline.Repeats, mdInline(strings.Join(rep.Candidate.Dirs, " ")), rep.Candidate.Repeats))
	b.WriteString(fmt.Sprintf("- Test: alpha %g, intervals at %g; thresholds %s.\n", rep.Settings.Alpha, rep.Settings.Conf, mdInline(thresholdText(rep.Settings.Thresholds))))
	b.WriteString("- Rule: " + mdInline(rep.Settings.Rule) + ".\n")
	for _, r := range rows {
		if r.Why != "" {
			b.WriteString(fmt.Sprintf("- %s, %s, %s: %s", mdInline(r.Phase), mdInline(targetText(r)), mdInline(r.Label), mdInline(r.Why)))
			for _, n := range r.Notes {
				b.WriteString("; " + mdInline(n))
			}
			b.WriteString("\n")
		}
	}
	for _, n := range rep.NotCompared {
		b.WriteString("- not compared: " + mdInline(n) + "\n")
	}
	b.WriteString("\n</details>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("render: write diff summary: %w", err)
	}
	return nil
}

// DiffReport lays the comparison out as a page that opens with its
// verdict: a banner with the verdict in a word and the counts in words,
// coloured by the worst verdict; the worse and better rows with their
// change; then the seams (the strip), the run facts, every row, and the
// charts: first those of the worse and better rows, then per aligned
// phase and target the rest, at most MaxDiffCharts, each axis from zero.
// Write it with HTML.
func DiffReport(rep *diff.Report) (Report, error) {
	r := Report{Title: "llmrec diff", Generator: rep.Generator}
	word, class := overall(rep)
	r.Banner = &Verdict{Topic: word, Class: class, Text: countsText(rep), Href: "#verdicts", Prov: rep.Settings.Rule}
	r.Header.Facts = []Fact{
		{Name: "baseline", Value: text(fmt.Sprintf("%s (%d run%s)", strings.Join(rep.Baseline.Dirs, " "), rep.Baseline.Repeats, plural(rep.Baseline.Repeats)))},
		{Name: "candidate", Value: text(fmt.Sprintf("%s (%d run%s)", strings.Join(rep.Candidate.Dirs, " "), rep.Candidate.Repeats, plural(rep.Candidate.Repeats)))},
		{Name: "samples", Value: text(samplesText(rep))},
		{Name: "test", Value: Cell{Text: fmt.Sprintf("alpha %g, intervals at %g, thresholds %s", rep.Settings.Alpha, rep.Settings.Conf, thresholdText(rep.Settings.Thresholds)), Prov: rep.Settings.Rule}},
	}
	if n := needText(rep); n != "" {
		r.Verdicts = append(r.Verdicts, Verdict{Topic: "phase length", Class: ClassWarn, Text: n})
	}
	for _, s := range rep.Seams {
		class := ClassWarn
		if s.Blocks {
			class = ClassFail
		}
		r.Verdicts = append(r.Verdicts, Verdict{Topic: "seam: " + s.Kind, Class: class, Text: s.Detail, Prov: "baseline: " + s.Baseline + "; candidate: " + s.Candidate})
	}
	if len(rep.Seams) == 0 {
		r.Verdicts = append(r.Verdicts, Verdict{Topic: "seams", Class: ClassOK, Text: "none: same engines, versions, models, gates and cadence; every phase on both sides"})
	}
	columns := []Column{{Title: "phase"}, {Title: "target"}, {Title: "quantity"},
		{Title: "baseline", Num: true, Prov: "the samples' median ± its interval"}, {Title: "candidate", Num: true, Prov: "the samples' median ± its interval"},
		{Title: "change [interval]", Num: true}, {Title: "p", Num: true}, {Title: "verdict"}}
	rows := make([]*diff.Row, 0, len(rep.Rows))
	for i := range rep.Rows {
		rows = append(rows, &rep.Rows[i])
	}
	slices.SortStableFunc(rows, func(x, y *diff.Row) int { return cmp.Compare(rank(x.Verdict), rank(y.Verdict)) })
	cells := func(x *diff.Row) []Cell {
		return []Cell{text(x.Phase), text(targetText(x)), text(x.Label),
			{Text: sideText(x.Baseline, x.Unit), Prov: figureProv(x.Baseline)}, {Text: sideText(x.Candidate, x.Unit), Prov: figureProv(x.Candidate)},
			{Text: changeText(x), Prov: x.Method}, text(pText(x.P)),
			{Text: rowVerdictText(x), Class: verdictClass(x.Verdict), Badge: true, Prov: strings.Join(append([]string{x.Why}, x.Notes...), "; ")}}
	}
	// The answer: the worse and better rows, worse first.
	changed := Table{Title: "Worse and better rows", Columns: columns}
	for _, x := range rows {
		if x.Verdict == diff.Worse || x.Verdict == diff.Better {
			changed.Rows = append(changed.Rows, cells(x))
		}
	}
	if len(changed.Rows) > 0 {
		r.Answer = changed
	}
	tbl := Table{Title: "Every row, by verdict", Summary: true, Columns: columns}
	for _, x := range rows {
		tbl.Rows = append(tbl.Rows, cells(x))
	}
	for _, n := range rep.NotCompared {
		tbl.Notes = append(tbl.Notes, "not compared: "+n)
	}
	order := chartOrder(rep.Charts)
	if len(order) > MaxDiffCharts {
		tbl.Notes = append(tbl.Notes, fmt.Sprintf("%d of %d charts drawn: those of worse, better and unlike rows first (the JSON has every row)", MaxDiffCharts, len(order)))
		order = order[:MaxDiffCharts]
	}
	r.Sections = append(r.Sections, Section{ID: "verdicts", Title: "Every row", Tables: []Table{tbl}})
	for _, d := range rep.Sweeps {
		for _, b := range d.Boundaries {
			if b.Lower {
				r.Verdicts = append(r.Verdicts, Verdict{Topic: "SLO boundary lower", Class: ClassFail, Text: b.Text, Href: "#sweeps"})
			}
		}
	}
	sw, ok, err := diffSweepSection(rep)
	if err != nil {
		return Report{}, err
	}
	if ok {
		r.Sections = append(r.Sections, sw)
	}
	// Worse and better rows' charts first, in their own section; the rest
	// by phase and target in the comparison's order.
	var first, rest []int
	for _, k := range order {
		if v := rep.Charts[k].Verdict; v == diff.Worse || v == diff.Better {
			first = append(first, k)
		} else {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	if len(first) > 0 {
		r.Sections = append(r.Sections, Section{ID: "changed-charts", Title: "Charts of the worse and better rows",
			Notes: []string{"Baseline and candidate overlaid, seconds from each phase's start, the axis from zero; each side's incidents marked."}})
	}
	groups := map[string]int{}
	for _, k := range append(first, rest...) {
		c := rep.Charts[k]
		where := c.Phase + " · " + c.Target
		if c.CandTarget != c.Target {
			where += " ↔ " + c.CandTarget
		}
		gi, title := 1, c.Quantity.Label+": "+where+" — "+chartVerdict(&c)
		if v := c.Verdict; v != diff.Worse && v != diff.Better {
			g := c.Phase + "\x00" + c.Target
			var ok bool
			if gi, ok = groups[g]; !ok {
				gi = len(r.Sections)
				groups[g] = gi
				r.Sections = append(r.Sections, Section{ID: ID("phase", fmt.Sprint(len(groups)), c.Phase, c.Target), Title: where,
					Notes: []string{"Baseline and candidate overlaid, seconds from each phase's start, the axis from zero; each side's incidents marked."}})
			}
			title = c.Quantity.Label + " — " + chartVerdict(&c)
		}
		var marks []Mark
		for _, s := range c.BaselineIncidents {
			marks = append(marks, Mark{From: s.From, To: s.To, Class: ClassWarn, Label: s.Label})
		}
		for _, s := range c.CandidateIncidents {
			marks = append(marks, Mark{From: s.From, To: s.To, Class: ClassFail, Label: s.Label})
		}
		ts := TimeSeries{ID: ID("chart", fmt.Sprint(k), c.Quantity.Key), Title: title,
			Unit: c.Quantity.Unit, Percent: c.Quantity.Unit == "ratio", Relative: true, Height: 220, YMin: rate.Some(0),
			Series: []Series{{Name: "baseline", Points: points(c.Baseline)}, {Name: "candidate", Points: points(c.Candidate)}}, Marks: marks}
		ch, err := ts.Chart()
		if err != nil {
			return Report{}, err
		}
		r.Sections[gi].Charts = append(r.Sections[gi].Charts, ch)
	}
	return r, nil
}

// chartOrder is the order charts are drawn in, MaxDiffCharts first: the
// worse and better rows' (worse first), then the rest by verdict rank,
// taking each rank's charts a phase and target at a time in turn, so that
// a budget too small for all still gives every level a chart before any
// gets a second (the last, highest load level got none).
func chartOrder(charts []diff.Chart) []int {
	byRank := map[int][][]int{} // rank → groups of chart indexes, in order
	groupOf := map[string]int{}
	for i, c := range charts {
		k := rank(c.Verdict)
		g := fmt.Sprint(k) + "\x00" + c.Phase + "\x00" + c.Target
		gi, ok := groupOf[g]
		if !ok {
			gi = len(byRank[k])
			groupOf[g] = gi
			byRank[k] = append(byRank[k], nil)
		}
		byRank[k][gi] = append(byRank[k][gi], i)
	}
	out := make([]int, 0, len(charts))
	for _, k := range slices.Sorted(maps.Keys(byRank)) {
		groups := byRank[k]
		if k <= rank(diff.Better) {
			// Worse and better: all of them, in the comparison's order.
			for _, g := range groups {
				out = append(out, g...)
			}
			continue
		}
		for turn := 0; ; turn++ {
			took := false
			for _, g := range groups {
				if turn < len(g) {
					out, took = append(out, g[turn]), true
				}
			}
			if !took {
				break
			}
		}
	}
	return out
}

// chartVerdict is a chart's verdict in words with its row's change,
// "worse, -10.0%" or "no change, +0.2 points".
func chartVerdict(c *diff.Chart) string {
	switch {
	case !c.Change.Valid:
		return verdictText(c.Verdict)
	case c.Points:
		return verdictText(c.Verdict) + ", " + pointsText(c.Change) + " points"
	}
	return verdictText(c.Verdict) + ", " + signed(c.Change)
}

func figureProv(v diff.Value) string {
	s := fmt.Sprintf("n=%d", v.N)
	if v.Figure.Valid {
		s += fmt.Sprintf("; phase figure %s from %s", format(v.Figure.V), v.Source)
	} else if v.Reason != "" {
		s += "; phase figure null: " + v.Reason
	}
	return s
}

func points(ps []diff.Point) []Point {
	out := make([]Point, len(ps))
	for i, p := range ps {
		out[i] = Point{T: p.T, Cell: p.Cell}
	}
	return out
}
