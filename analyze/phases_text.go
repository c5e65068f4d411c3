package analyze

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/phases"
)

// busyCells are the figures the summary shows first, in order: the busy
// counterparts of the headline cells.
var busyCells = []string{
	engine.DecodeTokensPerSecond, engine.PromptTokensPerSecond, engine.PromptTokensComputedPerSecond,
	engine.RequestsFinishedPerSecond, "requests_running__mean", "requests_running__max",
	"requests_waiting__mean", "requests_waiting__max", "kv_cache_usage_ratio__max",
	engine.TTFT + "__p50", engine.TTFT + "__p90", engine.TTFT + "__p99", engine.TPOT + engine.SuffixMean,
	engine.PerRequestDecodeTokensPerSecond, engine.PrefixCacheHitRatio,
}

// writeBusy writes a target's headline: its figures over its steady phases.
func writeBusy(w io.Writer, b *phases.Figures) {
	bd := &b.Bounds
	if bd.Reason == phases.ReasonNoSteady {
		fmt.Fprintf(w, "  busy: no steady phase found; the whole recording's medians below are all there is\n")
		return
	}
	away := ""
	if bd.Away > 0 {
		away = fmt.Sprintf(", %s of them away from the target set", time.Duration(bd.Away*1e9).Round(time.Second))
	}
	fmt.Fprintf(w, "  busy (%d steady phase(s), %s differenced over %s, %d process(es)%s), from the engine's own counters:\n",
		len(bd.Windows), pct(bd.Coverage.V, bd.Coverage.Valid), time.Duration(bd.Seconds*1e9).Round(time.Second), bd.Processes, away)
	for _, name := range busyCells {
		f, ok := b.Get(name)
		// A quantity the engine does not publish is left out here, as in the medians.
		if !ok || (!f.Value.Valid && f.Reason == engine.ReasonNotExported) {
			continue
		}
		fmt.Fprintf(w, "    %-36s %s\n", name, figureText(&f))
	}
}

// figureText is a figure's value (or reason), its bucket and its published
// median.
func figureText(f *phases.Figure) string {
	var b strings.Builder
	if f.Value.Valid {
		b.WriteString(f.Bucket.Text(f.Value.V, func(v float64) string { return strconv.FormatFloat(v, 'g', 5, 64) }))
	} else {
		b.WriteString("— (" + f.Reason + ")")
	}
	if !f.Bucket.IsZero() {
		b.WriteString(" in bucket " + f.Bucket.Interval(func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }))
	}
	if p := f.Published; p != nil && p.P50.Valid {
		fmt.Fprintf(&b, "; published median %s over %d polls", strconv.FormatFloat(p.P50.V, 'g', 5, 64), p.Values)
	}
	if f.Disagrees != "" {
		b.WriteString(" [disagrees]")
	}
	return b.String()
}

func pct(v float64, ok bool) string {
	if !ok {
		return "—"
	}
	return strconv.FormatFloat(100*v, 'f', 0, 64) + " %"
}

// writePhases writes the phases, one line each with its decode figure, and
// the figures their published values disagree with.
func writePhases(w io.Writer, o *phases.Output) {
	if len(o.Phases) > 0 {
		fmt.Fprintf(w, "\nphases (%d; figures from the engines' own counters across each):\n", len(o.Phases))
	}
	for _, m := range o.Phases {
		where := m.Target
		if where == "" {
			where = "all targets"
		}
		fmt.Fprintf(w, "  %-14s %-7s %-12s %s .. %s (%s)", m.Name, m.Kind, where, clock(m.Start), clock(m.End), seconds(m.Duration(), true))
		for _, tf := range m.Targets {
			f, _ := tf.Get(engine.DecodeTokensPerSecond)
			fmt.Fprintf(w, "; %s decode %s", tf.Target, figureText(&f))
		}
		if m.Fleet != nil {
			for _, f := range m.Fleet.Figures {
				if f.Name == engine.DecodeTokensPerSecond && f.Value.Valid {
					fmt.Fprintf(w, "; fleet decode %s", strconv.FormatFloat(f.Value.V, 'g', 5, 64))
				}
			}
		}
		fmt.Fprintln(w)
	}
	if len(o.Disagreements) > 0 {
		fmt.Fprintf(w, "\nphase figures the published values disagree with by more than 10 %% (%d):\n", len(o.Disagreements))
		for _, d := range o.Disagreements {
			fmt.Fprintf(w, "  %s\n", d.Detail)
		}
	}
	for _, p := range o.Problems {
		fmt.Fprintf(w, "  phases: %s\n", p)
	}
}

func clock(t float64) string {
	return time.Unix(0, int64(t*1e9)).UTC().Format("15:04:05.000")
}
