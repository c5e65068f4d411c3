package render

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/render/downsample"
)

// DefaultBudget is the number of points a series is drawn with at most
// (about; see downsample.MinMax, which adds three per run of nulls) when
// TimeSeries.Budget is 0. At about 17 bytes a point, 17 series a target and
// 8 targets, the page of a 24-hour run stays under 5 MB with ECharts' 1.1 MB.
const DefaultBudget = 800

// TimeSeries is a line chart over time: one line per series, nulls drawn
// as gaps (never joined across), the spans where a series has no value
// shaded and named by their reasons, horizontal severity bands and marked
// incidents. Long series are downsampled for drawing with downsample.MinMax,
// which keeps every spike, every gap and every point flagged Keep.
type TimeSeries struct {
	ID      string
	Title   string
	Notes   []string
	T0      float64  // Unix seconds at the left of the x axis; 0 means the first point's T
	Unit    string   // the y axis's name and shown after values: "tokens/s", "requests", "s" (drawn as "ms" below one second)
	Percent bool     // values are ratios 0..1, shown as percentages
	YMin    rate.Num // a fixed y range, where one makes sense (KV usage 0..1)
	YMax    rate.Num
	Series  []Series
	Bands   []Band // horizontal bands: severity ranges of the value
	Marks   []Mark // vertical ranges: incidents (class warn or fail), phases (class ok)
	// Partial are spans where the chart's sum covers fewer members than it
	// has (the fleet's engines): shaded, their labels on hover. Points with
	// ReasonPartial are not shaded as refused.
	Partial []Mark
	Budget  int // points per series drawn at most; 0 means DefaultBudget
	Height  int
	// Relative: T are seconds from 0 (a phase-relative axis, as a diff
	// overlays two runs), not Unix times: the axis starts at 0 and is
	// labelled with plain seconds.
	Relative bool
}

// Series is one line.
type Series struct {
	Name    string  // the human name: legend and tooltip (see NameOf)
	Canon   string  // the canonical cell name, shown on hover; "" for none
	Points  []Point // ascending T
	Step    bool    // drawn as steps: gauges that hold their value between polls
	Markers bool    // drawn as points with no line: values that do not join up, such as partial sums
	// Symbol is the ECharts symbol of a Markers series ("" = diamond):
	// a scatter of requests marks its errors with another.
	Symbol string
}

// Point is one poll's value of a series: a rate.Cell, null when the value
// is missing or refused, with the provenance that Prov makes of it. Prov
// is only made for the points drawn.
type Point struct {
	T    float64   // Unix seconds
	Cell rate.Cell // the value, its source, window and reason
	Prov string    // replaces Prov(Cell) when set
	Keep bool      // never dropped when downsampling: incident markers
}

func (p Point) valid() bool {
	v := p.Cell.Value
	return v.Valid && !math.IsNaN(v.V) && !math.IsInf(v.V, 0)
}

func (p Point) prov() string {
	if p.Prov != "" {
		return p.Prov
	}
	return Prov(p.Cell)
}

// Band is a horizontal band of values, such as the warn range of KV usage.
type Band struct {
	From, To float64 // value range; ±Inf reach the edge of the chart
	Class    string  // ClassOK, ClassWarn or ClassFail
	Label    string  // "warn ≥ 75 %"
}

// KVBands are the severity bands of a KV-cache usage ratio, as
// rate.KVSeverity classifies it: ok below 75 %, warn from 75 %, fail from
// 90 %.
func KVBands() []Band {
	return []Band{
		{From: 0, To: 0.75, Class: ClassOK, Label: "ok < 75 %"},
		{From: 0.75, To: 0.9, Class: ClassWarn, Label: "warn ≥ 75 %"},
		{From: 0.9, To: 1, Class: ClassFail, Label: "fail ≥ 90 %"},
	}
}

