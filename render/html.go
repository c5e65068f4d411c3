package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/llmrec/llmrec/templates"
)

// assets are the parsed templates and the page's fixed parts, made once.
type assets struct {
	tmpl    *template.Template
	css     template.CSS
	js      template.JS
	echarts template.JS
	csp     string
}

var loadAssets = sync.OnceValues(func() (*assets, error) {
	t, err := template.New("report").Funcs(template.FuncMap{"words": keepWords}).ParseFS(templates.FS, templates.Pages)
	if err != nil {
		return nil, fmt.Errorf("render: parse templates: %w", err)
	}
	css, err := templates.Read(templates.CSS)
	if err != nil {
		return nil, err
	}
	js, err := templates.Read(templates.JS)
	if err != nil {
		return nil, err
	}
	ec, err := templates.Read(templates.ECharts)
	if err != nil {
		return nil, err
	}
	// The two scripts run by hash and nothing else may: an injected inline
	// handler or script would be refused even if escaping failed. No
	// request may leave the page (default-src 'none'); ECharts sets inline
	// styles, which cannot run code.
	csp := fmt.Sprintf("default-src 'none'; script-src %s %s; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'",
		scriptHash(ec), scriptHash(js))
	return &assets{tmpl: t, css: template.CSS(css), js: template.JS(js), echarts: template.JS(ec), csp: csp}, nil
})

// keepWords escapes a table cell's text and wraps each word that holds a
// line-break opportunity of its own (after a hyphen or a slash, around
// brackets: "llamacpp-3", "Qwen/Qwen3-8B") in a span that keeps it on one
// line, so a cell wraps at spaces only (CSS cannot forbid those breaks).
func keepWords(s string) template.HTML {
	var b strings.Builder
	for i, w := range strings.Split(s, " ") {
		if i > 0 {
			b.WriteByte(' ')
		}
		// Rule: a word with no break opportunity inside it needs no span.
		if !breaksInside(w) {
			b.WriteString(template.HTMLEscapeString(w))
			continue
		}
		b.WriteString(`<span class="w">`)
		b.WriteString(template.HTMLEscapeString(w))
		b.WriteString(`</span>`)
	}
	return template.HTML(b.String())
}

// breaksInside reports whether a browser may break w inside: after a
// hyphen, dash, slash, "?" or "!" that is not its last character, or
// before an opening bracket that is not its first.
func breaksInside(w string) bool {
	_, last := utf8.DecodeLastRuneInString(w)
	_, first := utf8.DecodeRuneInString(w)
	return strings.ContainsAny(w[:len(w)-last], "-/|?!\u2010\u2013\u2014") || strings.ContainsAny(w[first:], "({[")
}

func scriptHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// HTML writes the report as one self-contained page: its stylesheet,
// script and ECharts inlined, each chart's option as JSON from
// encoding/json, and a Content-Security-Policy that lets the page make no
// request. The output depends only on r. It returns an error, and writes
// nothing, when r is not well formed: a bad or repeated id, an unknown
// class, a link that is not to an anchor of the page, a row whose width is
// not the table's, or a chart option encoding/json cannot marshal.
func HTML(w io.Writer, r Report) error {
	a, err := loadAssets()
	if err != nil {
		return err
	}
	p, err := newPage(r, a)
	if err != nil {
		return err
	}
	// Execute into memory first so that a failed page leaves w untouched.
	var buf bytes.Buffer
	if err := a.tmpl.ExecuteTemplate(&buf, "page", p); err != nil {
		return fmt.Errorf("render: lay out page: %w", err)
	}
	if _, err := buf.WriteTo(w); err != nil {
		return fmt.Errorf("render: write page: %w", err)
	}
	return nil
}

// page is what the templates see: the report checked and laid out, each
// chart's JSON made.
type page struct {
	Title, Generator string
	CSP              string
	CSS              template.CSS
	ECharts, JS      template.JS
	EChartsVersion   string
	Banner           *Verdict
	Answer           *tableView // nil: the report has no answer table
	Overview         *chartView // nil: no chart under the answer
	Header           headerView
	Verdicts         []Verdict
	TOC              []tocEntry
	Sections         []sectionView
	Appendix         []sectionView
}

type headerView struct {
	Facts  []factView
	Tables []tableView
}

type factView struct {
	Name  string
	Value cellView
}

type tocEntry struct{ ID, Title string }

type sectionView struct {
	ID, Title string
	Level     int
	Notes     []string
	Tables    []tableView
	Charts    []chartView
	Blocks    []Block
	Sections  []sectionView
}

type tableView struct {
	Title   string
	Columns []Column
	Rows    [][]cellView
	Notes   []string
	Fold    bool
}

