package render_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/render"
)

// Every canonical cell has a human name in the table, none of them snake
// case and no two alike, and a unit that fits its kind.
func TestNameOfEveryCanonicalCell(t *testing.T) {
	seen := map[string]string{}
	for _, c := range engine.Canonical {
		n, ok := render.NameOf(c)
		if !ok {
			t.Errorf("%s: not in the table", c)
			continue
		}
		if n.Name == "" || snake(n.Name) || strings.Contains(n.Name, "__") {
			t.Errorf("%s: name %q is not a human one", c, n.Name)
		}
		if prev, dup := seen[n.Name]; dup {
			t.Errorf("%s and %s are both named %q", prev, c, n.Name)
		}
		seen[n.Name] = c
		switch {
		case strings.HasSuffix(c, "_per_second") && !strings.Contains(c, "preemptions") && !strings.Contains(c, "requests"):
			if n.Unit != render.UnitTokensPS {
				t.Errorf("%s: unit %q, want tokens/s", c, n.Unit)
			}
		case strings.Contains(c, "_ratio"):
			if n.Unit != render.UnitRatio {
				t.Errorf("%s: unit %q, want ratio", c, n.Unit)
			}
		case strings.HasSuffix(c, "__p50") || strings.HasSuffix(c, "__p95") || strings.HasSuffix(c, "__p99") || strings.HasSuffix(c, "__mean"):
			if n.Unit != render.UnitSeconds {
				t.Errorf("%s: unit %q, want s", c, n.Unit)
			}
		}
	}
	for cell, want := range map[string]render.CellName{
		"time_to_first_token_seconds__p50":   {Name: "TTFT p50", Unit: "s"},
		"time_per_output_token_seconds__p95": {Name: "TPOT p95", Unit: "s"},
		"inter_token_latency_seconds__p99":   {Name: "ITL p99", Unit: "s"},
		"decode_tokens_per_second":           {Name: "decode", Unit: "tokens/s"},
		"prompt_tokens_computed_per_second":  {Name: "prompt computed", Unit: "tokens/s"},
		"kv_cache_usage_ratio":               {Name: "KV-cache usage", Unit: "ratio"},
	} {
		if got, _ := render.NameOf(cell); got != want {
			t.Errorf("NameOf(%s) = %+v, want %+v", cell, got, want)
		}
	}
	// A name the table does not hold keeps its words, not its underscores.
	if got, ok := render.NameOf("some_new_cell"); ok || got.Name != "some new cell" || got.Unit != "" {
		t.Errorf("NameOf(some_new_cell) = %+v, %v", got, ok)
	}
}

// Seconds under one second are shown as milliseconds; a second or more,
// and every other unit, as they are.
func TestScaleFor(t *testing.T) {
	for _, c := range []struct {
		unit   string
		max    float64
		factor float64
		shown  string
	}{
		{"s", 0.003, 1000, "ms"},
		{"s", 0.999, 1000, "ms"},
		{"s", 0, 1000, "ms"},
		{"s", 1, 1, "s"},
		{"s", 12.5, 1, "s"},
		{"tokens/s", 0.5, 1, "tokens/s"},
		{"requests", 3, 1, "requests"},
	} {
		if got := render.ScaleFor(c.unit, c.max); got.Factor != c.factor || got.Unit != c.shown {
			t.Errorf("ScaleFor(%q, %v) = %+v, want ×%v %q", c.unit, c.max, got, c.factor, c.shown)
		}
	}
}

