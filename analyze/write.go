package analyze

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// WriteJSON writes the result as the JSON document json.Marshal would
// produce, one poll at a time, so a long recording's document is never
// held in memory twice.
func (r *Result) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	head, err := json.Marshal(resultHead{resultAlias: (*resultAlias)(r)})
	if err != nil {
		return fmt.Errorf("encode analysis: %w", err)
	}
	bw.Write(head[:len(head)-1])
	bw.WriteString(`,"targets":[`)
	for i := range r.Targets {
		if i > 0 {
			bw.WriteByte(',')
		}
		t := &r.Targets[i]
		th, err := json.Marshal(targetHead{targetAlias: (*targetAlias)(t)})
		if err != nil {
			return fmt.Errorf("encode target %s: %w", t.Name, err)
		}
		bw.Write(th[:len(th)-1])
		bw.WriteString(`,"polls":[`)
		if t.spool != nil {
			if err := t.spool.copyTo(bw); err != nil {
				return err
			}
		}
		for k := range t.Polls {
			if k > 0 {
				bw.WriteByte(',')
			}
			p, err := json.Marshal(&t.Polls[k])
			if err != nil {
				return fmt.Errorf("encode target %s poll %d: %w", t.Name, k, err)
			}
			bw.Write(p)
		}
		bw.WriteString("]}")
	}
	bw.WriteString("]}\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write analysis: %w", err)
	}
	return nil
}

// Close releases the files of spooled polls (Options.Spool); the result
// writes no polls afterwards. The caller removes the spool folder.
func (r *Result) Close() error {
	var first error
	for i := range r.Targets {
		if s := r.Targets[i].spool; s != nil {
			if err := s.close(); err != nil && first == nil {
				first = err
			}
			r.Targets[i].spool = nil
		}
	}
	return first
}

// The heads are the result and a target without their last field (targets,
// polls): a shallower nil field shadows the embedded one and is omitted.
type (
	resultAlias Result
	resultHead  struct {
		*resultAlias
		Targets *int `json:"targets,omitempty"`
	}
	targetAlias Target
	targetHead  struct {
		*targetAlias
		Polls *int `json:"polls,omitempty"`
	}
)