// Mark is a marked span of time, such as an incident.
type Mark struct {
	From, To float64 // Unix seconds; To == From marks an instant
	Class    string  // ClassWarn or ClassFail: an incident; ClassOK: a phase
	Label    string  // shown on hover
}

// Colours of classes in charts. They match report.css.
var classColour = map[string]string{
	ClassOK:      "rgba(46,160,67,0.10)",
	ClassWarn:    "rgba(212,160,23,0.22)",
	ClassFail:    "rgba(207,34,46,0.16)",
	ClassRefused: "rgba(110,110,110,0.24)",
	ClassUnknown: "rgba(110,110,110,0.10)",
	classPartial: "rgba(9,105,218,0.12)",
}

// classPartial shades the spans of partial sums (TimeSeries.Partial).
const classPartial = "partial"

// Legend colours of the area series: the colour each shading shows on
// the white page, a little deeper so that the legend's small square
// reads; the hue is the shading's, so legend and chart agree.
var legendColour = map[string]string{
	ClassOK:      "#a8dcb3",
	ClassWarn:    "#ecd27f",
	ClassFail:    "#eb9aa0",
	ClassRefused: "#b3b3b3",
	ClassUnknown: "#dcdcdc",
	classPartial: "#9ec5f0",
}

// Names of the helper series that carry areas rather than data: the
// legend names them, in the colour of their shading.
const (
	refusedSeries  = "refused window"     // nulls the estimator refused, with a reason
	absentSeries   = "no data"            // nulls for want of the series, or holes with no poll
	partialSeries  = "fewer engines"      // spans where a sum covers fewer members than it has
	incidentSeries = "incident"           // marks of class warn
	outageSeries   = "restart/down/stall" // marks of class fail
	phaseSeries    = "phase"              // marks of class ok
	bandSeries     = "bands"
	bucketSeries   = "bucket" // the histogram bucket a windowed quantile fell in
)

// ReasonPartial is the reason of a null point of a sum at a poll where
// fewer members answered than there are: the chart shades the span as
// TimeSeries.Partial says, not as a refusal.
const ReasonPartial = "partial"

// lineTypes tell the lines of one chart apart besides their colour, so
// that lines lying on each other for a while stay distinguishable.
var lineTypes = []string{"solid", "dashed", "dotted"}

