package render_test

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/llmrec/llmrec/render"
)

// fleet is a generated recording of 8 engines (every 4th a llama.cpp) for
// 10 minutes, analysed and laid out once per test binary.
var fleet = sync.OnceValues(func() (render.Report, error) {
	dir, err := os.MkdirTemp("", "llmrec-fleet-")
	if err != nil {
		return render.Report{}, err
	}
	defer os.RemoveAll(dir)
	sc := sim.LongScenario(8, 10*time.Minute, 1)
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: 2 * time.Second, Duration: 10 * time.Minute, Seed: 1}, 0, nil); err != nil {
		return render.Report{}, err
	}
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}})
	if err != nil {
		return render.Report{}, err
	}
	defer res.Close()
	return render.FromAnalysis(render.Input{Result: res})
})

func fleetReport(t *testing.T) render.Report {
	t.Helper()
	r, err := fleet()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// answerText is the answer section as text: the table, a line per row,
// its notes, then the findings, a line each.
func answerText(r render.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Answer.Title)
	for _, c := range r.Answer.Columns {
		fmt.Fprintf(&b, "| %s ", c.Title)
	}
	b.WriteString("|\n")
	for _, row := range r.Answer.Rows {
		for _, c := range row {
			fmt.Fprintf(&b, "| %s ", c.Text)
		}
		b.WriteString("|\n")
	}
	for _, n := range r.Answer.Notes {
		fmt.Fprintf(&b, "%s\n", n)
	}
	b.WriteString("findings:\n")
	for _, v := range r.Verdicts {
		fmt.Fprintf(&b, "[%s] %s: %s -> %s\n", v.Class, v.Topic, v.Text, v.Href)
	}
	return b.String()
}

// The answer section of the shipped recording and of 8 generated engines,
// golden: a row per target and the fleet, unknown never 0, at most 12
// findings, each kind once, none that contradicts its class.
func TestAnswerGolden(t *testing.T) {
	for name, r := range map[string]render.Report{"answer-findings.golden": findingsReport(t), "answer-fleet8.golden": fleetReport(t)} {
		targets := 0
		for _, s := range r.Sections {
			if strings.HasPrefix(s.ID, "target-") {
				targets++
			}
		}
		if got, want := len(r.Answer.Rows), targets+1; got != want {
			t.Errorf("%s: %d answer rows for %d targets and the fleet", name, got, targets)
		}
		for _, row := range r.Answer.Rows {
			if len(row) != len(r.Answer.Columns) {
				t.Fatalf("%s: row of %d cells for %d columns", name, len(row), len(r.Answer.Columns))
			}
			for k, c := range row[2 : len(row)-2] {
				// Absent is never 0: an unknown cell says so and why.
				if c.Class == render.ClassUnknown && (c.Text != "unknown" || c.Prov == "") {
					t.Errorf("%s: %s %s: unknown cell %+v", name, row[0].Text, r.Answer.Columns[k+2].Title, c)
				}
				if c.Text != "unknown" && c.Prov == "" {
					t.Errorf("%s: %s %s = %s has no provenance", name, row[0].Text, r.Answer.Columns[k+2].Title, c.Text)
				}
			}
		}
		if n := len(r.Verdicts); n == 0 || n > 12 {
			t.Errorf("%s: %d findings", name, n)
		}
		kinds := map[string]bool{}
		for _, v := range r.Verdicts {
			if kinds[v.Topic] {
				t.Errorf("%s: kind %q twice", name, v.Topic)
			}
			kinds[v.Topic] = true
			// A line that says nothing went wrong is not a warning.
			if v.Class != render.ClassOK && regexp.MustCompile(`(?i)^no |stayed under`).MatchString(v.Text) && !strings.Contains(v.Text, "reached") {
				t.Errorf("%s: %q is %s", name, v.Text, v.Class)
			}
			if strings.Contains(v.Text, "( )") || strings.Contains(v.Text, " )") || strings.Contains(v.Text, "|ln|") {
				t.Errorf("%s: %q has an empty part or jargon", name, v.Text)
			}
		}
		golden(t, name, answerText(r))
	}
}