type cellView struct {
	Cell
	Classes string // the class attribute: the cell's class, and num for numbers
}

type chartView struct {
	ID, Title string
	Notes     []string
	Height    int
	Spec      template.JS
}

// chartSpec is what the page's script reads for a chart; see Chart.
type chartSpec struct {
	Option     any      `json:"option"`
	Prov       []string `json:"prov"`
	SeriesProv []int    `json:"sprov"`
	Canon      []string `json:"canon,omitempty"`
	X          string   `json:"x"`
	T0         float64  `json:"t0"`
	Unit       string   `json:"unit"`
	Percent    bool     `json:"pct"`
}

// checker collects the ids of the page to reject repeats.
type checker struct{ ids map[string]string }

func (c *checker) id(id, what string) error {
	if !validID(id) {
		return fmt.Errorf("render: %s: id %q is not of the form ID returns", what, id)
	}
	if prev, ok := c.ids[id]; ok {
		return fmt.Errorf("render: %s: id %q is already used by %s", what, id, prev)
	}
	c.ids[id] = what
	return nil
}

func newPage(r Report, a *assets) (*page, error) {
	c := &checker{ids: map[string]string{"prov-tip": "the page", "appendix": "the page", "answer": "the page", "run": "the page", "banner": "the page"}}
	p := &page{
		Title: r.Title, Generator: r.Generator, CSP: a.csp,
		CSS: a.css, ECharts: a.echarts, JS: a.js, EChartsVersion: templates.EChartsVersion,
	}
	if b := r.Banner; b != nil {
		if err := checkClass(b.Class, "banner"); err != nil {
			return nil, err
		}
		if err := checkHref(b.Href, "banner"); err != nil {
			return nil, err
		}
		p.Banner = b
	}
	if len(r.Answer.Columns) > 0 {
		tv, err := tableOf(r.Answer)
		if err != nil {
			return nil, err
		}
		p.Answer = &tv
	}
	if r.Overview != nil {
		cv, err := chartOf(*r.Overview, c)
		if err != nil {
			return nil, err
		}
		p.Overview = &cv
	}
	for _, f := range r.Header.Facts {
		v, err := cellOf(f.Value, false, "header fact "+f.Name)
		if err != nil {
			return nil, err
		}
		p.Header.Facts = append(p.Header.Facts, factView{Name: f.Name, Value: v})
	}
	for _, t := range r.Header.Tables {
		tv, err := tableOf(t)
		if err != nil {
			return nil, err
		}
		p.Header.Tables = append(p.Header.Tables, tv)
	}
	for _, v := range r.Verdicts {
		if err := checkClass(v.Class, "verdict "+v.Topic); err != nil {
			return nil, err
		}
		if err := checkHref(v.Href, "verdict "+v.Topic); err != nil {
			return nil, err
		}
	}
	p.Verdicts = r.Verdicts
	var err error
	if p.Sections, err = sectionsOf(r.Sections, 2, c); err != nil {
		return nil, err
	}
	if p.Appendix, err = sectionsOf(r.Appendix, 3, c); err != nil {
		return nil, err
	}
	for _, s := range p.Sections {
		if s.ID != "" {
			p.TOC = append(p.TOC, tocEntry{ID: s.ID, Title: s.Title})
		}
	}
	if len(p.Appendix) > 0 {
		p.TOC = append(p.TOC, tocEntry{ID: "appendix", Title: "Appendix"})
	}
	// Links must land on an anchor of the page.
	if err := checkLinks(r, c); err != nil {
		return nil, err
	}
	return p, nil
}

func sectionsOf(ss []Section, level int, c *checker) ([]sectionView, error) {
	out := make([]sectionView, 0, len(ss))
	for _, s := range ss {
		v := sectionView{ID: s.ID, Title: s.Title, Level: min(level, 4), Notes: s.Notes, Blocks: s.Blocks}
		if s.ID != "" {
			if err := c.id(s.ID, "section "+s.Title); err != nil {
				return nil, err
			}
		}
		for _, t := range s.Tables {
			tv, err := tableOf(t)
			if err != nil {
				return nil, err
			}
			v.Tables = append(v.Tables, tv)
		}
		for _, ch := range s.Charts {
			cv, err := chartOf(ch, c)
			if err != nil {
				return nil, err
			}
			v.Charts = append(v.Charts, cv)
		}
		sub, err := sectionsOf(s.Sections, level+1, c)
		if err != nil {
			return nil, err
		}
		v.Sections = sub
		out = append(out, v)
	}
	return out, nil
}

