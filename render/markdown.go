package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxMarkdown is the most bytes Markdown writes, and so the most
// characters: a GitHub comment holds 65,536.
const MaxMarkdown = 60000

// mdReserve is kept free for the truncation note.
const mdReserve = 800

// mdClip is the most bytes one piece of text (a title, a cell) may take in
// the summary: one hostile label cannot eat the budget.
const mdClip = 2000

// Markdown writes the summary of the report as GitHub-flavoured Markdown:
// the header, the verdicts, and the tables marked Summary under the titles
// of their sections, each value's provenance as a footnote. Charts and the
// appendix are left to the page. It writes at most MaxMarkdown bytes; what
// does not fit is left out whole (a table is cut between rows) and a note
// at the end says what. Every string of r is escaped so that it shows as
// text.
func Markdown(w io.Writer, r Report) error {
	d := &mdDoc{limit: MaxMarkdown - mdReserve, foot: map[string]int{}}
	d.block(fmt.Sprintf("# %s\n\n", mdInline(r.Title)), "the title")
	if r.Generator != "" {
		d.block(fmt.Sprintf("Written by %s. Charts, the full tables and the appendix are in the HTML report.\n\n", mdInline(r.Generator)), "the generator line")
	}
	if len(r.Header.Facts) > 0 {
		var items []mdItem
		for _, f := range r.Header.Facts {
			items = append(items, mdItem{text: fmt.Sprintf("- **%s**: %s", mdInline(f.Name), mdInline(f.Value.Text)), prov: f.Value.Prov})
		}
		d.list(items, "the run header")
	}
	for _, t := range r.Header.Tables {
		d.table(t)
	}
	if len(r.Verdicts) > 0 {
		d.block("## Verdicts\n\n", "the verdicts")
		var items []mdItem
		for _, v := range r.Verdicts {
			items = append(items, mdItem{text: fmt.Sprintf("- %s **%s**: %s", badge(v.Class), mdInline(v.Topic), mdInline(v.Text)), prov: v.Prov})
		}
		d.list(items, "the verdicts")
	}
	for _, s := range r.Sections {
		d.section(s, 2)
	}
	if d.cut {
		d.note()
	}
	_, err := io.WriteString(w, d.b.String())
	if err != nil {
		return fmt.Errorf("render: write summary: %w", err)
	}
	return nil
}

// badge is a verdict's class in words, with a sign for the eye.
func badge(class string) string {
	switch class {
	case ClassOK:
		return "✅ ok"
	case ClassWarn:
		return "⚠️ warn"
	case ClassFail:
		return "❌ fail"
	case ClassRefused:
		return "⛔ refused"
	case ClassUnknown:
		return "❔ unknown"
	}
	return "ℹ️"
}

// mdDoc is a summary being written within its budget.
type mdDoc struct {
	b       strings.Builder
	limit   int
	cut     bool     // something did not fit: everything after is left out
	omitted []string // what was left out, in order
	foot    map[string]int
	nfoot   int
}

func (d *mdDoc) fits(n int) bool { return !d.cut && d.b.Len()+n <= d.limit }

// block writes s whole, or leaves it out and everything after it.
func (d *mdDoc) block(s, what string) bool {
	if !d.fits(len(s)) {
		d.leaveOut(what)
		return false
	}
	d.b.WriteString(s)
	return true
}

func (d *mdDoc) leaveOut(what string) {
	d.cut = true
	d.omitted = append(d.omitted, what)
}

// footnotes returns the references of provs: existing ones reused, new ones
// numbered after d.nfoot (not yet committed), and the definitions of the new
// ones.
func (d *mdDoc) footnotes(provs []string, pending map[string]int) (refs []string, defs []string) {
	for _, p := range provs {
		if p == "" {
			refs = append(refs, "")
			continue
		}
		n, ok := d.foot[p]
		if !ok {
			n, ok = pending[p]
		}
		if !ok {
			n = d.nfoot + len(pending) + 1
			pending[p] = n
			defs = append(defs, fmt.Sprintf("[^%d]: %s\n", n, mdInline(p)))
		}
		refs = append(refs, fmt.Sprintf("[^%d]", n))
	}
	return refs, defs
}

func (d *mdDoc) commit(pending map[string]int) {
	for p, n := range pending {
		d.foot[p] = n
	}
	d.nfoot += len(pending)
}

type mdItem struct{ text, prov string }

// list writes list items, each with its footnote, then the footnotes' text.
func (d *mdDoc) list(items []mdItem, what string) {
	pending := map[string]int{}
	var b strings.Builder
	var defs []string
	for _, it := range items {
		refs, ds := d.footnotes([]string{it.prov}, pending)
		b.WriteString(it.text + refs[0] + "\n")
		defs = append(defs, ds...)
	}
	b.WriteString("\n")
	if len(defs) > 0 {
		b.WriteString(strings.Join(defs, "") + "\n")
	}
	if d.block(b.String(), what) {
		d.commit(pending)
	}
}

