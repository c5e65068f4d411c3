package render_test

import (
	"strings"
	"testing"

	"github.com/llmrec/llmrec/render/browsertest"
)

// The sweep's charts draw in Chromium: on the shipped recording (vllm-0
// ran at five levels) its three charts hold a point per level on every
// line, both axes start at zero, and the Pareto front is drawn over the
// levels with at least one of them; hovering a point names its level's
// provenance.
func TestSweepChartsDraw(t *testing.T) {
	path := writeReport(t, findingsReport(t))
	br := browsertest.Start(t)
	p := loadAndDraw(t, br, path)
	defer checkClean(t, p)
	type chart struct {
		ID         string
		XMin, YMin any
		Series     []struct {
			Name   string
			Points int
		}
	}
	got, err := browsertest.Eval[[]chart](p, `(function () {
		var out = [];
		document.querySelectorAll('div.chart[id^="sweep-"]').forEach(function (div) {
			var o = echarts.getInstanceByDom(div).getOption();
			var c = {ID: div.id, XMin: o.xAxis[0].min, YMin: o.yAxis[0].min, Series: []};
			o.series.forEach(function (s) { c.Series.push({Name: s.name, Points: (s.data || []).length}); });
			out.push(c);
		});
		return out;
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d sweep charts drawn, want 3 (throughput, latency, Pareto): %+v", len(got), got)
	}
	for _, c := range got {
		if c.XMin != float64(0) || c.YMin != float64(0) {
			t.Errorf("%s: axes start at x %v, y %v; want 0 and 0", c.ID, c.XMin, c.YMin)
		}
		for _, s := range c.Series {
			want := 5
			if s.Name == "Pareto front" {
				if s.Points < 1 || s.Points > 5 {
					t.Errorf("%s: the Pareto front has %d points", c.ID, s.Points)
				}
				continue
			}
			if s.Points != want {
				t.Errorf("%s: %q has %d points, want %d (one per level)", c.ID, s.Name, s.Points, want)
			}
		}
	}
	tip, err := p.HoverChart(got[0].ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tip, "steady") || !strings.Contains(tip, "Δ") {
		t.Errorf("sweep tooltip %q lacks the level and its provenance", tip)
	}
}
