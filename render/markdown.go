package render

import (
	"fmt"
	"html"
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

// Markdown writes the summary of the report as GitHub-flavoured Markdown
// for a pull request. Visible: the title, the answer table with its
// legend of windows, and the findings, one line each. Everything else (the
// run header, and the tables marked Summary under the titles of their
// sections) is folded, one <details> per section. Provenance is the
// answer's legend of windows, and for the rest the HTML report's hovers:
// no footnotes. A table without rows is not written (its notes are).
//
// It writes at most MaxMarkdown bytes; what does not fit is left out whole
// (a table is cut between rows) and a note at the end says what. Every
// string of r is data and is escaped (see mdInline) so that it shows as
// text: it cannot break a table, start a heading, or make a link, an
// image, a mention or any HTML.
func Markdown(w io.Writer, r Report) error {
	d := &mdDoc{limit: MaxMarkdown - mdReserve}
	d.block(fmt.Sprintf("# %s\n\n", mdInline(r.Title)), "the title")
	gen := "Charts, every table and each number's provenance (source, window, derived) on hover are in the HTML report."
	if r.Generator != "" {
		gen = fmt.Sprintf("Written by %s. %s", mdInline(r.Generator), gen)
	}
	d.block(gen+"\n\n", "the generator line")
	if v := r.Banner; v != nil {
		d.block(fmt.Sprintf("**%s**: %s\n\n", mdInline(v.Topic), mdInline(v.Text)), "the banner")
	}
	if len(r.Answer.Columns) > 0 {
		d.table(r.Answer)
	}
	if len(r.Verdicts) > 0 {
		var b strings.Builder
		b.WriteString("**Findings**\n\n")
		for _, v := range r.Verdicts {
			fmt.Fprintf(&b, "- %s **%s**: %s\n", badge(v.Class), mdInline(v.Topic), mdInline(v.Text))
		}
		b.WriteString("\n")
		d.block(b.String(), "the findings")
	}
	if len(r.Header.Facts)+len(r.Header.Tables) > 0 {
		d.open("The run: recording, sessions, span, gates, targets")
		var b strings.Builder
		for _, f := range r.Header.Facts {
			fmt.Fprintf(&b, "- **%s**: %s\n", mdInline(f.Name), mdInline(f.Value.Text))
		}
		if b.Len() > 0 {
			d.block(b.String()+"\n", "the run header")
		}
		for _, t := range r.Header.Tables {
			d.table(t)
		}
		d.close()
	}
	for _, s := range r.Sections {
		if !hasSummary(s) {
			continue
		}
		if d.open(s.Title) {
			d.body(s, 3)
			d.close()
		}
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

// badge is a verdict's class in a plain word, as the diff page's badges
// say it: a sign would be read differently by each terminal and reader.
func badge(class string) string {
	switch class {
	case ClassOK:
		return "ok"
	case ClassWarn:
		return "warn"
	case ClassFail:
		return "fail"
	case ClassRefused:
		return "refused"
	case ClassUnknown:
		return "unknown"
	}
	return "note"
}

// mdDoc is a summary being written within its budget.
type mdDoc struct {
	b       strings.Builder
	limit   int
	cut     bool     // something did not fit: everything after is left out
	omitted []string // what was left out, in order
	folded  bool     // inside a <details>
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

// open starts a folded part whose summary line is title. The summary line
// is an HTML block, where Markdown is not read: title is HTML-escaped.
func (d *mdDoc) open(title string) bool {
	d.folded = d.block("<details><summary>"+htmlInline(title)+"</summary>\n\n", "section "+clipText(title, 60))
	return d.folded
}

// close ends the folded part, if one is open; mdReserve keeps room for it.
// The next part's <details> line follows at once: the two lines are one
// HTML block, and the fold takes one visible line.
func (d *mdDoc) close() {
	if d.folded {
		d.b.WriteString("</details>\n")
		d.folded = false
	}
}

// section writes the title of s, then its body, if s or a subsection of
// it has a summary table.
func (d *mdDoc) section(s Section, level int) {
	if !hasSummary(s) {
		return
	}
	if !d.block(strings.Repeat("#", min(level, 6))+" "+mdInline(s.Title)+"\n\n", "section "+clipText(s.Title, 60)) {
		return
	}
	d.body(s, level+1)
}

// body writes the notes and summary tables of s, then its subsections
// under headings of level.
func (d *mdDoc) body(s Section, level int) {
	var b strings.Builder
	for _, n := range s.Notes {
		b.WriteString(mdInline(n) + "\n\n")
	}
	if b.Len() > 0 && !d.block(b.String(), "the notes of "+clipText(s.Title, 60)) {
		return
	}
	for _, t := range s.Tables {
		if t.Summary {
			d.table(t)
		}
	}
	for _, sub := range s.Sections {
		d.section(sub, level)
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

// table writes t as a GitHub table, row by row while rows fit, then its
// notes. A table without rows is only its title and notes, if any.
func (d *mdDoc) table(t Table) {
	what := "table " + clipText(t.Title, 60)
	if d.cut {
		d.leaveOut(what)
		return
	}
	var notes strings.Builder
	for _, n := range t.Notes {
		notes.WriteString(mdInline(n) + "\n\n")
	}
	// No rows: no table, only what the notes say.
	if len(t.Rows) == 0 {
		if notes.Len() > 0 {
			d.block("**"+mdInline(t.Title)+"**: "+notes.String(), what)
		}
		return
	}
	var head strings.Builder
	if t.Title != "" {
		head.WriteString("**" + mdInline(t.Title) + "**\n\n")
	}
	head.WriteString("|")
	for _, c := range t.Columns {
		head.WriteString(" " + mdInline(c.Title) + " |")
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
	if !d.fits(head.Len() + 1 + notes.Len()) {
		d.leaveOut(what)
		return
	}
	body := head.String()
	written := 0
	for _, row := range t.Rows {
		var line strings.Builder
		line.WriteString("|")
		for _, c := range row {
			line.WriteString(" " + mdInline(c.Text) + " |")
		}
		line.WriteString("\n")
		if !d.fits(len(body) + line.Len() + 1 + notes.Len()) {
			break
		}
		body += line.String()
		written++
	}
	d.b.WriteString(body)
	d.b.WriteString("\n")
	if written < len(t.Rows) {
		// Cut between rows: say so under the table.
		d.b.WriteString(fmt.Sprintf("*%s of %s rows shown.*\n\n", thousands(written), thousands(len(t.Rows))))
		d.leaveOut(fmt.Sprintf("%s rows of %s", thousands(len(t.Rows)-written), what))
		return
	}
	d.b.WriteString(notes.String())
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
	d.close()
	// A fold's closing line would take the note into its HTML block.
	if strings.HasSuffix(d.b.String(), "</details>\n") {
		d.b.WriteString("\n")
	}
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

// mdInline escapes s so that GitHub shows it as text on one line:
//   - HTML special characters as entities (no tag, no <http://...> autolink);
//   - Markdown punctuation with a backslash (\ ` * _ [ ] | ~ # $): no
//     emphasis, code span, link or image bracket, table cell break, or
//     heading;
//   - line breaks and tabs as spaces: no new block (a heading, a list, a
//     table row) can start inside a value;
//   - other control characters as \uXX;
//   - what GitHub links in plain text is broken with a zero-width space
//     (U+200B), which the reader does not see: inside "://" and "www."
//     (bare URLs), after "@" (e-mail addresses and @mentions) and after
//     "#" (issue references). Copying such a value out of the
//     summary carries the zero-width space along; the analysis JSON and
//     the HTML report have it as recorded.
func mdInline(s string) string {
	s = breakLinks(clipText(s, mdClip))
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

// htmlInline escapes s for the text of an HTML element on one line, where
// Markdown is not read: entities, no line break, and links broken as
// mdInline breaks them.
func htmlInline(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ", "\t", " ").Replace(breakLinks(clipText(s, mdClip)))
	return html.EscapeString(s)
}

// zwsp is the zero-width space that breaks what GitHub would link.
const zwsp = "\u200b"

// breakLinks puts a zero-width space into everything GitHub turns into a
// link in plain text: "://", "www.", "@" and "#" (see mdInline).
func breakLinks(s string) string {
	if !strings.ContainsAny(s, ":@#wW") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		b.WriteByte(c)
		switch {
		case c == '@' || c == '#':
			b.WriteString(zwsp)
		case c == ':' && strings.HasPrefix(s[i+1:], "//"):
			b.WriteString(zwsp)
		case (c == 'w' || c == 'W') && i+3 < len(s) && strings.EqualFold(s[i:i+4], "www."):
			b.WriteString(zwsp)
		}
	}
	return b.String()
}