// Chart lays the time series out as a Chart: downsampled data, the
// provenance table and the ECharts option, built with go-echarts.
//
// Series with no value at any point are left out (a note says so), series
// equal at every point are drawn as one line (a note says so), seconds
// whose magnitude stays under one are drawn as milliseconds, and the
// legend lists every series and every kind of shading in as many rows as
// it needs, never paged.
func (ts TimeSeries) Chart() (Chart, error) {
	if !validID(ts.ID) {
		return Chart{}, fmt.Errorf("render: chart %q: id %q is not of the form ID returns", ts.Title, ts.ID)
	}
	budget := ts.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	t0, tEnd := ts.T0, math.Inf(-1)
	first := math.Inf(1)
	for _, s := range ts.Series {
		if len(s.Points) == 0 {
			continue
		}
		first = min(first, s.Points[0].T)
		tEnd = max(tEnd, s.Points[len(s.Points)-1].T)
		for i := 1; i < len(s.Points); i++ {
			if s.Points[i].T < s.Points[i-1].T {
				return Chart{}, fmt.Errorf("render: chart %s: series %q: point %d is earlier than the one before", ts.ID, s.Name, i)
			}
		}
	}
	if math.IsInf(first, 1) { // no points at all
		first, tEnd = t0, t0
	}
	if t0 == 0 && !ts.Relative {
		t0 = first
	}
	span := max(tEnd-t0, 0)
	// Areas narrower than minWidth are widened to it so that they show
	// (about two pixels of a 1,000-pixel chart); areas closer than
	// mergeGap (four pixels) are drawn as one.
	minWidth, mergeGap := span/1000, span/250

	series, notes := drawable(ts.Series)
	scale := Scale{Factor: 1, Unit: ts.Unit}
	if !ts.Percent {
		scale = ScaleFor(ts.Unit, maxAbs(series))
	}

	provs := provTable{index: map[string]int{}}
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Min: 0, Max: roundX(max(tEnd, t0) - t0)}),
	)
	seriesProv := make([]int, 0, len(series)+6)
	canon := make([]string, 0, len(series)+6)
	legend := make([]legendItem, 0, len(series)+5)
	var drawn, total int
	var buckets []bandOption // the quantiles' buckets, drawn last and behind the lines
	for i, s := range series {
		data, def, idx := timeData(s, t0, budget, scale.Factor, &provs)
		drawn += len(idx)
		if lo, width, ok := bucketBand(s, idx, t0, scale.Factor); ok {
			buckets = append(buckets, bucketBandSeries(i, lo, width)...)
		}
		total += len(s.Points)
		seriesProv = append(seriesProv, def)
		canon = append(canon, s.Canon)
		lo := opts.LineChart{ShowSymbol: opts.Bool(false), ConnectNulls: opts.Bool(false), Symbol: "circle", SymbolSize: 5, Step: stepOf(s.Step)}
		style := opts.LineStyle{Type: lineTypes[i%len(lineTypes)], Width: 1.5}
		if s.Markers { // points, no line
			lo.ShowSymbol, lo.SymbolSize, lo.Symbol = opts.Bool(true), 4, cmp.Or(s.Symbol, "diamond")
			if s.Symbol != "" {
				lo.SymbolSize = 7
			}
			style = opts.LineStyle{Opacity: opts.Float(0)}
		}
		line.AddSeries(s.Name, nil, charts.WithLineChartOpts(lo), charts.WithLineStyleOpts(style))
		line.MultiSeries[len(line.MultiSeries)-1].Data = data
		legend = append(legend, legendItem{Name: s.Name})
	}

	// The spans without a value: one shaded area per run of nulls, runs of
	// every series merged where they overlap or nearly touch; refusals and
	// want of data apart. Then the spans of partial sums and the incidents.
	refused, absent := refusedAreas(series, mergeGap)
	var partial, phase, warn, fail []area
	for _, m := range ts.Partial {
		partial = append(partial, area{from: m.From, to: m.To, label: m.Label})
	}
	for _, m := range ts.Marks {
		a := area{from: m.From, to: m.To, label: m.Label}
		switch {
		case cmp.Or(m.Class, ClassFail) == ClassFail:
			fail = append(fail, a)
		case m.Class == ClassOK:
			phase = append(phase, a)
		default:
			warn = append(warn, a)
		}
	}
	for _, a := range []struct {
		name  string
		class string
		areas []area
	}{
		{phaseSeries, ClassOK, phase}, {refusedSeries, ClassRefused, refused}, {absentSeries, ClassUnknown, absent}, {partialSeries, classPartial, partial},
		{incidentSeries, ClassWarn, warn}, {outageSeries, ClassFail, fail},
	} {
		if len(a.areas) > 0 {
			addAreaSeries(line, a.name, a.class, a.areas, t0, minWidth)
			seriesProv = append(seriesProv, -1)
			canon = append(canon, "")
			legend = append(legend, legendItem{Name: a.name, Icon: "rect"})
		}
	}
	if len(ts.Bands) > 0 {
		// A band open at one end reaches the fixed end of the axis, or else
		// the drawn value farthest out (ECharts takes no infinity).
		lo, hi := valueRange(series)
		if ts.YMin.Valid {
			lo = ts.YMin.V
		}
		if ts.YMax.Valid {
			hi = ts.YMax.V
		}
		edge := func(v float64) float64 {
			switch {
			case math.IsInf(v, 1) || math.IsNaN(v):
				v = max(hi, ts.Bands[0].From, ts.Bands[len(ts.Bands)-1].From)
			case math.IsInf(v, -1):
				v = min(lo, ts.Bands[0].To, ts.Bands[len(ts.Bands)-1].To)
			}
			return v * scale.Factor
		}
		bands := make([]any, 0, len(ts.Bands))
		for _, b := range ts.Bands {
			bands = append(bands, []yMark{
				{Name: b.Label, YAxis: edge(b.From), ItemStyle: &opts.ItemStyle{Color: classColour[b.Class]}},
				{YAxis: edge(b.To)},
			})
		}
		line.AddSeries(bandSeries, nil, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
		s := &line.MultiSeries[len(line.MultiSeries)-1]
		s.Data = []any{}
		s.MarkAreas = &opts.MarkAreas{Data: bands, MarkAreaStyle: opts.MarkAreaStyle{
			Label: &opts.Label{Show: opts.Bool(true), Position: "insideTopRight", Color: "#57606a"},
		}}
		seriesProv = append(seriesProv, -1)
		canon = append(canon, "")
	}
	line.Validate()
	option := line.JSON()
	if len(buckets) > 0 {
		ms, ok := option["series"].(charts.MultiSeries)
		if !ok {
			return Chart{}, fmt.Errorf("render: chart %s: go-echarts' series are %T, not MultiSeries", ts.ID, option["series"])
		}
		all := make([]any, 0, len(ms)+len(buckets))
		for _, s := range ms {
			all = append(all, s)
		}
		for _, b := range buckets {
			all = append(all, b)
			seriesProv = append(seriesProv, -1)
			canon = append(canon, "")
		}
		option["series"] = all
		legend = append(legend, legendItem{Name: bucketSeries, Icon: "rect"})
	}
	rows := legendRows(legend)
	option["legend"] = legendOption{Type: "plain", Top: 0, Left: 8, Right: 8, ItemGap: legendGap, ItemWidth: legendIcon, ItemHeight: 10, Data: legend}
	option["grid"] = gridOption{Left: 72, Right: 24, Top: gridTop(rows), Bottom: 56}
	option["yAxis"] = yAxisOf(scale.Unit, ts.Percent, ts.YMin, ts.YMax, scale.Factor)
	// Zoom with the wheel or the slider. go-echarts' DataZoom has no
	// showDataShadow: the slider's shadow of the data would double the
	// time to draw a long chart.
	option["dataZoom"] = []dataZoom{
		{Type: "inside", FilterMode: "none"},
		{Type: "slider", FilterMode: "none", ShowDataShadow: false, Height: 18, Bottom: 8},
	}

	notes = append(slices.Clone(ts.Notes), notes...)
	if drawn < total {
		notes = append(notes, fmt.Sprintf("Drawn with %s of %s points: per bucket the lowest and highest value, every gap and every incident kept; tables use all points.", thousands(drawn), thousands(total)))
	}
	x := XElapsed
	if ts.Relative {
		x = XValue
	}
	return Chart{
		ID: ts.ID, Title: ts.Title, Notes: notes, Height: heightFor(ts.Height, rows),
		Option: option, Prov: provs.list, SeriesProv: seriesProv, SeriesCanon: canon,
		X: x, T0: t0, Unit: scale.Unit, Percent: ts.Percent,
	}, nil
}

