package analyze

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/phases"
)

// answerHeads are the text table's column heads, one per AnswerFigures.
var answerHeads = []string{"decode tok/s", "prompt tok/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "ITL mean", "e2e mean", "max waiting", "max KV"}

// writeAnswer writes the answer first: per target and for the fleet, the
// status and the busy figures, unknown where there is no figure; then
// each row's reason.
func (r *Result) writeAnswer(w io.Writer) {
	if len(r.Answer.Rows) == 0 {
		return
	}
	fmt.Fprintf(w, "answer (busy: each target's steady phases, from its own counters; unknown is never 0):\n  %-14s %-16s", "target", "status")
	for _, h := range answerHeads {
		fmt.Fprintf(w, " %12s", h)
	}
	fmt.Fprintf(w, " %9s\n", "incidents")
	for _, row := range r.Answer.Rows {
		name, figs := "fleet", &phases.Figures{Figures: r.FleetBusy.Figures}
		if row.Target != "" {
			name = row.Target
			for i := range r.Targets {
				if r.Targets[i].Name == row.Target {
					figs = &r.Targets[i].Summary.Busy
				}
			}
		}
		fmt.Fprintf(w, "  %-14s %-16s", name, row.Status)
		for _, f := range AnswerFigures {
			fmt.Fprintf(w, " %12s", answerText(figs, f))
		}
		fmt.Fprintf(w, " %9d\n", row.Incidents)
	}
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