// section writes the titles and summary tables of s and its subsections,
// if any of them has one.
func (d *mdDoc) section(s Section, level int) {
	if !hasSummary(s) {
		return
	}
	var b strings.Builder
	b.WriteString(strings.Repeat("#", min(level, 6)) + " " + mdInline(s.Title) + "\n\n")
	for _, n := range s.Notes {
		b.WriteString(mdInline(n) + "\n\n")
	}
	if !d.block(b.String(), "section "+clipText(s.Title, 60)) {
		return
	}
	for _, t := range s.Tables {
		if t.Summary {
			d.table(t)
		}
	}
	for _, sub := range s.Sections {
		d.section(sub, level+1)
	}
}

func hasSummary(s Section) bool {
	for _, t := range s.Tables {
		if t.Summary {
			return true
		}
	}
	for _, sub := range s.Sections {
		if hasSummary(sub) {
			return true
		}
	}
	return false
}

// table writes t as a GitHub table, row by row while rows fit, with the
// footnotes of its cells after it.
func (d *mdDoc) table(t Table) {
	what := "table " + clipText(t.Title, 60)
	if d.cut {
		d.leaveOut(what)
		return
	}
	var head strings.Builder
	if t.Title != "" {
		head.WriteString("**" + mdInline(t.Title) + "**\n\n")
	}
	provs := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		provs[i] = c.Prov
	}
	pending := map[string]int{}
	refs, defs := d.footnotes(provs, pending)
	head.WriteString("|")
	for i, c := range t.Columns {
		head.WriteString(" " + mdInline(c.Title) + refs[i] + " |")
	}
	head.WriteString("\n|")
	for _, c := range t.Columns {
		if c.Num {
			head.WriteString("---:|")
		} else {
			head.WriteString("---|")
		}
	}
	head.WriteString("\n")
	size := func(body int, defs []string) int {
		n := body + 1 // the blank line after the table
		for _, s := range defs {
			n += len(s)
		}
		if len(defs) > 0 {
			n++
		}
		return n
	}
	if !d.fits(size(head.Len(), defs)) {
		d.leaveOut(what)
		return
	}
	body := head.String()
	written := 0
	for _, row := range t.Rows {
		provs := make([]string, len(row))
		for i, c := range row {
			provs[i] = c.Prov
		}
		rowPending := make(map[string]int, len(pending))
		for k, v := range pending {
			rowPending[k] = v
		}
		refs, rowDefs := d.footnotes(provs, rowPending)
		var line strings.Builder
		line.WriteString("|")
		for i, c := range row {
			line.WriteString(" " + mdInline(c.Text) + refs[i] + " |")
		}
		line.WriteString("\n")
		allDefs := append(append([]string(nil), defs...), rowDefs...)
		if !d.fits(size(len(body)+line.Len(), allDefs)) {
			break
		}
		body += line.String()
		pending, defs = rowPending, allDefs
		written++
	}
	d.b.WriteString(body)
	if written < len(t.Rows) {
		// Cut between rows: say so under the table.
		d.b.WriteString(fmt.Sprintf("\n*%s of %s rows shown.*\n", thousands(written), thousands(len(t.Rows))))
		d.leaveOut(fmt.Sprintf("%s rows of %s", thousands(len(t.Rows)-written), what))
	}
	d.b.WriteString("\n")
	if len(defs) > 0 {
		d.b.WriteString(strings.Join(defs, "") + "\n")
	}
	d.commit(pending)
}

// note writes the truncation note: what was left out.
func (d *mdDoc) note() {
	names := d.omitted
	more := 0
	if len(names) > 5 {
		names, more = names[:5], len(names)-5
	}
	var b strings.Builder
	b.WriteString("---\n\n> **Summary truncated** at " + thousands(MaxMarkdown) + " characters. Left out: ")
	for i, n := range names {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(mdInline(clipText(n, 80)))
	}
	if more > 0 {
		b.WriteString(fmt.Sprintf("; and %d more", more))
	}
	b.WriteString(". The HTML report has everything.\n")
	d.b.WriteString(b.String())
}

// clipText shortens s to at most n bytes, on a rune boundary, with "…".
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// mdInline escapes s so that GitHub shows it as text on one line: HTML
// special characters as entities, Markdown punctuation with a backslash,
// line breaks as spaces.
func mdInline(s string) string {
	s = clipText(s, mdClip)
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\\', '`', '*', '_', '[', ']', '|', '~', '#', '$':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			if r < 0x20 || r == 0x7f {
				b.WriteString("\\u" + strconv.FormatInt(int64(r), 16))
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