// drawable returns the series worth a line, with notes on the others: a
// series with no value at any point draws nothing and is left out (its
// reasons said in a note); a series equal to an earlier one at every point
// is drawn as that one, named after both.
func drawable(series []Series) ([]Series, []string) {
	var out []Series
	var notes []string
	for _, s := range series {
		if !slices.ContainsFunc(s.Points, Point.valid) {
			if len(s.Points) > 0 {
				notes = append(notes, fmt.Sprintf("%s: no value at any poll (%s); not drawn.", s.Name, refusedLabel(nil, nullReasons(s.Points))))
			}
			continue
		}
		merged := false
		for i := range out {
			if sameValues(out[i].Points, s.Points) {
				notes = append(notes, fmt.Sprintf("%s equals %s at every poll: drawn as one line.", s.Name, out[i].Name))
				out[i].Name += " = " + s.Name
				out[i].Canon = strings.Trim(out[i].Canon+", "+s.Canon, ", ")
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, s)
		}
	}
	return out, notes
}

// nullReasons counts the reasons of the null points.
func nullReasons(pts []Point) map[string]int {
	m := map[string]int{}
	for _, p := range pts {
		if !p.valid() {
			m[cmp.Or(p.Cell.Reason, rate.ReasonAbsent)]++
		}
	}
	return m
}