// A latency chart whose values stay under a second draws milliseconds:
// the values, the unit of its tooltips and its y axis's name; provenance
// keeps the engine's seconds.
func TestTimeSeriesMilliseconds(t *testing.T) {
	pts := cells(5, func(i int) rate.Cell {
		return rate.Cell{Value: rate.Some(0.003 * float64(i+1)), Source: "computed:histogram_quantile(0.5, Δx_bucket)", Derived: true, Window: rate.Some(2)}
	})
	c, err := render.TimeSeries{ID: "ttft", Unit: "s", Series: []render.Series{{Name: "TTFT p50", Canon: "time_to_first_token_seconds__p50", Points: pts}}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, c)
	got := items(t, o.Series[0].Data)
	for i, it := range got {
		if want := 3 * float64(i+1); math.Abs(*it[1]-want) > 1e-9 {
			t.Errorf("item %d: y %v, want %v ms", i, *it[1], want)
		}
	}
	if c.Unit != "ms" || o.YAxis.Name != "ms" {
		t.Errorf("unit %q, y axis %q, want ms", c.Unit, o.YAxis.Name)
	}
	if !strings.Contains(c.Prov[c.SeriesProv[0]], "over Δ2.0s") {
		t.Errorf("provenance %q", c.Prov[c.SeriesProv[0]])
	}
	if len(c.SeriesCanon) == 0 || c.SeriesCanon[0] != "time_to_first_token_seconds__p50" {
		t.Errorf("canonical names %q", c.SeriesCanon)
	}
	// One value of a second or more: the whole chart in seconds.
	pts[2].Cell.Value = rate.Some(1.5)
	c, err = render.TimeSeries{ID: "ttft", Unit: "s", Series: []render.Series{{Name: "TTFT p50", Points: pts}}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	if o := decode(t, c); c.Unit != "s" || o.YAxis.Name != "s" || *items(t, o.Series[0].Data)[2][1] != 1.5 {
		t.Errorf("unit %q, y axis %q", c.Unit, o.YAxis.Name)
	}
}

// Two series equal at every poll are drawn as one line named after both,
// with a note; a series with no value at any poll is not drawn, and a note
// says why; the lines left differ in their dash, not only in colour.
func TestTimeSeriesMergesAndDrops(t *testing.T) {
	v := func(i int) rate.Cell { return rate.Cell{Value: rate.Some(float64(i % 3)), Source: "s"} }
	c, err := render.TimeSeries{ID: "tok", Unit: "tokens/s", Series: []render.Series{
		{Name: "prompt", Canon: "prompt_tokens_per_second", Points: cells(6, v)},
		{Name: "decode", Points: cells(6, func(i int) rate.Cell { return rate.Cell{Value: rate.Some(7), Source: "d"} })},
		{Name: "prompt computed", Canon: "prompt_tokens_computed_per_second", Points: cells(6, v)},
		{Name: "spec. acceptance", Points: cells(6, func(int) rate.Cell { return rate.Cell{Source: "x", Reason: rate.ReasonEmpty} })},
	}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, c)
	if got, want := o.legendNames(), "prompt = prompt computed,decode"; got != want {
		t.Errorf("legend %q, want %q", got, want)
	}
	if c.SeriesCanon[0] != "prompt_tokens_per_second, prompt_tokens_computed_per_second" {
		t.Errorf("canonical names %q", c.SeriesCanon)
	}
	notes := strings.Join(c.Notes, "\n")
	for _, want := range []string{"prompt computed equals prompt at every poll: drawn as one line.", "spec. acceptance: no value at any poll (empty ×6); not drawn."} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	if o.Series[0].LineStyle.Type == o.Series[1].LineStyle.Type {
		t.Errorf("two lines of one chart both %q", o.Series[0].LineStyle.Type)
	}
	// Equal but for one poll: two lines.
	w := cells(6, v)
	w[3].Cell.Value = rate.Some(9)
	c, err = render.TimeSeries{ID: "tok", Series: []render.Series{{Name: "a", Points: cells(6, v)}, {Name: "b", Points: w}}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	if got := decode(t, c).legendNames(); got != "a,b" {
		t.Errorf("legend %q", got)
	}
}

// The legend is never paged: it takes as many rows as its names need, and
// the plot starts below them.
func TestTimeSeriesLegendRows(t *testing.T) {
	grid := func(names ...string) (string, int, int) {
		var ss []render.Series
		for i, n := range names {
			ss = append(ss, render.Series{Name: n, Points: cells(3, func(int) rate.Cell { return rate.Cell{Value: rate.Some(float64(i)), Source: "s"} })})
		}
		c, err := render.TimeSeries{ID: "l", Series: ss}.Chart()
		if err != nil {
			t.Fatal(err)
		}
		var o struct {
			Legend struct{ Type string }
			Grid   struct{ Top int }
		}
		b, _ := json.Marshal(c.Option)
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		return o.Legend.Type, o.Grid.Top, c.Height
	}
	typ1, top1, h1 := grid("decode", "prompt")
	var many []string
	for i := range 12 {
		many = append(many, "a rather long series name "+strconv.Itoa(i))
	}
	typ2, top2, h2 := grid(many...)
	if typ1 != "plain" || typ2 != "plain" {
		t.Errorf("legend types %q, %q: want plain", typ1, typ2)
	}
	if top2 <= top1 || h2 <= h1 {
		t.Errorf("12 long names: plot from %d (height %d), 2 short ones from %d (height %d)", top2, h2, top1, h1)
	}
}

// Every kind of shading is in the legend in the hue it is drawn in:
// incidents of class warn apart from those of class fail, refusals, no
// data and partial sums.
func TestTimeSeriesShadingLegend(t *testing.T) {
	pts := cells(40, func(i int) rate.Cell {
		switch {
		case i == 5:
			return rate.Cell{Source: "s", Reason: rate.ReasonStale}
		case i == 10:
			return rate.Cell{Source: "s", Reason: rate.ReasonAbsent}
		case i == 15:
			return rate.Cell{Reason: render.ReasonPartial}
		}
		return rate.Cell{Value: rate.Some(1), Source: "s"}
	})
	c, err := render.TimeSeries{ID: "sh", Series: []render.Series{{Name: "x", Points: pts}},
		Marks: []render.Mark{
			{From: 1040, To: 1044, Class: render.ClassWarn, Label: "slow scrape"},
			{From: 1050, To: 1052, Class: render.ClassFail, Label: "restart"},
		},
		Partial: []render.Mark{{From: 1028, To: 1032, Label: "2 of 3 engines had a value"}},
	}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c.Option)
	var o struct {
		Legend struct{ Data []struct{ Name, Icon string } }
		Series []struct {
			Name      string
			ItemStyle struct{ Color string } `json:"itemStyle"`
			MarkArea  struct {
				ItemStyle struct{ Color string } `json:"itemStyle"`
				Data      [][]struct {
					Name      string
					ItemStyle *struct{ Color string } `json:"itemStyle"`
				}
			} `json:"markArea"`
		}
	}
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	var legend []string
	for _, d := range o.Legend.Data {
		legend = append(legend, d.Name+"/"+d.Icon)
	}
	if got, want := strings.Join(legend, ","), "x/,refused window/rect,no data/rect,fewer engines/rect,incident/rect,restart/down/stall/rect"; got != want {
		t.Errorf("legend %q, want %q", got, want)
	}
	hues := map[string]float64{}
	for _, s := range o.Series[1:] {
		if len(s.MarkArea.Data) != 1 {
			t.Errorf("%s: %d spans, want 1", s.Name, len(s.MarkArea.Data))
			continue
		}
		area := s.MarkArea.ItemStyle.Color
		if own := s.MarkArea.Data[0][0].ItemStyle; own != nil {
			area = own.Color
		}
		lh, ls := hue(t, s.ItemStyle.Color)
		ah, as := hue(t, area)
		if ls < 0.1 != (as < 0.1) || ls >= 0.1 && math.Abs(lh-ah) > 15 {
			t.Errorf("%s: legend %s (hue %.0f, saturation %.2f) is not the hue of its shading %s (hue %.0f, saturation %.2f)", s.Name, s.ItemStyle.Color, lh, ls, area, ah, as)
		}
		hues[s.Name] = lh
	}
	if math.Abs(hues["incident"]-hues["restart/down/stall"]) < 20 {
		t.Errorf("incidents and restarts share a hue: %v", hues)
	}
}

// hue returns the hue (degrees) and saturation of "#rrggbb" or
// "rgba(r,g,b,a)".
func hue(t *testing.T, c string) (float64, float64) {
	t.Helper()
	var r, g, b float64
	switch {
	case strings.HasPrefix(c, "#") && len(c) == 7:
		v, err := strconv.ParseUint(c[1:], 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		r, g, b = float64(v>>16&255), float64(v>>8&255), float64(v&255)
	case strings.HasPrefix(c, "rgba("):
		parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(c, "rgba("), ")"), ",")
		r, _ = strconv.ParseFloat(parts[0], 64)
		g, _ = strconv.ParseFloat(parts[1], 64)
		b, _ = strconv.ParseFloat(parts[2], 64)
	default:
		t.Fatalf("colour %q", c)
	}
	hi, lo := max(r, g, b), min(r, g, b)
	if hi == lo {
		return 0, 0
	}
	var h float64
	switch hi {
	case r:
		h = math.Mod((g-b)/(hi-lo), 6)
	case g:
		h = (b-r)/(hi-lo) + 2
	default:
		h = (r-g)/(hi-lo) + 4
	}
	h *= 60
	if h < 0 {
		h += 360
	}
	return h, (hi - lo) / hi
}

// Bars name their y axis by the unit and start at 0; the legend is plain.
func TestBarsAxis(t *testing.T) {
	c, err := render.Bars{ID: "settle", Unit: "polls", Categories: []string{"2s", "10s"},
		Series: []render.BarSeries{{Name: "median settle poll", Values: []render.Value{{V: rate.Some(2)}, {V: rate.Some(3)}}}}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, c)
	if o.YAxis.Name != "polls" || o.YAxis.Min == nil || *o.YAxis.Min != 0 || o.Legend.Type != "plain" {
		t.Errorf("y axis %q from %v, legend %q", o.YAxis.Name, o.YAxis.Min, o.Legend.Type)
	}
}
