package render

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
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

// verdictText is a verdict in words with a sign for the eye.
func verdictText(v string) string {
	switch v {
	case diff.Better:
		return "✅ better"
	case diff.Worse:
		return "❌ worse"
	case diff.Same:
		return "~"
	case diff.Unlike:
		return "⛔ unlike"
	case diff.Insufficient:
		return "❔ insufficient"
	}
	return v
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

func signed(n rate.Num) string {
	if !n.Valid {
		return "?"
	}
	return fmt.Sprintf("%+.1f%%", 100*n.V)
}

// changeText is the change with its interval, "−10.0% [−10.2%, −9.8%]".
func changeText(r *diff.Row) string {
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
		p("  %s\t %s\t %s\t %s\t %s\t %s\n", r.Label, sideText(r.Baseline, r.Unit), sideText(r.Candidate, r.Unit), changeText(r), pText(r.P), verdictText(r.Verdict))
	}
	if len(rep.Rows) == 0 {
		p("\nno rows: nothing was compared (see the seams)\n")
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
	p("\n%s\n", countsText(rep))
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
	for _, k := range slices.Sorted(keys(t.By)) {
		s += fmt.Sprintf(", %s ±%g%%", k, 100*t.By[k])
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

// countsText counts the rows by verdict.
func countsText(rep *diff.Report) string {
	n := map[string]int{}
	for _, r := range rep.Rows {
		n[r.Verdict]++
	}
	return fmt.Sprintf("%d worse, %d better, %d ~, %d unlike, %d insufficient (of %d rows)", n[diff.Worse], n[diff.Better], n[diff.Same],
		n[diff.Unlike], n[diff.Insufficient], len(rep.Rows))
}

// DiffMarkdown writes the comparison for a pull request: the verdict table
// first (worse, better and unlike rows; at most MaxDiffVisible lines
// visible), then the seams, the remaining rows and the method folded in
// <details>. Every string is escaped as text.
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
	line("## llmrec diff")
	line("")
	line(mdInline(countsText(rep)))
	line("")
	if blocking > 0 {
		verb := "leaves"
		if blocking > 1 {
			verb = "leave"
		}
		line(fmt.Sprintf("⛔ %d seam%s %s rows without a verdict (see Seams below).", blocking, plural(blocking), verb))
		line("")
	}
	head := "| phase | target | quantity | baseline | candidate | change [interval] | verdict |\n|---|---|---|---|---|---|---|"
	tableRow := func(r *diff.Row) string {
		return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", mdInline(r.Phase), mdInline(targetText(r)), mdInline(r.Label),
			mdInline(sideText(r.Baseline, r.Unit)), mdInline(sideText(r.Candidate, r.Unit)), mdInline(changeText(r)), mdInline(verdictText(r.Verdict)))
	}
	// Room for the table's head, the folded parts' summaries and a note.
	room := MaxDiffVisible - visible - 2 - 6
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
	if rest := len(rows) - shown; rest > 0 {
		line("")
		b.WriteString(fmt.Sprintf("<details><summary>%d more rows (~, insufficient%s)</summary>\n\n", rest, map[bool]string{true: ", and more", false: ""}[shown >= room]))
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
				mark = "⛔ "
			}
			b.WriteString(fmt.Sprintf("- %s**%s**: %s\n", mark, mdInline(s.Kind), mdInline(s.Detail)))
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

// DiffReport lays the comparison out as a page: the seams as the verdict
// strip, the verdict table, then per aligned phase and target each
// quantity's baseline and candidate overlaid on a phase-relative axis with
// both runs' incidents. Write it with HTML.
func DiffReport(rep *diff.Report) (Report, error) {
	r := Report{Title: "llmrec diff", Generator: rep.Generator}
	r.Header.Facts = []Fact{
		{Name: "baseline", Value: text(fmt.Sprintf("%s (%d run%s)", strings.Join(rep.Baseline.Dirs, " "), rep.Baseline.Repeats, plural(rep.Baseline.Repeats)))},
		{Name: "candidate", Value: text(fmt.Sprintf("%s (%d run%s)", strings.Join(rep.Candidate.Dirs, " "), rep.Candidate.Repeats, plural(rep.Candidate.Repeats)))},
		{Name: "samples", Value: text(samplesText(rep))},
		{Name: "test", Value: Cell{Text: fmt.Sprintf("alpha %g, intervals at %g, thresholds %s", rep.Settings.Alpha, rep.Settings.Conf, thresholdText(rep.Settings.Thresholds)), Prov: rep.Settings.Rule}},
		{Name: "rows", Value: text(countsText(rep))},
	}
	for _, s := range rep.Seams {
		class := ClassWarn
		if s.Blocks {
			class = ClassFail
		}
		r.Verdicts = append(r.Verdicts, Verdict{Topic: "seam: " + s.Kind, Class: class, Text: s.Detail, Prov: "baseline: " + s.Baseline + "; candidate: " + s.Candidate})
	}
	if len(r.Verdicts) == 0 {
		r.Verdicts = append(r.Verdicts, Verdict{Topic: "seams", Class: ClassOK, Text: "none: same engines, versions, models, gates and cadence; every phase on both sides"})
	}
	tbl := Table{Title: "Verdicts", Summary: true, Columns: []Column{{Title: "phase"}, {Title: "target"}, {Title: "quantity"},
		{Title: "baseline", Num: true, Prov: "the samples' median ± its interval"}, {Title: "candidate", Num: true, Prov: "the samples' median ± its interval"},
		{Title: "change [interval]", Num: true}, {Title: "p", Num: true}, {Title: "verdict"}}}
	rows := make([]*diff.Row, 0, len(rep.Rows))
	for i := range rep.Rows {
		rows = append(rows, &rep.Rows[i])
	}
	slices.SortStableFunc(rows, func(x, y *diff.Row) int { return cmp.Compare(rank(x.Verdict), rank(y.Verdict)) })
	for _, x := range rows {
		tbl.Rows = append(tbl.Rows, []Cell{text(x.Phase), text(targetText(x)), text(x.Label),
			{Text: sideText(x.Baseline, x.Unit), Prov: figureProv(x.Baseline)}, {Text: sideText(x.Candidate, x.Unit), Prov: figureProv(x.Candidate)},
			{Text: changeText(x), Prov: x.Method}, text(pText(x.P)),
			{Text: verdictText(x.Verdict), Class: verdictClass(x.Verdict), Prov: strings.Join(append([]string{x.Why}, x.Notes...), "; ")}})
	}
	for _, n := range rep.NotCompared {
		tbl.Notes = append(tbl.Notes, "not compared: "+n)
	}
	r.Sections = append(r.Sections, Section{ID: "verdicts", Title: "Verdicts", Tables: []Table{tbl}})
	// The charts of the rows a reader looks at first, at most MaxDiffCharts.
	order := make([]int, len(rep.Charts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(rank(rep.Charts[x].Verdict), rank(rep.Charts[y].Verdict)) })
	if len(order) > MaxDiffCharts {
		tbl.Notes = append(tbl.Notes, fmt.Sprintf("%d of %d charts drawn: those of worse, better and unlike rows first (the JSON has every row)", MaxDiffCharts, len(order)))
		order = order[:MaxDiffCharts]
		slices.Sort(order)
	}
	r.Sections[0].Tables[0] = tbl
	groups := map[string]int{}
	for _, k := range order {
		c := rep.Charts[k]
		g := c.Phase + "\x00" + c.Target
		gi, ok := groups[g]
		if !ok {
			gi = len(r.Sections)
			groups[g] = gi
			title := c.Phase + " · " + c.Target
			if c.CandTarget != c.Target {
				title += " ↔ " + c.CandTarget
			}
			r.Sections = append(r.Sections, Section{ID: ID("phase", fmt.Sprint(len(groups)), c.Phase, c.Target), Title: title,
				Notes: []string{"Baseline and candidate overlaid, seconds from each phase's start; each side's incidents marked."}})
		}
		var marks []Mark
		for _, s := range c.BaselineIncidents {
			marks = append(marks, Mark{From: s.From, To: s.To, Class: ClassWarn, Label: s.Label})
		}
		for _, s := range c.CandidateIncidents {
			marks = append(marks, Mark{From: s.From, To: s.To, Class: ClassFail, Label: s.Label})
		}
		ts := TimeSeries{ID: ID("chart", fmt.Sprint(k), c.Quantity.Key), Title: c.Quantity.Label + " — " + verdictText(c.Verdict),
			Unit: c.Quantity.Unit, Percent: c.Quantity.Unit == "ratio", Relative: true, Height: 220,
			Series: []Series{{Name: "baseline", Points: points(c.Baseline)}, {Name: "candidate", Points: points(c.Candidate)}}, Marks: marks}
		ch, err := ts.Chart()
		if err != nil {
			return Report{}, err
		}
		r.Sections[gi].Charts = append(r.Sections[gi].Charts, ch)
	}
	return r, nil
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