// sameValues reports whether two series have the same times, the same
// nulls and the same values.
func sameValues(a, b []Point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].T != b[i].T || a[i].valid() != b[i].valid() || a[i].valid() && a[i].Cell.Value.V != b[i].Cell.Value.V {
			return false
		}
	}
	return true
}

// maxAbs is the largest magnitude of a value of the series, 0 with none.
func maxAbs(series []Series) float64 {
	m := 0.0
	for _, s := range series {
		for _, p := range s.Points {
			if p.valid() {
				m = max(m, math.Abs(p.Cell.Value.V))
			}
		}
	}
	return m
}

// legendItem is one entry of a chart's legend; Icon "rect" for shading.
type legendItem struct {
	Name string `json:"name"`
	Icon string `json:"icon,omitempty"`
}

type legendOption struct {
	Type       string       `json:"type"` // "plain": it wraps to more rows, never pages
	Top        int          `json:"top"`
	Left       int          `json:"left"`
	Right      int          `json:"right"`
	ItemGap    int          `json:"itemGap"`
	ItemWidth  int          `json:"itemWidth"`
	ItemHeight int          `json:"itemHeight"`
	Data       []legendItem `json:"data"`
}

type gridOption struct {
	Left   int `json:"left"`
	Right  int `json:"right"`
	Top    int `json:"top"`
	Bottom int `json:"bottom"`
}

// The legend's layout: its icons and gaps in pixels, the width it is
// planned for (a chart in the narrowest column of the page, 520 pixels,
// less its padding and some slack), a row's height, and the width of a
// character of its 12-pixel font, generously.
const (
	legendIcon  = 18
	legendGap   = 10
	legendWidth = 460
	legendRow   = 20
	legendChar  = 7
)

// legendRows is how many rows the legend takes at legendWidth.
func legendRows(items []legendItem) int {
	rows, used := 1, 0
	for _, it := range items {
		w := legendIcon + 5 + legendChar*utf8.RuneCountInString(it.Name)
		if used > 0 && used+legendGap+w > legendWidth {
			rows++
			used = 0
		}
		if used > 0 {
			used += legendGap
		}
		used += w
	}
	return rows
}

// gridTop leaves room for the legend's rows above the plot.
func gridTop(rows int) int { return 16 + legendRow*rows }

// heightFor is a chart's height: the one asked for, else 280 pixels for
// a one-row legend and a row's more for each further row.
func heightFor(h, rows int) int {
	if h > 0 {
		return h
	}
	return 280 + legendRow*(rows-1)
}

// yAxisOption is a value axis named by its unit, the name along the axis
// (not above it, where the legend is).
type yAxisOption struct {
	Type         string   `json:"type"`
	Name         string   `json:"name"`
	NameLocation string   `json:"nameLocation"`
	NameGap      int      `json:"nameGap"`
	NameRotate   int      `json:"nameRotate"`
	Scale        bool     `json:"scale"`
	Min          *float64 `json:"min,omitempty"`
	Max          *float64 `json:"max,omitempty"`
}

// yAxisOf is the y axis of values in unit (percent: ratios shown as %),
// fixed to lo and hi where they are valid, scaled by factor.
func yAxisOf(unit string, percent bool, lo, hi rate.Num, factor float64) yAxisOption {
	y := yAxisOption{Type: "value", Name: unit, NameLocation: "middle", NameGap: 52, NameRotate: 90, Scale: !lo.Valid}
	if percent {
		y.Name = "%"
	}
	if lo.Valid {
		v := lo.V * factor
		y.Min = &v
	}
	if hi.Valid {
		v := hi.V * factor
		y.Max = &v
	}
	return y
}