// WriteSummary writes a short text summary: per input its sessions and
// recoveries, per target its engine, what the engine said about itself
// (the queue's ceiling first), polls, headline medians with their windows,
// nulls by reason and unknown series; then the run's findings (incidents,
// load edges and how each span settled, rates per minute against their
// caps, the fleet and its seams, drift, energy), then the problems.
func (r *Result) WriteSummary(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, in := range r.Inputs {
		fmt.Fprintf(bw, "run folder %s: %d session(s), %d segment(s), %d live journal(s)",
			in.Dir, len(in.Sessions), in.Segments, in.Journals)
		if in.Crashed > 0 {
			fmt.Fprintf(bw, ", %d crashed session journal(s) read in memory", in.Crashed)
		}
		fmt.Fprintln(bw)
		for _, rc := range in.Recovered {
			fmt.Fprintf(bw, "  recovered %s: %s\n", rc.Name(), rc)
		}
		if len(in.Foreign) > 0 {
			fmt.Fprintf(bw, "  not llmrec's, not read: %s\n", strings.Join(in.Foreign, ", "))
		}
	}
	g := &r.Gates
	span := seconds(g.Span.V, true)
	if g.SpanByKind {
		span = "each target's interval for every-step counters, " + span + " for the others"
		if len(g.CompletionSpans) > 0 {
			span = "each target's interval for every-step counters, the request duration for per-request counters where measured, " +
				seconds(g.Span.V, true) + " for the others"
		}
	}
	floor := seconds(g.MinWindow.V, g.MinWindow.Valid)
	if len(g.Floors) > 0 {
		floor += " (half the interval for targets polled faster than every " + seconds(2*g.MinWindow.V, true) + ")"
	}
	fmt.Fprintf(bw, "gates: span %s, floor %s, ceiling %s, jump %s, stale %s\n",
		span, floor,
		gate(g.CeilingFactor, "%g × span"), gate(g.JumpFactor, "%g × the last rate (at least "+num(g.JumpFloor.V, g.JumpFloor.Valid)+"/s)"),
		gate(g.StaleFraction, "above %g of the window"))
	r.writeAnswer(bw)
	r.writeSweep(bw)
	for i := range r.Targets {
		t := &r.Targets[i]
		s := &t.Summary
		fmt.Fprintf(bw, "\ntarget %s: engine %s (%s), %d polls", t.Name, t.Engine, detected(t), s.Polls)
		if s.Polls > 0 {
			first := time.Unix(0, int64(s.First*1e9)).UTC()
			last := time.Unix(0, int64(s.Last*1e9)).UTC()
			fmt.Fprintf(bw, ", %s .. %s (%s)", first.Format(time.RFC3339), last.Format(time.RFC3339), last.Sub(first).Round(time.Second))
		}
		fmt.Fprintf(bw, "\n  scrapes: %s\n", counts(t.Scrapes))
		if t.Imported != nil {
			fmt.Fprintf(bw, "  %s\n", t.Imported.Text())
		}
		if len(t.OtherEndpoints) > 0 {
			fmt.Fprintf(bw, "  other endpoints: %s\n", counts(t.OtherEndpoints))
		}
		if v := t.Notes["engine"]; v != "" {
			fmt.Fprintf(bw, "  variant: %s\n", v)
		}
		if v := t.Notes["interval"]; v != "" {
			fmt.Fprintf(bw, "  interval: %s\n", v)
		}
		writeCompletionSpan(bw, g, t.Name)
		// What the engine said about itself comes before the numbers: the
		// queue's ceiling first.
		for _, line := range r.Findings.TargetLines(t.Name) {
			fmt.Fprintf(bw, "  %s\n", line)
		}
		writeBusy(bw, &s.Busy)
		fmt.Fprintf(bw, "  whole recording (idle included), medians of the published values:\n")
		for _, h := range s.Headlines {
			if h.Values == 0 && onlyNotExported(h.Nulls) {
				continue
			}
			med := "—"
			if h.Median.Valid {
				med = strconv.FormatFloat(h.Median.V, 'g', 5, 64)
			}
			win := "as read"
			switch {
			case h.Window.Valid:
				win = "over " + seconds(h.Window.V, true) + " windows"
			case h.Values == 0:
				win = ""
			}
			fmt.Fprintf(bw, "  %-36s median %-10s %-20s %d values", h.Cell, med, win, h.Values)
			if len(h.Nulls) > 0 {
				fmt.Fprintf(bw, "; null: %s", counts(h.Nulls))
			}
			fmt.Fprintln(bw)
		}
		if len(s.Refusals) > 0 {
			fmt.Fprintf(bw, "  refused by the gates (headline cells): %s\n", counts(s.Refusals))
		}
		if len(s.Normal) > 0 {
			fmt.Fprintf(bw, "  of which normal (the first poll's no_baseline, holds released at the next poll): %s\n", counts(s.Normal))
		}
		for _, c := range slices.Sorted(maps.Keys(s.Withheld)) {
			fmt.Fprintf(bw, "  withheld where a reader needed it: %s: %s\n", c, counts(s.Withheld[c]))
		}
		for _, m := range t.MistypedSeries {
			fmt.Fprintf(bw, "  mistyped: %s is typed counter but is a %s (%s): no rate, no edge, its fall no restart\n", m.Family, m.Kind, m.Source)
		}
		if len(t.UnknownSeries) > 0 {
			fmt.Fprintf(bw, "  unknown series (%d): %s\n", len(t.UnknownSeries), strings.Join(t.UnknownSeries, " "))
		}
	}
	r.Findings.WriteText(bw)
	writePhases(bw, &r.Output)
	if len(r.Problems) > 0 {
		fmt.Fprintf(bw, "\n%d file(s) could not be read; the rest was analysed:\n", len(r.Problems))
		for _, p := range r.Problems {
			kind := p.Kind
			if p.Kind == ProblemPartial {
				kind = fmt.Sprintf("partial, %d rows before the damage analysed", p.RowsRead)
			}
			// Errors name their file already, as errors should.
			if strings.Contains(p.Error, p.File) {
				fmt.Fprintf(bw, "  %s (%s)\n", p.Error, kind)
				continue
			}
			fmt.Fprintf(bw, "  %s: %s (%s)\n", p.File, p.Error, kind)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

func detected(t *Target) string {
	switch t.DetectedBy {
	case "":
		return "no engine recognised"
	case "hint":
		return "configured"
	}
	return "detected from its series"
}

func onlyNotExported(m map[string]int) bool {
	for k := range m {
		if k != "not_exported" {
			return false
		}
	}
	return true
}

// counts renders a count map by decreasing count, then name.
func counts(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func seconds(v float64, ok bool) string {
	if !ok {
		return "off"
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " s"
}

// gate renders a gate's factor, or "off".
func gate(n rate.Num, format string) string {
	if !n.Valid {
		return "off"
	}
	return fmt.Sprintf(format, n.V)
}

func num(v float64, ok bool) string {
	if !ok {
		return "off"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// writeCompletionSpan says the span chosen for a target's per-request
// counters, and from what.
func writeCompletionSpan(w io.Writer, g *Gates, target string) {
	i := slices.IndexFunc(g.CompletionSpans, func(c CompletionSpan) bool { return c.Target == target })
	if i < 0 {
		return
	}
	c := &g.CompletionSpans[i]
	how := "the mean request duration (Δ" + strings.Join(c.Series, " ÷ Δ") + ")"
	if c.How == engine.SpanFromLittle {
		how = "Little's law (mean " + c.Series[0] + " ÷ completions, the polls at which " + c.Series[1] + " moved)"
	}
	if !c.Span.Valid {
		fmt.Fprintf(w, "  per-request counters: span %s throughout (fewer than two completions to measure a request's duration by %s)\n",
			seconds(g.Span.V, true), how)
		return
	}
	fmt.Fprintf(w, "  per-request counters: span %s at the end (%s – %s over %d polls, bounds %s – %s) from %s over the last %s; %s before\n",
		seconds(c.Span.V, true), seconds(c.Min.V, true), seconds(c.Max.V, true), c.Polls, seconds(c.Bounds[0], true),
		seconds(c.Bounds[1], true), how, seconds(c.Window, true), seconds(g.Span.V, true))
}