func tableOf(t Table) (tableView, error) {
	v := tableView{Title: t.Title, Columns: t.Columns, Notes: t.Notes, Fold: t.Fold, Rows: make([][]cellView, len(t.Rows))}
	for i, row := range t.Rows {
		if len(row) != len(t.Columns) {
			return tableView{}, fmt.Errorf("render: table %q: row %d has %d cells for %d columns", t.Title, i+1, len(row), len(t.Columns))
		}
		v.Rows[i] = make([]cellView, len(row))
		for j, cell := range row {
			cv, err := cellOf(cell, t.Columns[j].Num, fmt.Sprintf("table %q row %d", t.Title, i+1))
			if err != nil {
				return tableView{}, err
			}
			v.Rows[i][j] = cv
		}
	}
	return v, nil
}

func cellOf(c Cell, num bool, where string) (cellView, error) {
	if err := checkClass(c.Class, where); err != nil {
		return cellView{}, err
	}
	if err := checkHref(c.Href, where); err != nil {
		return cellView{}, err
	}
	classes := c.Class
	if num {
		classes = strings.TrimSpace(classes + " num")
	}
	if c.Badge {
		classes = strings.TrimSpace(classes + " badge")
	}
	return cellView{Cell: c, Classes: classes}, nil
}

func chartOf(ch Chart, c *checker) (chartView, error) {
	if err := c.id(ch.ID, "chart "+ch.Title); err != nil {
		return chartView{}, err
	}
	for _, suffix := range []string{"-spec", "-fig"} {
		if err := c.id(ch.ID+suffix, "chart "+ch.Title); err != nil {
			return chartView{}, err
		}
	}
	switch ch.X {
	case XElapsed, XCategory, XValue:
	case "":
		ch.X = XValue
	default:
		return chartView{}, fmt.Errorf("render: chart %s: unknown x axis kind %q", ch.ID, ch.X)
	}
	for i, sp := range ch.SeriesProv {
		if sp < -1 || sp >= len(ch.Prov) {
			return chartView{}, fmt.Errorf("render: chart %s: series %d has provenance %d of %d", ch.ID, i, sp, len(ch.Prov))
		}
	}
	prov, sprov := ch.Prov, ch.SeriesProv
	if prov == nil {
		prov = []string{}
	}
	if sprov == nil {
		sprov = []int{}
	}
	// encoding/json escapes <, > and & (and U+2028, U+2029), so the JSON
	// cannot end the <script> element it sits in.
	b, err := json.Marshal(chartSpec{Option: ch.Option, Prov: prov, SeriesProv: sprov, Canon: ch.SeriesCanon, X: ch.X, T0: ch.T0, Unit: ch.Unit, Percent: ch.Percent})
	if err != nil {
		return chartView{}, fmt.Errorf("render: chart %s: %w", ch.ID, err)
	}
	h := ch.Height
	if h <= 0 {
		h = 280
	}
	return chartView{ID: ch.ID, Title: ch.Title, Notes: ch.Notes, Height: h, Spec: template.JS(b)}, nil
}

func checkClass(class, where string) error {
	switch class {
	case ClassNone, ClassOK, ClassWarn, ClassFail, ClassRefused, ClassUnknown:
		return nil
	}
	return fmt.Errorf("render: %s: unknown class %q", where, class)
}

func checkHref(href, where string) error {
	if href == "" || len(href) > 1 && href[0] == '#' && validID(href[1:]) {
		return nil
	}
	return fmt.Errorf("render: %s: link %q is not #id", where, href)
}

// checkLinks reports a link to an anchor the page does not have.
func checkLinks(r Report, c *checker) error {
	check := func(href, where string) error {
		if href == "" {
			return nil
		}
		if _, ok := c.ids[href[1:]]; !ok {
			return fmt.Errorf("render: %s: link %s goes to no anchor of the page", where, href)
		}
		return nil
	}
	for _, v := range r.Verdicts {
		if err := check(v.Href, "verdict "+v.Topic); err != nil {
			return err
		}
	}
	if r.Banner != nil {
		if err := check(r.Banner.Href, "banner"); err != nil {
			return err
		}
	}
	var walk func([]Section) error
	walk = func(ss []Section) error {
		for _, s := range ss {
			for _, t := range s.Tables {
				for _, row := range t.Rows {
					for _, cell := range row {
						if err := check(cell.Href, "table "+t.Title); err != nil {
							return err
						}
					}
				}
			}
			if err := walk(s.Sections); err != nil {
				return err
			}
		}
		return nil
	}
	for _, t := range append([]Table{r.Answer}, r.Header.Tables...) {
		for _, row := range t.Rows {
			for _, cell := range row {
				if err := check(cell.Href, "table "+t.Title); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range r.Header.Facts {
		if err := check(f.Value.Href, "fact "+f.Name); err != nil {
			return err
		}
	}
	if err := walk(r.Sections); err != nil {
		return err
	}
	return walk(r.Appendix)
}
