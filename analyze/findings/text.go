package findings

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// TargetLines are the facts of one target, one sentence each, the queue's
// ceiling first: what a summary prints above the target's numbers.
func (f *Findings) TargetLines(target string) []string {
	var out []string
	for _, tf := range f.Facts {
		if tf.Target != target {
			continue
		}
		for _, x := range tf.Facts {
			out = append(out, x.Text)
		}
	}
	return out
}

// WriteText writes the findings as text: incidents, edges and how each
// span settled, rollups and caps, the fleet, its seams, drift and energy.
func (f *Findings) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\nincidents (%d):\n", len(f.Incidents))
	if len(f.Incidents) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, in := range f.Incidents {
		who := string(in.Target)
		if who == "" {
			who = "every target"
		}
		when := stampNum(in.T)
		if in.Start.Valid {
			when = fmt.Sprintf("%s .. %s (%s)", stamp(in.Start.V), stamp(in.End.V), secs(in.End.V-in.Start.V))
		}
		fmt.Fprintf(w, "  %-12s %-12s %s: %s\n", in.Kind, who, when, in.Detail)
		if in.Counterfactual != "" {
			fmt.Fprintf(w, "      %s\n", in.Counterfactual)
		}
	}
	judged := 0
	for _, e := range f.Edges {
		if e.Judged {
			judged++
		}
	}
	fmt.Fprintf(w, "\nload edges (%d, %d judged):\n", len(f.Edges), judged)
	for _, e := range f.Edges {
		fmt.Fprintf(w, "  %-12s %-5s %s  %s\n", e.Target, e.Kind, stamp(e.T), edgeText(&e))
	}
	for _, s := range f.Settle {
		fmt.Fprintf(w, "  %s\n", s.Text)
	}
	if len(f.Rollups) > 0 {
		fmt.Fprintln(w, "\nrates per minute (max of the minute means; naive Δ/Δt between polls; caps):")
	}
	for _, r := range f.Rollups {
		fmt.Fprintf(w, "  %-12s %-34s max %s (1 m means up to %s), naive max %s", r.Target, r.Cell, numText(r.Max),
			numText(r.MinuteMeanMax), numText(r.NaiveMax))
		if r.Cap.Valid {
			fmt.Fprintf(w, "; above the %s cap: %d published, %d naive", num(r.Cap.V), r.AboveCap, r.NaiveAboveCap)
		}
		fmt.Fprintln(w)
	}
	fl := &f.Fleet
	if len(fl.Targets) > 1 {
		s := &fl.Summary
		fmt.Fprintf(w, "\nfleet of %d engine targets (%s): %d ticks, all answered %d, fewest live %d; decode sum median %s, max %s tok/s; waiting max %s; fullest KV %s\n",
			len(fl.Targets), strings.Join(fl.Targets, ", "), s.Points, s.AllLive, s.MinLive, numText(s.DecodeMedian),
			numText(s.DecodeMax), numText(s.WaitingMax), numText(s.KVMax))
	}
	if len(f.Seams) > 0 {
		fmt.Fprintln(w, "seams (adding these engines up compares different things):")
	}
	for _, s := range f.Seams {
		fmt.Fprintf(w, "  %s: %s\n      %s\n", s.ID, groupsText(s.Targets), s.Note)
	}
	for _, d := range f.Drift {
		if len(d.Missing)+len(d.Renamed)+len(d.Lookalikes) == 0 {
			continue
		}
		ver := "version unknown"
		if d.Version != "" {
			ver = d.Version + " from " + d.VersionSource
		}
		fmt.Fprintf(w, "\ndrift of %s (%s %s):\n", d.Target, d.Engine, ver)
		for _, m := range d.Missing {
			fmt.Fprintf(w, "  missing %s (read from %s)", m.Cell, strings.Join(m.Series, " or "))
			if m.Note != "" {
				fmt.Fprintf(w, ": %s", m.Note)
			}
			fmt.Fprintln(w)
		}
		for _, r := range d.Renamed {
			fmt.Fprintf(w, "  renamed %s → %s, published %s: %s\n", r.Old, r.New, r.Published, r.Note)
		}
		for _, l := range d.Lookalikes {
			fmt.Fprintf(w, "  %s looks like %s\n", l.Series, l.Like)
		}
	}
	if e := f.Energy; e != nil {
		fmt.Fprintf(w, "\nenergy (%s of %s): %s J over %s busy, %s tokens: %s J/token\n", e.Method,
			strings.Join(e.Sources, ", "), numText(e.Joules), secs(e.Busy), numText(e.Tokens), numText(e.JoulesPerToken))
		for _, n := range e.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}

// edgeText is one edge's line: its level, whether it was judged and how
// each span settled.
func edgeText(e *Edge) string {
	var b strings.Builder
	fmt.Fprintf(&b, "level %s (from %s)", numText(e.Level), numText(e.From))
	if !e.Judged {
		fmt.Fprintf(&b, "; not judged: %s", e.Why)
		return b.String()
	}
	for _, s := range append([]EdgeSpan{e.EdgeSpan}, e.Counterfactual...) {
		fmt.Fprintf(&b, "; %s: ", secs(s.Span))
		if s.SettlePoll == nil {
			b.WriteString("unsettled")
		} else {
			fmt.Fprintf(&b, "settle poll %d", *s.SettlePoll)
		}
		if s.LnErrPoll2.Valid {
			fmt.Fprintf(&b, ", |ln| %.3f at poll 2", s.LnErrPoll2.V)
		}
		if s.ResidualPoll2.Valid {
			fmt.Fprintf(&b, ", %.0f %% of the old level at poll 2", 100*s.ResidualPoll2.V)
		}
	}
	return b.String()
}

func groupsText(g map[string][]string) string {
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %s", k, strings.Join(g[k], ", "))
	}
	return strings.Join(parts, " | ")
}

func numText(n rate.Num) string {
	if !n.Valid {
		return "—"
	}
	return num(n.V)
}

func stampNum(n rate.Num) string {
	if !n.Valid {
		return "—"
	}
	return stamp(n.V)
}