// dataZoom is an ECharts dataZoom component on the x axis.
type dataZoom struct {
	Type           string `json:"type"`
	FilterMode     string `json:"filterMode"`
	ShowDataShadow bool   `json:"showDataShadow"`
	Height         int    `json:"height,omitempty"`
	Bottom         int    `json:"bottom,omitempty"`
}

// yMark is one end of a horizontal markArea. go-echarts' MarkAreaData
// spells the key "YAxis", which ECharts does not read.
type yMark struct {
	Name      string          `json:"name,omitempty"`
	YAxis     float64         `json:"yAxis"`
	ItemStyle *opts.ItemStyle `json:"itemStyle,omitempty"`
}

// valueRange returns the lowest and highest value of the series, 0 and 1
// when they have none.
func valueRange(series []Series) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			if p.valid() {
				lo, hi = min(lo, p.Cell.Value.V), max(hi, p.Cell.Value.V)
			}
		}
	}
	if lo > hi {
		return 0, 1
	}
	return lo, hi
}

func stepOf(step bool) any {
	if step {
		return "end"
	}
	return nil
}

// provTable numbers distinct provenance texts in order of first use.
type provTable struct {
	list  []string
	index map[string]int
}

func (p *provTable) id(s string) int {
	if i, ok := p.index[s]; ok {
		return i
	}
	p.index[s] = len(p.list)
	p.list = append(p.list, s)
	return len(p.list) - 1
}

// timeData returns the drawn points of s as ECharts data, [x, y] or
// [x, y, prov], x in seconds since t0 to a tenth and y to five
// significant digits (the tooltip shows four); the series' default provenance (the most common one
// among the drawn points, which [x, y] items have); and the indexes in
// s.Points of the points drawn.
func timeData(s Series, t0 float64, budget int, factor float64, provs *provTable) (json.RawMessage, int, []int) {
	pts := make([]downsample.Point, len(s.Points))
	for i, p := range s.Points {
		pts[i] = downsample.Point{X: p.T, Y: p.Cell.Value.V, Null: !p.valid(), Keep: p.Keep}
	}
	idx := downsample.MinMax(pts, budget)
	ids := make([]int, len(idx))
	counts := map[int]int{}
	def := -1
	for k, i := range idx {
		ids[k] = provs.id(s.Points[i].prov())
		counts[ids[k]]++
		if def < 0 || counts[ids[k]] > counts[def] || counts[ids[k]] == counts[def] && ids[k] < def {
			def = ids[k]
		}
	}
	b := make([]byte, 0, 24*len(idx)+2)
	b = append(b, '[')
	for k, i := range idx {
		p := s.Points[i]
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendFloat(b, roundX(p.T-t0), 'f', -1, 64)
		b = append(b, ',')
		if pts[i].Null {
			b = append(b, "null"...)
		} else {
			b = appendY(b, p.Cell.Value.V*factor)
		}
		if ids[k] != def {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(ids[k]), 10)
		}
		b = append(b, ']')
	}
	b = append(b, ']')
	return b, def, idx
}

