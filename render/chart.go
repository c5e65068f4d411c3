package render

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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
	Unit    string   // shown after values: "tokens/s", "requests", "s"
	Percent bool     // values are ratios 0..1, shown as percentages
	YMin    rate.Num // a fixed y range, where one makes sense (KV usage 0..1)
	YMax    rate.Num
	Series  []Series
	Bands   []Band // horizontal bands: severity ranges of the value
	Marks   []Mark // vertical ranges: incidents
	Budget  int    // points per series drawn at most; 0 means DefaultBudget
	Height  int
	// Relative: T are seconds from 0 (a phase-relative axis, as a diff
	// overlays two runs), not Unix times: the axis starts at 0 and is
	// labelled with plain seconds.
	Relative bool
}

// Series is one line.
type Series struct {
	Name   string
	Points []Point // ascending T
	Step   bool    // drawn as steps: gauges that hold their value between polls
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
	Class    string  // ClassWarn or ClassFail
	Label    string  // shown on hover
}

// Colours of classes in charts. They match report.css.
var classColour = map[string]string{
	ClassOK:      "rgba(46,160,67,0.10)",
	ClassWarn:    "rgba(212,160,23,0.16)",
	ClassFail:    "rgba(207,34,46,0.14)",
	ClassRefused: "rgba(110,110,110,0.22)",
	ClassUnknown: "rgba(110,110,110,0.10)",
}

// Legend colours of the area series, opaque versions of classColour.
var legendColour = map[string]string{
	ClassFail:    "#cf222e",
	ClassRefused: "#8c8c8c",
	ClassUnknown: "#bdbdbd",
}

// Names of the helper series that carry areas rather than data.
const (
	refusedSeries  = "refused" // nulls the estimator refused, with a reason
	absentSeries   = "no data" // nulls for want of the series
	incidentSeries = "incidents"
	bandSeries     = "bands"
)