// visibleLines are the lines of md outside <details> … </details>; the
// <details> line itself, which shows as the fold, counts.
func visibleLines(md string) []string {
	var out []string
	inside := false
	for _, l := range strings.Split(strings.TrimRight(md, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "<details>"):
			out = append(out, l)
			inside = true
		case strings.HasPrefix(l, "</details>"):
			inside = false
		case !inside:
			out = append(out, l)
		}
	}
	return out
}

var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM))

// checkSummary parses md as GitHub does (goldmark with GFM: tables,
// autolinks, strikethrough) and checks: the visible lines are at most
// budget; every table the report marks for the summary is a table with
// its number of columns on every row; no link, image or autolink and no
// raw HTML but the folds.
func checkSummary(t *testing.T, name, md string, r render.Report, budget int) {
	t.Helper()
	if v := visibleLines(md); len(v) > budget {
		t.Errorf("%s: %d visible lines, budget %d:\n%s", name, len(v), budget, strings.Join(v, "\n"))
	}
	src := []byte(md)
	doc := gfm.Parser().Parse(text.NewReader(src))
	var cols []int
	h1 := 0
	fold := regexp.MustCompile(`^(<details><summary>[^<>]*</summary>|</details>)$`)
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *east.Table:
			header := n.FirstChild()
			want := header.ChildCount()
			cols = append(cols, want)
			for row := header.NextSibling(); row != nil; row = row.NextSibling() {
				if row.ChildCount() != want {
					t.Errorf("%s: table row of %d cells under a header of %d", name, row.ChildCount(), want)
				}
			}
		case *ast.Link, *ast.Image, *ast.AutoLink:
			t.Errorf("%s: a %s node survives: %q", name, n.Kind(), nodeText(n, src))
		case *ast.RawHTML:
			t.Errorf("%s: raw HTML %q", name, nodeText(n, src))
		case *ast.HTMLBlock:
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				if l := strings.TrimSpace(string(seg.Value(src))); l != "" && !fold.MatchString(l) {
					t.Errorf("%s: HTML block line %q is not a fold", name, l)
				}
			}
		case *ast.Heading:
			// Only the title is a first-level heading.
			if n.Level == 1 {
				h1++
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if h1 != 1 {
		t.Errorf("%s: %d first-level headings", name, h1)
	}
	var want []int
	tables := append([]render.Table{r.Answer}, r.Header.Tables...)
	var walk func([]render.Section)
	walk = func(ss []render.Section) {
		for _, s := range ss {
			for _, tb := range s.Tables {
				if tb.Summary {
					tables = append(tables, tb)
				}
			}
			walk(s.Sections)
		}
	}
	walk(r.Sections)
	for _, tb := range tables {
		if len(tb.Rows) > 0 {
			want = append(want, len(tb.Columns))
		}
	}
	if fmt.Sprint(cols) != fmt.Sprint(want) {
		t.Errorf("%s: tables parsed with columns %v, the report has %v (empty ones left out)", name, cols, want)
	}
}

func nodeText(n ast.Node, src []byte) string {
	var b bytes.Buffer
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			b.Write(t.Segment.Value(src))
		}
		if a, ok := c.(*ast.AutoLink); ok && entering {
			b.Write(a.URL(src))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// The summary of the shipped recording fits in 40 visible lines and that
// of 8 engines in 60, and both parse as intended: every table a table,
// nothing linked.
func TestSummaryParses(t *testing.T) {
	for _, c := range []struct {
		name   string
		r      render.Report
		budget int
	}{{"shipped", findingsReport(t), 40}, {"8 engines", fleetReport(t), 60}} {
		md := markdownOf(t, c.r)
		checkSummary(t, c.name, md, c.r, c.budget)
		// Integers as integers, and no full date in the incident rows.
		if !regexp.MustCompile(`\| requests waiting, max \| \d+ \|`).MatchString(md) {
			t.Errorf("%s: the fleet's most requests waiting is not an integer", c.name)
		}
		if regexp.MustCompile(`\| 20\d\d-\d\d-\d\d [^|]*–`).MatchString(md) {
			t.Errorf("%s: a stretch of time written as full dates", c.name)
		}
		if strings.Contains(md, "[^") {
			t.Errorf("%s: footnotes", c.name)
		}
	}
}