// bucketBand returns, for a series of quantiles read from histogram
// buckets, the band of their buckets at the drawn points idx as two
// stacked ECharts series' data: each bucket's lo, and hi − lo above it.
// A point without a bounded bucket (no value, no bucket, the overflow
// past the top finite bound whose hi is null) is null in both: a gap.
func bucketBand(s Series, idx []int, t0, factor float64) (lo, width json.RawMessage, ok bool) {
	// Points, not lines, and series of no quantile: nothing to shade.
	if s.Markers || !slices.ContainsFunc(idx, func(i int) bool { return !s.Points[i].Cell.Bucket.IsZero() }) {
		return nil, nil, false
	}
	lo = make([]byte, 0, 16*len(idx)+2)
	width = make([]byte, 0, 16*len(idx)+2)
	lo, width = append(lo, '['), append(width, '[')
	for k, i := range idx {
		p := s.Points[i]
		if k > 0 {
			lo, width = append(lo, ','), append(width, ',')
		}
		x := strconv.AppendFloat(nil, roundX(p.T-t0), 'f', -1, 64)
		lo = append(append(append(lo, '['), x...), ',')
		width = append(append(append(width, '['), x...), ',')
		b := p.Cell.Bucket
		if p.valid() && b.Lo.Valid && b.Hi.Valid {
			lo = appendY(lo, b.Lo.V*factor)
			width = appendY(width, (b.Hi.V-b.Lo.V)*factor)
		} else {
			lo, width = append(lo, "null"...), append(width, "null"...)
		}
		lo, width = append(lo, ']'), append(width, ']')
	}
	return append(lo, ']'), append(width, ']'), true
}

// bandOption is one of the two stacked line series of a bucket band,
// written as ECharts takes it (go-echarts has no series tooltip.show):
// no symbols, no line, out of the tooltip, under the lines.
type bandOption struct {
	Name         string          `json:"name"`
	Type         string          `json:"type"`
	Stack        string          `json:"stack"`
	Data         json.RawMessage `json:"data"`
	ShowSymbol   bool            `json:"showSymbol"`
	Symbol       string          `json:"symbol"`
	ConnectNulls bool            `json:"connectNulls"`
	Silent       bool            `json:"silent"`
	Z            int             `json:"z"`
	LineStyle    struct {
		Opacity float64 `json:"opacity"`
	} `json:"lineStyle"`
	ItemStyle struct {
		Color string `json:"color"`
	} `json:"itemStyle"`
	AreaStyle *struct {
		Color string `json:"color"`
	} `json:"areaStyle,omitempty"`
	Tooltip struct {
		Show bool `json:"show"`
	} `json:"tooltip"`
}

// Colours of the bucket band: the shading, and its legend square.
const (
	bucketColour       = "rgba(84,112,198,0.14)"
	bucketLegendColour = "#c3cde9"
)

// bucketBandSeries are the two series of line i's bucket band: lo, transparent,
// and hi − lo stacked on it and shaded.
func bucketBandSeries(i int, lo, width json.RawMessage) []bandOption {
	b := bandOption{Name: bucketSeries, Type: "line", Stack: bucketSeries + strconv.Itoa(i), Symbol: "none", Z: 1}
	b.ItemStyle.Color = bucketLegendColour
	l, w := b, b
	l.Data, w.Data = lo, width
	w.AreaStyle = &struct {
		Color string `json:"color"`
	}{bucketColour}
	return []bandOption{l, w}
}

// appendY appends y with five significant digits, in the shortest form.
func appendY(b []byte, y float64) []byte {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(y, 'g', 5, 64), 64)
	return strconv.AppendFloat(b, r, 'g', -1, 64)
}

// roundX rounds seconds on the x axis to a tenth: finer than a pixel of
// any chart of a run longer than a minute and a half, and shorter to write.
func roundX(x float64) float64 { return math.Round(x*10) / 10 }

// area is a shaded span of time with a label.
type area struct {
	from, to float64
	label    string
}

