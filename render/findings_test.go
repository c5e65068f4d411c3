package render_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/render"
	"github.com/llmrec/llmrec/render/browsertest"
)

// findingsReport analyses the shipped recording captures/findings and lays
// it out: the production path of llmrec render.
func findingsReport(t *testing.T) render.Report {
	t.Helper()
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{"../captures/findings/run"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.FromAnalysis(render.Input{Result: res})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An analysis that hands its polls to render.Polls as it replays them, and
// holds none, lays out the same report, byte for byte, as one that holds
// them in Target.Polls.
func TestStreamedPollsMakeTheSameReport(t *testing.T) {
	report := func(ps *render.Polls) (html, md string, held int) {
		opts := analyze.Options{Dirs: []string{"../captures/findings/run"}}
		if ps != nil {
			opts.Polls = ps.Add
		}
		res, err := analyze.Analyze(opts)
		if err != nil {
			t.Fatal(err)
		}
		r, err := render.FromAnalysis(render.Input{Result: res, Polls: ps})
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range res.Targets {
			held += len(tg.Polls)
		}
		return htmlOf(t, r), markdownOf(t, r), held
	}
	html, md, all := report(nil)
	streamedHTML, streamedMD, held := report(render.NewPolls())
	if all == 0 || held != 0 {
		t.Errorf("polls held: %d, streamed %d", all, held)
	}
	if streamedHTML != html || streamedMD != md {
		t.Error("the report of an analysis that streamed its polls differs from the one that held them")
	}
}

// The Markdown summary of the shipped recording, golden (go test -update
// rewrites it): the answer and the findings, the rest folded.
func TestFindingsMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := render.Markdown(&b, findingsReport(t)); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{"| vllm-0 | ok |", "| llamacpp-0 | degraded |", "| fleet |", "**Findings**", "<details><summary>Incidents</summary>"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	golden(t, "findings.md.golden", got)
}

// The HTML report of the shipped recording is deterministic, loads in
// Chromium with no console error and no request leaving the file, draws
// every chart, and hovering shows provenance: on a chart point and on a
// table number.
func TestFindingsReportInBrowser(t *testing.T) {
	r := findingsReport(t)
	var a, b bytes.Buffer
	if err := render.HTML(&a, r); err != nil {
		t.Fatal(err)
	}
	if err := render.HTML(&b, findingsReport(t)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two renders of the same recording differ")
	}
	path := writeReport(t, r)
	br := browsertest.Start(t)
	p := loadAndDraw(t, br, path)
	defer checkClean(t, p)
	tip, err := p.HoverChart(render.ID("chart", "vllm-0", "tokens"), 0, 30)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tip, "computed:Δvllm:generation_tokens_total/Δt") || !strings.Contains(tip, "Δ") {
		t.Errorf("chart tooltip %q lacks the provenance", tip)
	}
	prov, err := p.HoverProv("td.num[data-prov]")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prov, "over Δ") && !strings.Contains(prov, "(read") {
		t.Errorf("table hover %q lacks the provenance", prov)
	}
}

// No chart draws a line across a hole: in the shipped recording (1 s
// polls; a 4 s HTTP 500 spell, a 15 s SIGSTOP of the recorder, a restart)
// every line series of every chart, gauges included, has no two
// consecutive drawn values more than 1.5 intervals apart without a null
// point between them, as ECharts holds the series in Chromium. Charts
// whose x is not time (the sweep's) have no holes to break at.
func TestFindingsChartsBreakAtHoles(t *testing.T) {
	path := writeReport(t, findingsReport(t))
	br := browsertest.Start(t)
	p := loadAndDraw(t, br, path)
	defer checkClean(t, p)
	type jump struct {
		Chart, Series string
		From, To      float64
	}
	jumps, err := browsertest.Eval[[]jump](p, `(function () {
		var out = [];
		document.querySelectorAll('div.chart[data-spec]').forEach(function (div) {
			var ch = echarts.getInstanceByDom(div);
			var spec = JSON.parse(document.getElementById(div.getAttribute('data-spec')).textContent);
			if (spec.x !== 'elapsed') return;
			ch.getOption().series.forEach(function (s) {
				if (s.type !== 'line' || !Array.isArray(s.data) || s.areaStyle) return;
				var last = null;
				s.data.forEach(function (d) {
					var xy = Array.isArray(d) ? d : (d && d.value);
					if (!xy || xy[1] === null || xy[1] === undefined || xy[1] === '-') { last = null; return; }
					if (last !== null && xy[0] - last > 1.5) out.push({chart: div.id, series: s.name, from: last, to: xy[0]});
					last = xy[0];
				});
			});
		});
		return out;
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jumps {
		t.Errorf("%s: %q draws a line across %.1f s (%.1f → %.1f)", j.Chart, j.Series, j.To-j.From, j.From, j.To)
	}
}
