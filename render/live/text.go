// Package live draws a frame of package analyze/live: as plain text for a
// terminal or a pipe (with ANSI colour on request), and as the self-updating
// page of llmrec top --listen. It computes nothing: every number is the
// frame's, and a missing one prints the reason it is missing.
package live

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/live"
	"github.com/llmrec/llmrec/analyze/rate"
)

// TextOptions configure [Text].
type TextOptions struct {
	// Color adds ANSI colours: states, KV bands, the saturating badge.
	Color bool
	// Width is the line length incident details are cut to (0: 120).
	Width int
	// Incidents is how many of the latest incidents are listed (0: 12).
	Incidents int
}

const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
)

// Text writes one frame.
func Text(w io.Writer, f *live.Frame, o TextOptions) error {
	if o.Width <= 0 {
		o.Width = 120
	}
	if o.Incidents <= 0 {
		o.Incidents = 12
	}
	var b strings.Builder
	paint := func(color, s string) string {
		if !o.Color || color == "" {
			return s
		}
		return color + s + ansiReset
	}
	status := "finished"
	if f.Recording {
		status = "recording"
	}
	phase := "none"
	if f.Phase != "" {
		phase = f.Phase
	}
	fmt.Fprintf(&b, "%s  %s  %s at %s (%s in)  phase: %s  window %gs\n", paint(ansiBold, "llmrec top"), f.Dir, status,
		clock(f.T), dur(f.T-f.Start), phase, f.Window)
	b.WriteString(levelText(&f.Level) + "\n")
	head := []string{"TARGET", "ENGINE", "STATE", "DECODE/s", "PROMPT/s", "TTFT", "ITL", "RUN", "WAIT", "KV", "SCRAPE p99", "MISSED", "FAILED"}
	rows := [][]string{head}
	colors := [][]string{make([]string, len(head))}
	for i := range f.Targets {
		t := &f.Targets[i]
		kv := pct(t.KV)
		if t.KVBand == live.BandWarn || t.KVBand == live.BandSaturated {
			kv += " " + t.KVBand
		}
		wait := num(t.Waiting, "%.0f")
		if t.Saturating {
			wait += " saturating"
		}
		rows = append(rows, []string{t.Name, t.Engine, t.State, num(t.Decode, "%.0f"), num(t.Prompt, "%.0f"),
			secs(t.TTFT, t.TTFTOf), secs(t.ITL, t.ITLOf), num(t.Running, "%.0f"), wait, kv,
			numSecs(t.ScrapeP99), fmt.Sprint(t.Missed), fmt.Sprint(t.Failed)})
		c := make([]string, len(head))
		c[2] = stateColor(t.State)
		c[8] = map[bool]string{true: ansiYellow}[t.Saturating]
		c[9] = map[string]string{live.BandWarn: ansiYellow, live.BandSaturated: ansiRed}[t.KVBand]
		colors = append(colors, c)
	}
	if fl := f.Fleet; fl != nil {
		rows = append(rows, []string{"fleet", fmt.Sprintf("%d/%d live", fl.Live, fl.Total), "",
			fleetNum(fl.Decode, fl.DecodeOf, fl.Total), fleetNum(fl.Prompt, fl.PromptOf, fl.Total), "", "",
			plainNum(fl.Running), plainNum(fl.Waiting), plainPct(fl.KVMax) + " max", "", "", ""})
		colors = append(colors, make([]string, len(head)))
	}
	widths := make([]int, len(head))
	for _, r := range rows {
		for j, c := range r {
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	for i, r := range rows {
		var line strings.Builder
		for j, c := range r {
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
			if j > 0 {
				line.WriteString("  ")
			}
			line.WriteString(paint(colors[i][j], c) + pad)
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	// Latency cells name what they are: p50 unless an engine only has a mean.
	for i := range f.Targets {
		t := &f.Targets[i]
		if strings.HasSuffix(t.TTFTOf, engine.SuffixMean) || strings.HasSuffix(t.ITLOf, engine.SuffixMean) {
			fmt.Fprintf(&b, "  %s: TTFT is %s, ITL %s (no p50 exported)\n", t.Name, t.TTFTOf, t.ITLOf)
		}
	}
	if l := legend(f); l != "" {
		b.WriteString(cut("no value: "+l, o.Width) + "\n")
	}
	b.WriteString("\ndecode tokens/s, last polls (· no value)\n")
	nw := 0
	for i := range f.Targets {
		nw = max(nw, utf8.RuneCountInString(f.Targets[i].Name))
	}
	for i := range f.Targets {
		t := &f.Targets[i]
		fmt.Fprintf(&b, "  %-*s  %s  %s\n", nw, t.Name, Spark(t.Spark), sparkMax(t.Spark))
	}
	for i := range f.Targets {
		t := &f.Targets[i]
		if t.State == live.StateDown || t.State == live.StateStalled {
			fmt.Fprintf(&b, "%s %s: %s\n", paint(ansiRed, t.State), t.Name, t.Why)
		}
	}
	fmt.Fprintf(&b, "\nincidents so far: %d\n", len(f.Incidents))
	from := max(0, len(f.Incidents)-o.Incidents)
	if from > 0 {
		fmt.Fprintf(&b, "  (%d earlier not shown)\n", from)
	}
	for i := from; i < len(f.Incidents); i++ {
		in := &f.Incidents[i]
		line := fmt.Sprintf("  %-21s  %-13s %-12s %s", when(in), in.Kind, who(in), in.Detail)
		b.WriteString(cut(line, o.Width) + "\n")
	}
	for _, p := range f.Problems {
		b.WriteString(cut(fmt.Sprintf("problem: %s: %s (%s)", p.File, p.Error, p.Kind), o.Width) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func stateColor(s string) string {
	switch s {
	case live.StateBusy:
		return ansiGreen
	case live.StateDown, live.StateStalled:
		return ansiRed
	}
	return ""
}

// num prints a cell's value, or why it has none.
func num(c engine.Cell, format string) string {
	if !c.Value.Valid {
		return why(c)
	}
	return fmt.Sprintf(format, c.Value.V)
}

// why is a null cell's reason, as analyze gives it.
func why(c engine.Cell) string {
	if c.Reason == "" {
		return "unknown"
	}
	return c.Reason
}

func pct(c engine.Cell) string {
	if !c.Value.Valid {
		return why(c)
	}
	return fmt.Sprintf("%.1f%%", c.Value.V*100)
}

func secs(c engine.Cell, of string) string {
	if !c.Value.Valid {
		return why(c)
	}
	s := ms(c.Value.V)
	if strings.HasSuffix(of, engine.SuffixMean) {
		s += " mean"
	}
	return s
}

func ms(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0fms", v*1000)
	}
	return fmt.Sprintf("%.2fs", v)
}

func numSecs(n rate.Num) string {
	if !n.Valid {
		return "unknown"
	}
	return ms(n.V)
}

func plainNum(n rate.Num) string {
	if !n.Valid {
		return "unknown"
	}
	return fmt.Sprintf("%.0f", n.V)
}

func plainPct(n rate.Num) string {
	if !n.Valid {
		return "unknown"
	}
	return fmt.Sprintf("%.1f%%", n.V*100)
}

// levelText is the sweep level line.
func levelText(l *live.Level) string {
	if l.Name == "" {
		return "level: none (" + l.Reason + ")"
	}
	offered := "unknown (" + l.Reason + ")"
	if l.Offered.Valid {
		offered = fmt.Sprintf("%.1f (mean running + waiting over its %d polls so far, summed over %d target(s))", l.Offered.V, l.Polls, l.OfferedOf)
	}
	return fmt.Sprintf("level %d/%d %s since %s: offered %s", l.Index, l.Of, l.Name, clock(l.Start), offered)
}

// fleetNum is a fleet sum with the engines it covers when not all.
func fleetNum(n rate.Num, of, total int) string {
	s := plainNum(n)
	if of != total {
		s += fmt.Sprintf(" (%d/%d)", of, total)
	}
	return s
}

var bars = []rune("▁▂▃▄▅▆▇█")

// Spark draws values as a sparkline scaled to their maximum; a missing
// value is "·".
func Spark(xs []rate.Num) string {
	hi := 0.0
	for _, x := range xs {
		if x.Valid {
			hi = max(hi, x.V)
		}
	}
	var b strings.Builder
	for _, x := range xs {
		switch {
		case !x.Valid:
			b.WriteRune('·')
		case hi <= 0:
			b.WriteRune(bars[0])
		default:
			k := int(math.Round(max(0, x.V) / hi * float64(len(bars)-1)))
			b.WriteRune(bars[min(k, len(bars)-1)])
		}
	}
	return b.String()
}

func sparkMax(xs []rate.Num) string {
	hi, ok := 0.0, false
	for _, x := range xs {
		if x.Valid {
			hi, ok = max(hi, x.V), true
		}
	}
	if !ok {
		return ""
	}
	return fmt.Sprintf("max %.0f", hi)
}

// when is an incident's time: its moment, or its start and end.
func when(in *findings.Incident) string {
	if in.T.Valid {
		return clock(in.T.V)
	}
	if in.Start.Valid && in.End.Valid {
		return clock(in.Start.V) + "–" + clock(in.End.V)
	}
	if in.Start.Valid {
		return clock(in.Start.V) + "–"
	}
	return "unknown"
}

func who(in *findings.Incident) string {
	if in.Target != "" {
		return string(in.Target)
	}
	if len(in.Targets) > 0 {
		return fmt.Sprintf("%d targets", len(in.Targets))
	}
	return "all"
}

// clock is a Unix time in UTC to the tenth of a second.
func clock(t float64) string {
	if t == 0 {
		return "unknown"
	}
	return time.Unix(0, int64(t*1e9)).UTC().Format("15:04:05.0")
}

func dur(s float64) string {
	if s < 0 {
		return "unknown"
	}
	return (time.Duration(s*10) * time.Second / 10).String()
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// reasonWords say what a null cell's reason means, for the legend under
// the table.
var reasonWords = map[string]string{
	engine.ReasonNotExported: "the engine publishes no such series",
	engine.ReasonDisabled:    "the engine says the feature is off",
	rate.ReasonAbsent:        "not in the last poll",
	rate.ReasonEmpty:         "nothing new in the window",
	rate.ReasonNoBaseline:    "a first sample, nothing to difference",
	rate.ReasonReset:         "the counter restarted",
	rate.ReasonCeiling:       "the window is too long to trust",
	rate.ReasonFloor:         "the window is too short",
	rate.ReasonStale:         "the samples' timing is too uncertain",
	rate.ReasonJump:          "a jump held until confirmed",
	rate.ReasonEdges:         "bucket bounds differ",
}

// legend names the reasons of the null cells in the table, in the order
// they first appear, with their words.
func legend(f *live.Frame) string {
	var seen []string
	for i := range f.Targets {
		t := &f.Targets[i]
		for _, c := range []engine.Cell{t.Decode, t.Prompt, t.TTFT, t.ITL, t.Running, t.Waiting, t.KV} {
			if r := c.Reason; !c.Value.Valid && r != "" && !slices.Contains(seen, r) {
				seen = append(seen, r)
			}
		}
	}
	parts := make([]string, 0, len(seen))
	for _, r := range seen {
		if w, ok := reasonWords[r]; ok {
			r += " = " + w
		}
		parts = append(parts, r)
	}
	return strings.Join(parts, "; ")
}
