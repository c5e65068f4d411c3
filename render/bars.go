package render

import (
	"fmt"
	"math"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Bars is a bar chart over categories, such as the settle polls per span:
// one bar per category and series, a null value drawn as no bar and named
// in the tooltip with its provenance.
type Bars struct {
	ID         string
	Title      string
	Notes      []string
	Unit       string // the y axis's name and shown after values: one unit per chart
	Percent    bool
	XName      string   // the axis title: "span"
	Categories []string // the x axis, in order
	Series     []BarSeries
	Height     int
}

// BarSeries is one series of bars: one value per category.
type BarSeries struct {
	Name   string
	Values []Value
}

// Value is one bar's value with its provenance.
type Value struct {
	V    rate.Num
	Prov string
}

// Chart lays the bars out as a Chart, built with go-echarts.
func (bs Bars) Chart() (Chart, error) {
	if !validID(bs.ID) {
		return Chart{}, fmt.Errorf("render: chart %q: id %q is not of the form ID returns", bs.Title, bs.ID)
	}
	provs := provTable{index: map[string]int{}}
	bar := charts.NewBar()
	bar.SetGlobalOptions(
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: bs.XName, Data: bs.Categories}),
	)
	bar.SetXAxis(bs.Categories)
	seriesProv := make([]int, len(bs.Series))
	legend := make([]legendItem, 0, len(bs.Series))
	for si, s := range bs.Series {
		if len(s.Values) != len(bs.Categories) {
			return Chart{}, fmt.Errorf("render: chart %s: series %q has %d values for %d categories", bs.ID, s.Name, len(s.Values), len(bs.Categories))
		}
		data := make([][3]any, len(s.Values))
		for i, v := range s.Values {
			var y any // a null bar
			if v.V.Valid && !math.IsNaN(v.V.V) && !math.IsInf(v.V.V, 0) {
				y = v.V.V
			}
			data[i] = [3]any{i, y, provs.id(v.Prov)}
		}
		seriesProv[si] = -1
		bar.AddSeries(s.Name, nil)
		legend = append(legend, legendItem{Name: s.Name})
		bar.MultiSeries[len(bar.MultiSeries)-1].Data = data
	}
	bar.Validate()
	option := bar.JSON()
	rows := legendRows(legend)
	option["legend"] = legendOption{Type: "plain", Top: 0, Left: 8, Right: 8, ItemGap: legendGap, ItemWidth: legendIcon, ItemHeight: 10, Data: legend}
	option["grid"] = gridOption{Left: 72, Right: 24, Top: gridTop(rows), Bottom: 40}
	option["yAxis"] = yAxisOf(bs.Unit, bs.Percent, rate.Some(0), rate.Num{}, 1) // bars start at 0
	return Chart{
		ID: bs.ID, Title: bs.Title, Notes: bs.Notes, Height: heightFor(bs.Height, rows),
		Option: option, Prov: provs.list, SeriesProv: seriesProv,
		X: XCategory, Unit: bs.Unit, Percent: bs.Percent,
	}, nil
}
