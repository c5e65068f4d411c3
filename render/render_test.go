package render_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/goldentest"
	"github.com/llmrec/llmrec/render"
	"github.com/llmrec/llmrec/templates"
)

func htmlOf(tb testing.TB, r render.Report) string {
	tb.Helper()
	var b bytes.Buffer
	if err := render.HTML(&b, r); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func markdownOf(tb testing.TB, r render.Report) string {
	tb.Helper()
	var b bytes.Buffer
	if err := render.Markdown(&b, r); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", name), []byte(got))
}

// withoutECharts replaces the inlined ECharts library, a megabyte that
// VERSIONS and its own test pin, by a line, to keep the golden file small.
func withoutECharts(t *testing.T, page string) string {
	t.Helper()
	ec, err := templates.Read(templates.ECharts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(page, ec) != 1 {
		t.Fatal("the page does not inline ECharts exactly once")
	}
	return strings.Replace(page, ec, "/* echarts.min.js "+templates.EChartsVersion+" */", 1)
}

func TestGoldenHTML(t *testing.T) {
	golden(t, "sample.html.golden", withoutECharts(t, htmlOf(t, sampleReport(t, plain, 120))))
}

func TestGoldenMarkdown(t *testing.T) {
	golden(t, "sample.md.golden", markdownOf(t, sampleReport(t, plain, 120)))
	golden(t, "hostile.md.golden", markdownOf(t, sampleReport(t, hostile, 20)))
}

// The same report renders to the same bytes, every time.
func TestDeterministic(t *testing.T) {
	a, b := htmlOf(t, sampleReport(t, plain, 300)), htmlOf(t, sampleReport(t, plain, 300))
	if a != b {
		t.Fatal("two renderings of one report differ")
	}
	if c, d := markdownOf(t, sampleReport(t, plain, 300)), markdownOf(t, sampleReport(t, plain, 300)); c != d {
		t.Fatal("two summaries of one report differ")
	}
}

var scriptRE = regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`)

// Every string from outside holds HTML that would run script and
// go-echarts' __f__ function marker: the page holds them only as text and
// as JSON strings, and its only scripts that run are ECharts and its own.
func TestHostileStringsStayText(t *testing.T) {
	r := sampleReport(t, hostile, 20)
	page := htmlOf(t, r)
	ec, _ := templates.Read(templates.ECharts)
	js, _ := templates.Read(templates.JS)
	scripts := scriptRE.FindAllStringSubmatch(page, -1)
	charts, carriers := 0, 0
	for _, s := range scripts {
		attrs, body := s[1], s[2]
		switch {
		case attrs == "" && (body == ec || body == js):
		case strings.HasPrefix(attrs, ` type="application/json"`):
			charts++
			if strings.ContainsAny(body, "<>&") {
				t.Errorf("chart JSON holds a raw <, > or &: %.200s", body)
			}
			var spec struct {
				Option struct {
					Series []struct{ Name string } `json:"series"`
				} `json:"option"`
				Prov []string `json:"prov"`
			}
			if err := json.Unmarshal([]byte(body), &spec); err != nil {
				t.Fatalf("chart JSON does not parse: %v", err)
			}
			// The payload is there, as a string: data, not code.
			found := false
			for _, s := range spec.Option.Series {
				found = found || s.Name == evil || strings.Contains(s.Name, evil)
			}
			for _, p := range spec.Prov {
				found = found || strings.Contains(p, evil)
			}
			if found {
				carriers++
			}
		default:
			t.Errorf("unexpected script%s: %.200s", attrs, body)
		}
	}
	if want := 4*2 + 1; charts != want {
		t.Errorf("%d chart scripts, want %d", charts, want)
	}
	if carriers < 4 {
		t.Errorf("only %d charts carry the hostile strings as JSON strings", carriers)
	}
	// Outside the two trusted scripts, no tag but ours: no <img>, no
	// handler attribute, no comment, no script that is not a chart's JSON.
	markup := strings.Replace(strings.Replace(page, ec, "", 1), js, "", 1)
	// html/template quotes every attribute value with " and escapes any "
	// in it, so emptying the quoted values leaves the tags' own attributes.
	markup = regexp.MustCompile(`="[^"]*"`).ReplaceAllString(markup, `=""`)
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<img`),
		regexp.MustCompile(`(?i)<[a-z][^>]*\son[a-z]+=`),
		regexp.MustCompile(`<!--`),
		regexp.MustCompile(`(?i)</script><`),
	} {
		if loc := bad.FindStringIndex(markup); loc != nil {
			t.Errorf("the page's markup matches %s: …%s…", bad, markup[max(0, loc[0]-80):min(len(markup), loc[1]+80)])
		}
	}
	// The payload shows as text: escaped in the markup.
	if !strings.Contains(page, "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;__f__(function(){alert(1)})__f__") {
		t.Error("the page does not show the hostile string as text")
	}

	// The summary's only tags are its folds, whose titles are escaped.
	md := regexp.MustCompile(`(?m)^(<details><summary>[^<>]*</summary>|</details>)$`).ReplaceAllString(markdownOf(t, r), "")
	if strings.ContainsAny(md, "<>") {
		i := strings.IndexAny(md, "<>")
		t.Errorf("the summary holds raw < or >: …%s…", md[max(0, i-80):min(len(md), i+80)])
	}
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(line, "# h") {
			t.Errorf("a line break in a string started a heading: %q", line)
		}
	}
}

// A report that is not well formed is refused, and nothing is written.
func TestHTMLRejects(t *testing.T) {
	base := func() render.Report { return sampleReport(t, plain, 10) }
	cases := map[string]func(*render.Report){
		"repeated chart id": func(r *render.Report) {
			r.Sections[1].Charts[1].ID = r.Sections[1].Charts[0].ID
		},
		"chart id like a section's": func(r *render.Report) { r.Sections[0].Charts[0].ID = r.Sections[1].ID },
		"bad id":                    func(r *render.Report) { r.Sections[0].ID = "Not An Id" },
		"unknown class":             func(r *render.Report) { r.Verdicts[0].Class = "red" },
		"link off the page":         func(r *render.Report) { r.Verdicts[0].Href = "javascript:alert(1)" },
		"link to no anchor":         func(r *render.Report) { r.Verdicts[0].Href = "#nowhere" },
		"short row":                 func(r *render.Report) { r.Sections[0].Tables[0].Rows[0] = r.Sections[0].Tables[0].Rows[0][:1] },
		"bad option":                func(r *render.Report) { r.Sections[0].Charts[0].Option = func() {} },
		"provenance out of range":   func(r *render.Report) { r.Sections[0].Charts[0].SeriesProv = []int{99} },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			r := base()
			spoil(&r)
			var b bytes.Buffer
			if err := render.HTML(&b, r); err == nil {
				t.Fatal("no error")
			} else if b.Len() > 0 {
				t.Fatalf("wrote %d bytes with error %v", b.Len(), err)
			}
		})
	}
}

// A summary too long for a GitHub comment stops between rows, says so,
// and leaves no footnote undefined.
func TestMarkdownCap(t *testing.T) {
	r := sampleReport(t, plain, 10)
	var rows [][]render.Cell
	for i := range 5000 {
		rows = append(rows, []render.Cell{{Text: strings.Repeat("x", i%50)}, {Text: "1.0", Prov: "source " + strings.Repeat("y", i%7) + " over Δ2.0s"}})
	}
	big := render.Table{Title: "big", Summary: true, Columns: []render.Column{{Title: "a"}, {Title: "b", Num: true}}, Rows: rows}
	r.Sections = append([]render.Section{{ID: "big", Title: "Big", Tables: []render.Table{big}}}, r.Sections...)
	md := markdownOf(t, r)
	if len(md) > render.MaxMarkdown {
		t.Fatalf("summary is %d bytes, over %d", len(md), render.MaxMarkdown)
	}
	if !strings.Contains(md, "Summary truncated") || !strings.Contains(md, "of 5,000 rows shown") {
		t.Fatalf("no truncation note in the summary's end: %s", md[len(md)-600:])
	}
	refs := regexp.MustCompile(`\[\^(\d+)\]`).FindAllStringSubmatch(md, -1)
	for _, ref := range refs {
		if !strings.Contains(md, "\n[^"+ref[1]+"]: ") {
			t.Fatalf("footnote %s is used but not defined", ref[1])
		}
	}
	// What did not fit is named.
	if !strings.Contains(md, "section Incidents") {
		t.Errorf("the note does not name the sections left out: %s", md[len(md)-600:])
	}
}

func TestID(t *testing.T) {
	for _, c := range []struct {
		parts []string
		want  string
	}{
		{[]string{"t0", "decode"}, "t0-decode"},
		{[]string{"settle"}, "settle"},
		{[]string{"0"}, "x0"},
	} {
		if got := render.ID(c.parts...); got != c.want {
			t.Errorf("ID(%q) = %q, want %q", c.parts, got, c.want)
		}
	}
	a, b := render.ID("t", "a.b"), render.ID("t", "a-b")
	if a == b || !regexp.MustCompile(`^t-a-b-[0-9a-f]{8}$`).MatchString(a) {
		t.Errorf("ID of names differing in punctuation: %q and %q", a, b)
	}
	if got := render.ID(evil); !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(got) {
		t.Errorf("ID(evil) = %q", got)
	}
}

// go-echarts' page renderer writes options unescaped and turns strings
// holding __f__ into code: package render must never call it.
func TestNoGoEchartsRenderer(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"go-echarts/v2/render", "go-echarts/v2/components", "JSONNotEscaped", ".Render(", "RenderContent", "RenderSnippet"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", f, bad)
			}
		}
	}
}