// Chart lays the time series out as a Chart: downsampled data, the
// provenance table and the ECharts option, built with go-echarts.
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

	provs := provTable{index: map[string]int{}}
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "0"}),
		charts.WithGridOpts(opts.Grid{Left: "64", Right: "24", Top: "48", Bottom: "56"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Min: 0, Max: roundX(max(tEnd, t0) - t0)}),
		charts.WithYAxisOpts(yAxis(ts.Unit, ts.Percent, ts.YMin, ts.YMax)),
	)
	seriesProv := make([]int, 0, len(ts.Series)+3)
	var drawn, total int
	for _, s := range ts.Series {
		data, def, n := timeData(s, t0, budget, &provs)
		drawn += n
		total += len(s.Points)
		seriesProv = append(seriesProv, def)
		line.AddSeries(s.Name, nil, charts.WithLineChartOpts(opts.LineChart{
			ShowSymbol: opts.Bool(false), ConnectNulls: opts.Bool(false), Symbol: "circle", SymbolSize: 5, Step: stepOf(s.Step),
		}))
		line.MultiSeries[len(line.MultiSeries)-1].Data = data
	}
	legend := make([]string, 0, len(ts.Series)+2)
	for _, s := range ts.Series {
		legend = append(legend, s.Name)
	}

	// The spans without a value: one shaded area per run of nulls, runs of
	// every series merged where they overlap or nearly touch; refusals and
	// want of data apart.
	refused, absent := refusedAreas(ts.Series, mergeGap)
	for _, a := range []struct {
		name  string
		class string
		areas []area
	}{{refusedSeries, ClassRefused, refused}, {absentSeries, ClassUnknown, absent}} {
		if len(a.areas) > 0 {
			addAreaSeries(line, a.name, a.class, a.areas, t0, minWidth)
			seriesProv = append(seriesProv, -1)
			legend = append(legend, a.name)
		}
	}
	if len(ts.Marks) > 0 {
		areas := make([]area, 0, len(ts.Marks))
		for _, m := range ts.Marks {
			areas = append(areas, area{from: m.From, to: m.To, label: m.Label, class: cmp.Or(m.Class, ClassFail)})
		}
		addAreaSeries(line, incidentSeries, ClassFail, areas, t0, minWidth)
		seriesProv = append(seriesProv, -1)
		legend = append(legend, incidentSeries)
	}
	if len(ts.Bands) > 0 {
		// A band open at one end reaches the fixed end of the axis, or else
		// the drawn value farthest out (ECharts takes no infinity).
		lo, hi := valueRange(ts.Series)
		if ts.YMin.Valid {
			lo = ts.YMin.V
		}
		if ts.YMax.Valid {
			hi = ts.YMax.V
		}
		edge := func(v float64) float64 {
			switch {
			case math.IsInf(v, 1) || math.IsNaN(v):
				return max(hi, ts.Bands[0].From, ts.Bands[len(ts.Bands)-1].From)
			case math.IsInf(v, -1):
				return min(lo, ts.Bands[0].To, ts.Bands[len(ts.Bands)-1].To)
			}
			return v
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
	}
	line.SetGlobalOptions(charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "0", Data: legend}))
	line.Validate()
	option := line.JSON()
	// Zoom with the wheel or the slider. go-echarts' DataZoom has no
	// showDataShadow: the slider's shadow of the data would double the
	// time to draw a long chart.
	option["dataZoom"] = []dataZoom{
		{Type: "inside", FilterMode: "none"},
		{Type: "slider", FilterMode: "none", ShowDataShadow: false, Height: 18, Bottom: 8},
	}

	notes := slices.Clone(ts.Notes)
	if drawn < total {
		notes = append(notes, fmt.Sprintf("Drawn with %s of %s points: per bucket the lowest and highest value, every gap and every incident kept; tables use all points.", thousands(drawn), thousands(total)))
	}
	x := XElapsed
	if ts.Relative {
		x = XValue
	}
	return Chart{
		ID: ts.ID, Title: ts.Title, Notes: notes, Height: ts.Height,
		Option: option, Prov: provs.list, SeriesProv: seriesProv,
		X: x, T0: t0, Unit: ts.Unit, Percent: ts.Percent,
	}, nil
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

func yAxis(unit string, percent bool, lo, hi rate.Num) opts.YAxis {
	y := opts.YAxis{Type: "value", Name: unit, Scale: opts.Bool(!lo.Valid)}
	if percent {
		y.Name = "%"
	}
	if lo.Valid {
		y.Min = lo.V
	}
	if hi.Valid {
		y.Max = hi.V
	}
	return y
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
// among the drawn points, which [x, y] items have); and how many points
// were drawn.
func timeData(s Series, t0 float64, budget int, provs *provTable) (json.RawMessage, int, int) {
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
			b = appendY(b, p.Cell.Value.V)
		}
		if ids[k] != def {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(ids[k]), 10)
		}
		b = append(b, ']')
	}
	b = append(b, ']')
	return b, def, len(idx)
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
	class    string
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
			// other null was refused.
			k := 1
			for reason := range r.reasons {
				if reason != rate.ReasonAbsent && reason != analyze.BreakGap {
					k = 0
				}
			}
			runs[k] = append(runs[k], r)
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
// in the colour of class, or each in that of its own class when it has one.
func addAreaSeries(line *charts.Line, name, class string, areas []area, t0, minWidth float64) {
	data := make([]any, 0, len(areas))
	for _, a := range areas {
		from, to := a.from-t0, a.to-t0
		if to-from < minWidth { // too narrow to see: widen around its middle
			mid := (from + to) / 2
			from, to = mid-minWidth/2, mid+minWidth/2
		}
		start := markX{Name: a.label, XAxis: roundX(from)}
		if a.class != "" && a.class != class {
			start.ItemStyle = &opts.ItemStyle{Color: classColour[a.class]}
		}
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
