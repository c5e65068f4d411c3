package render

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Prov returns the provenance text of a cell: its source, the window it was
// computed over ("Δ2.0s"), whether it was derived, why it is null, its
// severity and its notes. For example
//
//	computed:Δvllm:generation_tokens_total/Δt over Δ2.0s (derived)
//	refused (stale): computed:Δvllm:generation_tokens_total/Δt over Δ0.4s (derived)
//	vllm:kv_cache_usage_perc (read; severity warn)
func Prov(c rate.Cell) string {
	var b strings.Builder
	if !c.Value.Valid {
		reason := c.Reason
		if reason == "" {
			reason = rate.ReasonAbsent
		}
		b.WriteString("refused (")
		b.WriteString(reason)
		b.WriteString("): ")
	}
	src := c.Source
	if src == "" {
		src = "no source"
	}
	b.WriteString(src)
	if c.Window.Valid {
		b.WriteString(" over ")
		b.WriteString(Window(c.Window.V))
	}
	b.WriteString(" (")
	if c.Derived {
		b.WriteString("derived")
	} else {
		b.WriteString("read")
	}
	if c.Severity != "" {
		b.WriteString("; severity ")
		b.WriteString(c.Severity)
	}
	b.WriteString(")")
	if len(c.Notes) > 0 {
		b.WriteString(" — ")
		b.WriteString(strings.Join(c.Notes, "; "))
	}
	return b.String()
}

// Window formats a window of seconds as "Δ2.0s": one decimal below 100 s,
// whole seconds above.
func Window(seconds float64) string {
	// Not a number: say so rather than print NaN.
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return "Δ?"
	}
	if math.Abs(seconds) < 100 {
		return "Δ" + strconv.FormatFloat(seconds, 'f', 1, 64) + "s"
	}
	return "Δ" + strconv.FormatFloat(seconds, 'f', 0, 64) + "s"
}

// ClassOf returns the class of a cell: refused when it is null, its
// severity when it has one, none otherwise.
func ClassOf(c rate.Cell) string {
	switch {
	case !c.Value.Valid && (c.Reason == "" || c.Reason == rate.ReasonAbsent):
		return ClassUnknown
	case !c.Value.Valid:
		return ClassRefused
	case c.Severity == rate.SeverityOK:
		return ClassOK
	case c.Severity == rate.SeverityWarn:
		return ClassWarn
	case c.Severity == rate.SeverityFail:
		return ClassFail
	}
	return ClassNone
}

// CellOf returns the table cell of a rate cell: the value formatted by
// format (for example func(v float64) string { return fmt.Sprintf("%.1f", v) }),
// or "—" with the reason when the value is null; its provenance and class.
func CellOf(c rate.Cell, format func(float64) string) Cell {
	text := "—"
	if c.Value.Valid {
		text = format(c.Value.V)
	} else if c.Reason != "" {
		text = "— (" + c.Reason + ")"
	}
	prov := Prov(c)
	// A quantile read from buckets prints as its bucket lets it (">edge",
	// "≤edge", flags) and names the bucket.
	if c.Value.Valid && !c.Bucket.IsZero() {
		text = c.Bucket.Text(c.Value.V, format)
		prov += "; fell in bucket " + c.Bucket.Interval(format)
	}
	return Cell{Text: text, Prov: prov, Class: ClassOf(c)}
}

// ID returns a deterministic DOM id made of parts: each part lower-cased
// with every run of characters other than a-z and 0-9 turned into one "-",
// joined by "-". When that changed any part, a hash of the parts is appended
// so that names that differ only in punctuation get different ids. The id
// always starts with a letter.
func ID(parts ...string) string {
	var b strings.Builder
	changed := false
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('-')
		}
		dash := false
		for _, r := range p {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
				b.WriteRune(r)
				dash = false
			case r >= 'A' && r <= 'Z':
				b.WriteRune(r + 'a' - 'A')
				dash, changed = false, true
			default:
				changed = true
				if !dash {
					b.WriteByte('-')
					dash = true
				}
			}
		}
	}
	s := b.String()
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "x" + s
	}
	if changed {
		h := fnv.New32a()
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
		s = fmt.Sprintf("%s-%08x", strings.TrimRight(s, "-"), h.Sum32())
	}
	return s
}

// validID reports whether id can be used as a DOM id and CSS selector as is.
func validID(id string) bool {
	if id == "" || id[0] < 'a' || id[0] > 'z' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
