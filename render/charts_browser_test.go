package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/llmrec/llmrec/render"
	"github.com/llmrec/llmrec/render/browsertest"
)

// failingScenario is a fleet of three engines, one of which answers every
// scrape with HTTP 500 for 15 s: the fleet has fewer engines than it has
// for a while.
const failingScenario = `
name = "one engine fails"
duration = "60s"
[[engine]]
name = "vllm-0"
format = "vllm"
model = "m"
  [[engine.phase]]
  at = "0s"
  decode_tps = 1500.0
  prompt_tps = 4000.0
  running = 12
  [[engine.event]]
  at = "20s"
  kind = "status"
  code = 500
  for = "15s"
[[engine]]
name = "vllm-1"
format = "vllm"
model = "m"
  [[engine.phase]]
  at = "0s"
  decode_tps = 900.0
  prompt_tps = 2000.0
  running = 8
[[engine]]
name = "llamacpp-0"
format = "llamacpp"
model = "q"
slots = 4
  [[engine.phase]]
  at = "0s"
  decode_tps = 80.0
  prompt_tps = 300.0
  running = 3
`

// failingReport records failingScenario (sim.Generate, 1 s polls),
// analyses it and lays it out, as llmrec render does.
func failingReport(t *testing.T) render.Report {
	t.Helper()
	sc, err := sim.ParseScenario([]byte(failingScenario), "failing.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.FromAnalysis(render.Input{Result: res})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// chartFacts is what checkCharts reads of every drawn chart, as ECharts
// holds it in Chromium.
type chartFacts struct {
	ID         string   `json:"id"`
	LegendType string   `json:"legendType"`
	Legend     []string `json:"legend"`
	Fits       bool     `json:"fits"` // the drawn legend lies inside the chart, above the plot
	LegendBox  []int    `json:"legendBox"`
	GridTop    int      `json:"gridTop"`
	Series     []string `json:"series"` // lines and bars
	Areas      []string `json:"areas"`  // series that shade spans of time, with at least one span
	YNames     []string `json:"yNames"`
	Nulls      int      `json:"nulls"` // null items of the lines
	Values     int      `json:"values"`
}

// readCharts reads chartFacts of every chart of the page.
func readCharts(t *testing.T, p *browsertest.Page) []chartFacts {
	t.Helper()
	facts, err := browsertest.Eval[[]chartFacts](p, `Array.from(document.querySelectorAll('div.chart[data-spec]')).map(function (div) {
		var ch = echarts.getInstanceByDom(div), opt = ch.getOption();
		var lg = opt.legend && opt.legend[0] || {};
		var f = {id: div.id, legendType: lg.type || 'plain', legend: (lg.data || []).map(function (d) { return typeof d === 'string' ? d : d.name; }),
			series: [], areas: [], yNames: [], nulls: 0, values: 0};
		var model = ch.getModel().getComponent('legend'), view = model && ch.getViewOfComponentModel(model);
		var gridRect = ch.getModel().getComponent('grid').coordinateSystem.getRect();
		f.gridTop = Math.round(gridRect.y);
		if (view) {
			var g = view.group, r = g.getBoundingRect().clone();
			r.applyTransform(g.getLocalTransform());
			f.legendBox = [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)];
			f.fits = r.x >= 0 && r.y >= 0 && r.x + r.width <= ch.getWidth() + 0.5 && r.y + r.height <= gridRect.y + 0.5;
		}
		opt.series.forEach(function (s) {
			var spans = s.markArea && s.markArea.data && s.markArea.data.filter(function (d) { return Array.isArray(d) && typeof d[0].xAxis === 'number'; });
			if (spans && spans.length) { f.areas.push(s.name); return; }
			if (!Array.isArray(s.data) || !s.data.length) return;
			f.series.push(s.name);
			s.data.forEach(function (d) {
				var y = Array.isArray(d) ? d[1] : (d && d.value !== undefined ? (Array.isArray(d.value) ? d.value[1] : d.value) : d);
				if (y === null || y === undefined || y === '-') f.nulls++; else f.values++;
			});
		});
		(opt.yAxis || []).forEach(function (a) { f.yNames.push(a.name || ''); });
		return f;
	})`)
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) == 0 {
		t.Fatal("no chart read")
	}
	return facts
}

// snake is a canonical cell name: lowercase words joined by underscores.
func snake(name string) bool {
	if !strings.Contains(name, "_") {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// checkCharts holds every chart of a page to what a reader needs: a legend
// that is not paged and that fits above the plot, every series with a
// human name, every y axis named by its unit, every shading named in the
// legend, and no chart without a value.
func checkCharts(t *testing.T, facts []chartFacts) {
	t.Helper()
	for _, f := range facts {
		if f.LegendType == "scroll" || !f.Fits {
			t.Errorf("%s: legend %s at %v (plot from y %d) does not fit: %q", f.ID, f.LegendType, f.LegendBox, f.GridTop, f.Legend)
		}
		for _, s := range append(append([]string(nil), f.Series...), f.Areas...) {
			if snake(s) || strings.Contains(s, "__") {
				t.Errorf("%s: series %q has no human name", f.ID, s)
			}
		}
		for _, y := range f.YNames {
			if strings.TrimSpace(y) == "" {
				t.Errorf("%s: a y axis has no unit: %q", f.ID, f.YNames)
			}
		}
		for _, a := range f.Areas {
			if a != "bands" && !contains1(f.Legend, a) {
				t.Errorf("%s: shading %q is not in the legend %q", f.ID, a, f.Legend)
			}
		}
		if len(f.Series) == 0 || f.Values == 0 {
			t.Errorf("%s: a chart with no value: series %q", f.ID, f.Series)
		}
	}
}

func contains1(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A fleet of three engines of which one fails its scrapes for 15 s,
// recorded, analysed and rendered: in Chromium, no legend is paged, every
// series has a human name and every y axis a unit, the shadings are in the
// legend, the failing engine's chart has a null point in its gap, and the
// fleet chart shades the partial coverage with the count on hover.
func TestChartsReadable(t *testing.T) {
	r := failingReport(t)
	var page bytes.Buffer
	if err := render.HTML(&page, r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.Start(t)
	p := loadAndDraw(t, b, path)
	defer checkClean(t, p)
	facts := readCharts(t, p)
	checkCharts(t, facts)

	byID := map[string]chartFacts{}
	for _, f := range facts {
		byID[f.ID] = f
	}
	fleet, ok := byID["fleet-decode"]
	if !ok {
		t.Fatal("no fleet chart")
	}
	if !contains1(fleet.Areas, "fewer engines") || !contains1(fleet.Legend, "fewer engines") {
		t.Errorf("fleet chart: no shading of partial coverage in the legend: areas %q, legend %q", fleet.Areas, fleet.Legend)
	}
	// A gap: the failing engine's tokens chart holds null items.
	tokens, ok := byID[render.ID("chart", "vllm-0", "tokens")]
	if !ok || tokens.Nulls == 0 {
		t.Errorf("vllm-0's tokens chart has no null point in its gap: %+v", tokens)
	}
	// Hovering a line shows its human name and, beside it, the canonical one.
	tip, err := p.HoverChart(render.ID("chart", "vllm-1", "tokens"), 0, 30)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "tokens tooltip", tip, "decode", "decode_tokens_per_second", "tokens/s")
	// Hovering a partial sum says how many engines it covers.
	at, err := browsertest.Eval[int](p, `(function () {
		var ch = echarts.getInstanceByDom(document.getElementById('fleet-decode'));
		var s = ch.getOption().series[1];
		if (!s || !Array.isArray(s.data)) return -1;
		var mid = s.data.length / 2;
		for (var i = 0; i < s.data.length; i++) {
			var k = Math.floor(mid + (i % 2 ? -1 : 1) * Math.ceil(i / 2));
			if (k >= 0 && k < s.data.length && s.data[k][1] !== null) return k;
		}
		return -1;
	})()`)
	if err != nil || at < 0 {
		t.Fatalf("the fleet chart has no partial sum drawn (%v)", err)
	}
	tip, err = p.HoverChart("fleet-decode", 1, at)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "partial sum tooltip", tip, "2 of 3 engines had a value", "1 did not answer", "fewer engines: ")
}

// The shipped recording's charts hold to the same: no legend paged, human
// names, units on every y axis, shadings in the legend, no empty chart.
func TestFindingsChartsReadable(t *testing.T) {
	path := writeReport(t, findingsReport(t))
	br := browsertest.Start(t)
	p := loadAndDraw(t, br, path)
	defer checkClean(t, p)
	facts := readCharts(t, p)
	checkCharts(t, facts)
	// The restart and the HTTP 500 spell leave gaps: some line has a null.
	nulls := 0
	for _, f := range facts {
		nulls += f.Nulls
	}
	if nulls == 0 {
		t.Error("no chart of a recording with holes has a null point")
	}
}
