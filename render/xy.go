package render

import (
	"fmt"
	"math"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/llmrec/llmrec/analyze/rate"
)

// XY is a chart of one quantity against another, such as throughput
// against offered load: each series a line through its points in the
// order given (or markers only), both axes from zero, a null point left
// out and named in the notes by whoever builds it.
type XY struct {
	ID    string
	Title string
	Notes []string
	XName string // the x axis's name with its unit: "offered load (requests)"
	Unit  string // the y axis's name and shown after values
	// Series are drawn in order; a series of Markers has no line (a
	// Pareto front drawn over the levels).
	Series []XYSeries
	Height int
}

// XYSeries is one line of an XY chart.
type XYSeries struct {
	Name    string
	Points  []XYPoint
	Markers bool
}

// XYPoint is one point with its provenance (shown on hover).
type XYPoint struct {
	X, Y rate.Num
	Prov string
}

// Chart lays the XY chart out as a Chart, built with go-echarts.
func (c XY) Chart() (Chart, error) {
	if !validID(c.ID) {
		return Chart{}, fmt.Errorf("render: chart %q: id %q is not of the form ID returns", c.Title, c.ID)
	}
	provs := provTable{index: map[string]int{}}
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: c.XName, NameLocation: "middle", NameGap: 28, Min: 0}),
	)
	legend := make([]legendItem, 0, len(c.Series))
	seriesProv := make([]int, len(c.Series))
	for si, s := range c.Series {
		var data [][3]any
		for _, p := range s.Points {
			// A point without both coordinates is not drawn.
			if !finite(p.X) || !finite(p.Y) {
				continue
			}
			data = append(data, [3]any{p.X.V, p.Y.V, provs.id(p.Prov)})
		}
		lo := opts.LineChart{ShowSymbol: opts.Bool(true), SymbolSize: 8}
		style := opts.LineStyle{Type: lineTypes[si%len(lineTypes)]}
		if s.Markers { // points, no line
			lo.Symbol, lo.SymbolSize = "diamond", 14
			style = opts.LineStyle{Opacity: opts.Float(0)}
		}
		line.AddSeries(s.Name, nil, charts.WithLineChartOpts(lo), charts.WithLineStyleOpts(style))
		line.MultiSeries[len(line.MultiSeries)-1].Data = data
		seriesProv[si] = -1
		legend = append(legend, legendItem{Name: s.Name})
	}
	line.Validate()
	option := line.JSON()
	rows := legendRows(legend)
	option["legend"] = legendOption{Type: "plain", Top: 0, Left: 8, Right: 8, ItemGap: legendGap, ItemWidth: legendIcon, ItemHeight: 10, Data: legend}
	option["grid"] = gridOption{Left: 72, Right: 24, Top: gridTop(rows), Bottom: 48}
	option["yAxis"] = yAxisOf(c.Unit, false, rate.Some(0), rate.Num{}, 1) // from zero
	return Chart{
		ID: c.ID, Title: c.Title, Notes: c.Notes, Height: heightFor(c.Height, rows),
		Option: option, Prov: provs.list, SeriesProv: seriesProv, X: XValue, Unit: c.Unit,
	}, nil
}

// finite reports whether n is a number that can be drawn.
func finite(n rate.Num) bool { return n.Valid && !math.IsNaN(n.V) && !math.IsInf(n.V, 0) }