// refusedAreas returns the spans where a series has no value: from the last
// value before a run of nulls to the first one after it (the gap the line
// leaves), merged across series where spans overlap or lie closer than
// mergeGap, and labelled with the reasons and counts of the nulls they hold
// (and the series, when not all of them). Spans of refusals and spans of
// absent data are returned apart.
func refusedAreas(series []Series, mergeGap float64) (refused, absent []area) {
	type run struct {
		from, to float64
		series   string
		reasons  map[string]int
	}
	var runs [2][]run // refused, absent
	for _, s := range series {
		pts := s.Points
		for i := 0; i < len(pts); i++ {
			if pts[i].valid() {
				continue
			}
			r := run{from: pts[i].T, series: s.Name, reasons: map[string]int{}}
			if i > 0 {
				r.from = pts[i-1].T
			}
			j := i
			for ; j < len(pts) && !pts[j].valid(); j++ {
				r.reasons[cmp.Or(pts[j].Cell.Reason, rate.ReasonAbsent)]++
			}
			r.to = pts[j-1].T
			if j < len(pts) {
				r.to = pts[j].T
			}
			// Absent series and holes with no poll are no data; every
			// other null was refused. A partial sum's null is shaded by
			// TimeSeries.Partial.
			k := 1
			partial := true
			for reason := range r.reasons {
				if reason != rate.ReasonAbsent && reason != analyze.BreakGap && reason != analyze.BreakAway {
					k = 0
				}
				partial = partial && reason == ReasonPartial
			}
			if !partial {
				runs[k] = append(runs[k], r)
			}
			i = j
		}
	}
	var out [2][]area
	for k := range runs {
		slices.SortStableFunc(runs[k], func(a, b run) int { return cmp.Compare(a.from, b.from) })
		for i := 0; i < len(runs[k]); {
			rs := runs[k]
			from, to := rs[i].from, rs[i].to
			reasons := map[string]int{}
			var names []string
			j := i
			for ; j < len(rs) && rs[j].from <= to+mergeGap; j++ {
				to = max(to, rs[j].to)
				for r, n := range rs[j].reasons {
					reasons[r] += n
				}
				if !slices.Contains(names, rs[j].series) {
					names = append(names, rs[j].series)
				}
			}
			if len(names) == len(series) {
				names = nil // every series: no need to say which
			}
			out[k] = append(out[k], area{from: from, to: to, label: refusedLabel(names, reasons)})
			i = j
		}
	}
	return out[0], out[1]
}

// refusedLabel says why there is no value, and for which series when
// names is not empty: "p95, p99: stale ×3, reset ×1".
func refusedLabel(names []string, reasons map[string]int) string {
	keys := make([]string, 0, len(reasons))
	for r := range reasons {
		keys = append(keys, r)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(reasons[b], reasons[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, reasons[k])
	}
	label := strings.Join(parts, ", ")
	if len(names) == 0 {
		return label
	}
	const most = 4
	if len(names) > most {
		names = append(names[:most:most], fmt.Sprintf("%d more", len(names)-most))
	}
	return strings.Join(names, ", ") + ": " + label
}

// markX is one end of a vertical markArea: go-echarts' MarkAreaData would
// write an empty itemStyle beside every item.
type markX struct {
	Name      string          `json:"name,omitempty"`
	XAxis     float64         `json:"xAxis"`
	ItemStyle *opts.ItemStyle `json:"itemStyle,omitempty"`
}

// addAreaSeries adds a series with no data whose markArea shades the areas
// in the colour of class, its legend icon in the same hue.
func addAreaSeries(line *charts.Line, name, class string, areas []area, t0, minWidth float64) {
	data := make([]any, 0, len(areas))
	for _, a := range areas {
		from, to := a.from-t0, a.to-t0
		if to-from < minWidth { // too narrow to see: widen around its middle
			mid := (from + to) / 2
			from, to = mid-minWidth/2, mid+minWidth/2
		}
		start := markX{Name: a.label, XAxis: roundX(from)}
		data = append(data, []markX{start, {XAxis: roundX(to)}})
	}
	line.AddSeries(name, nil, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: legendColour[class]}))
	s := &line.MultiSeries[len(line.MultiSeries)-1]
	s.Data = []any{}
	s.MarkAreas = &opts.MarkAreas{Data: data, MarkAreaStyle: opts.MarkAreaStyle{
		Label:     &opts.Label{Show: opts.Bool(false)},
		ItemStyle: &opts.ItemStyle{Color: classColour[class]},
	}}
}

// thousands formats n with thin separators: 43,200.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
