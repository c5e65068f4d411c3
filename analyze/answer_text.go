package analyze

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
)

// answerHeads are the text table's column heads, one per AnswerFigures.
var answerHeads = []string{"decode tok/s", "prompt tok/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "ITL mean", "e2e mean", "max waiting", "max KV"}

// writeAnswer writes the answer first: per target and for the fleet, the
// status and the busy figures, unknown where there is no figure; then
// each row's reason.
func (r *Result) writeAnswer(w io.Writer) {
	// Named phases answer, each level its own row.
	if len(r.Answer.Phases) > 0 {
		r.writePhaseAnswer(w)
		return
	}
	if len(r.Answer.Rows) == 0 {
		return
	}
	fmt.Fprintln(w, "answer (busy: each target's steady phases, from its own counters; unknown is never 0):")
	rows := [][]string{append(append([]string{"target", "status"}, answerHeads...), "incidents")}
	for _, row := range r.Answer.Rows {
		name, figs := "fleet", &phases.Figures{Figures: r.FleetBusy.Figures}
		if t := r.target(row.Target); t != nil {
			name, figs = row.Target, &t.Summary.Busy
		}
		cells := []string{name, row.Status}
		for _, f := range AnswerFigures {
			cells = append(cells, answerText(figs, f))
		}
		rows = append(rows, append(cells, strconv.Itoa(row.Incidents)))
	}
	minWidth := []int{14, 16}
	for range answerHeads {
		minWidth = append(minWidth, 12)
	}
	writeColumns(w, rows, 2, append(minWidth, 9))
	for _, row := range r.Answer.Rows {
		name := row.Target
		if name == "" {
			name = "fleet"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", name, row.Status, row.Reason)
	}
	fmt.Fprintln(w)
}

// answerText is one figure as the answer prints it: tokens/s and counts
// as numbers, latencies in ms (a quantile as its bucket lets it: ">edge",
// "≤edge", flags), ratios in %, "unknown" when null.
func answerText(figs *phases.Figures, name string) string {
	f, ok := figs.Get(name)
	if !ok || !f.Value.Valid {
		return "unknown"
	}
	v := f.Value.V
	switch {
	case strings.Contains(name, "_seconds__"):
		return f.Bucket.Text(v, func(x float64) string { return strconv.FormatFloat(1000*x, 'f', 1, 64) + " ms" })
	case name == "kv_cache_usage_ratio__max":
		return strconv.FormatFloat(100*v, 'f', 0, 64) + " %"
	}
	if v >= 100 || v == float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// writePhaseAnswer writes the answer of named phases: a row per phase and
// target in time order, with its concurrency, status and figures; then
// the reason of each row that is not ok.
func (r *Result) writePhaseAnswer(w io.Writer) {
	fmt.Fprintln(w, "answer (per named phase in time order, each target from its own counters over the phase; conc = mean running + waiting, client = the client's in flight; unknown is never 0):")
	head := append([]string{"phase", "target", "status", "conc", "client"}, answerHeads...)
	rows := [][]string{append(head, "incidents")}
	for i := range r.Answer.Phases {
		row := &r.Answer.Phases[i]
		figs := r.PhaseFigures(row)
		cells := []string{row.Phase, row.Target, row.Status, concText(row.Concurrency), concText(row.ClientConcurrency)}
		for _, f := range AnswerFigures {
			cells = append(cells, answerText(figs, f))
		}
		rows = append(rows, append(cells, strconv.Itoa(row.Incidents)))
	}
	writeColumns(w, rows, 3, nil)
	for _, row := range r.Answer.Phases {
		if row.Status != StatusOK {
			fmt.Fprintf(w, "  %s on %s %s: %s\n", row.Phase, row.Target, row.Status, row.Reason)
		}
	}
	fmt.Fprintln(w)
}

// writeColumns writes rows as a table indented by two spaces, each column
// as wide as its widest cell and at least minWidth[j]: the first left
// columns left-aligned (names), the others right-aligned (figures).
func writeColumns(w io.Writer, rows [][]string, left int, minWidth []int) {
	width := slices.Clone(minWidth)
	for _, cells := range rows {
		for j, c := range cells {
			if j >= len(width) {
				width = append(width, 0)
			}
			width[j] = max(width[j], utf8.RuneCountInString(c))
		}
	}
	for _, cells := range rows {
		fmt.Fprint(w, " ")
		for j, c := range cells {
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(c))
			if j < left {
				fmt.Fprint(w, " "+c+pad)
			} else {
				fmt.Fprint(w, " "+pad+c)
			}
		}
		fmt.Fprintln(w)
	}
}

// concText is a concurrency as the answer prints it: "—" when unknown.
func concText(c rate.Num) string {
	if !c.Valid {
		return "—"
	}
	return strconv.FormatFloat(c.V, 'f', 1, 64)
}

// PhaseFigures are the figures of a phase row: its target's in its phase's
// entry of the phases list; empty when there is none.
func (r *Result) PhaseFigures(row *PhaseRow) *phases.Figures {
	for i := range r.Output.Phases {
		m := &r.Output.Phases[i]
		if m.Kind != phases.KindNamed || m.Name != row.Phase || m.Start != row.Start || m.Source != row.Source {
			continue
		}
		for k := range m.Targets {
			if m.Targets[k].Target == row.Target {
				return &m.Targets[k]
			}
		}
	}
	return &phases.Figures{}
}
