package render_test

import (
	"testing"

	"github.com/llmrec/llmrec/render/browsertest"
)

// brokenWords lists the words of table cells that the layout split across
// lines, with every folded table opened: a word (a run of non-space
// characters) whose pieces sit on more than one line.
const brokenWords = `(function () {
	document.querySelectorAll('details').forEach(function (d) { d.open = true; });
	var bad = [], words = 0;
	document.querySelectorAll('table.data th, table.data td').forEach(function (c) {
		var w = document.createTreeWalker(c, NodeFilter.SHOW_TEXT), n;
		while ((n = w.nextNode())) {
			var re = /\S+/g, m;
			while ((m = re.exec(n.data))) {
				words++;
				var r = document.createRange();
				r.setStart(n, m.index);
				r.setEnd(n, m.index + m[0].length);
				var tops = {};
				Array.prototype.forEach.call(r.getClientRects(), function (x) { if (x.width > 0) tops[Math.round(x.top)] = true; });
				if (Object.keys(tops).length > 1) bad.push(m[0]);
			}
		}
	});
	return {words: words, bad: bad};
})()`

// On an 800 px wide window no table cell of the report breaks a word: cells
// wrap at spaces only and a table wider than the page scrolls.
func TestTablesKeepWords(t *testing.T) {
	b := browsertest.Start(t)
	for name, r := range map[string]func(*testing.T) string{
		"sample":    func(t *testing.T) string { return writeReport(t, sampleReport(t, plain, 120)) },
		"shipped":   func(t *testing.T) string { return writeReport(t, findingsReport(t)) },
		"8 engines": func(t *testing.T) string { return writeReport(t, fleetReport(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			p := b.Open(t, r(t))
			defer checkClean(t, p)
			if err := p.SetViewport(800, 900); err != nil {
				t.Fatal(err)
			}
			type result struct {
				Words int
				Bad   []string
			}
			got, err := browsertest.Eval[result](p, brokenWords)
			if err != nil {
				t.Fatal(err)
			}
			if got.Words < 50 {
				t.Fatalf("only %d words in the tables: the check measured nothing", got.Words)
			}
			if len(got.Bad) > 0 {
				t.Errorf("%d of %d words in table cells break across lines at 800 px: %q", len(got.Bad), got.Words, got.Bad)
			}
		})
	}
}

// Under the answer and above the findings, one chart: throughput over time
// with the phases shaded, drawn and whole on the 1400×900 first screen of
// the shipped recording.
func TestOverviewChartOnFirstScreen(t *testing.T) {
	b := browsertest.Start(t)
	p := loadAndDraw(t, b, writeReport(t, findingsReport(t)))
	defer checkClean(t, p)
	if err := p.SetViewport(1400, 900); err != nil {
		t.Fatal(err)
	}
	viewshot(t, p, "overview")
	type box struct{ Top, Bottom float64 }
	got, err := browsertest.Eval[map[string]box](p, `(function () {
		window.scrollTo(0, 0);
		var out = {};
		var q = {answer: "#answer table", chart: "section.overview .chart canvas", findings: "section.verdicts"};
		for (var k in q) { var e = document.querySelector(q[k]); if (e) { var r = e.getBoundingClientRect(); out[k] = {Top: r.top, Bottom: r.bottom}; } }
		return out;
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	a, c, f := got["answer"], got["chart"], got["findings"]
	if _, ok := got["chart"]; !ok {
		t.Fatal("no drawn overview chart on the page")
	}
	if c.Top < a.Bottom || f.Top < c.Bottom {
		t.Errorf("answer %+v, chart %+v, findings %+v: the chart is not between the answer and the findings", a, c, f)
	}
	if c.Bottom > 900 {
		t.Errorf("the overview chart ends at %.0f px, below the 900 px first screen", c.Bottom)
	}
}
