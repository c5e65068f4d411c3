package render_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/render"
)

func TestProv(t *testing.T) {
	src := "computed:Δvllm:generation_tokens_total/Δt"
	for _, c := range []struct {
		cell rate.Cell
		want string
	}{
		{rate.Cell{Value: rate.Some(1), Source: src, Derived: true, Window: rate.Some(2)}, src + " over Δ2.0s (derived)"},
		{rate.Cell{Source: src, Derived: true, Window: rate.Some(0.4), Reason: rate.ReasonStale}, "refused (stale): " + src + " over Δ0.4s (derived)"},
		{rate.KVCell("vllm:kv_cache_usage_perc", rate.Some(0.95)), "vllm:kv_cache_usage_perc (read; severity fail)"},
		{rate.Cell{Value: rate.Some(3), Source: "x", Notes: []string{"absent {a=\"b\"}"}}, `x (read) — absent {a="b"}`},
		{rate.Cell{}, "refused (absent): no source (read)"},
		{rate.Cell{Value: rate.Some(1), Source: "y", Derived: true, Window: rate.Some(300)}, "y over Δ300s (derived)"},
	} {
		if got := render.Prov(c.cell); got != c.want {
			t.Errorf("Prov(%+v) = %q, want %q", c.cell, got, c.want)
		}
	}
	if got := render.Window(math.NaN()); got != "Δ?" {
		t.Errorf("Window(NaN) = %q", got)
	}
}

func TestCellOf(t *testing.T) {
	f := func(v float64) string { return "v" }
	for _, c := range []struct {
		cell        rate.Cell
		text, class string
	}{
		{rate.Cell{Value: rate.Some(1), Source: "s"}, "v", render.ClassNone},
		{rate.Cell{Source: "s", Reason: rate.ReasonReset}, "— (reset)", render.ClassRefused},
		{rate.Cell{Source: "s", Reason: rate.ReasonAbsent}, "— (absent)", render.ClassUnknown},
		{rate.KVCell("k", rate.Some(0.8)), "v", render.ClassWarn},
		{rate.KVCell("k", rate.Some(0.1)), "v", render.ClassOK},
	} {
		got := render.CellOf(c.cell, f)
		if got.Text != c.text || got.Class != c.class || got.Prov != render.Prov(c.cell) {
			t.Errorf("CellOf(%+v) = %+v, want text %q class %q", c.cell, got, c.text, c.class)
		}
	}
}

// option decodes a chart's option into what the tests look at.
type option struct {
	XAxis  []struct{ Min, Max float64 } `json:"xAxis"`
	Series []struct {
		Name      string                `json:"name"`
		Data      []json.RawMessage     `json:"data"`
		LineStyle struct{ Type string } `json:"lineStyle"`
		MarkArea  struct {
			Data [][]struct {
				Name  string   `json:"name"`
				XAxis *float64 `json:"xAxis"`
				YAxis *float64 `json:"yAxis"`
			} `json:"data"`
		} `json:"markArea"`
	} `json:"series"`
	Legend struct {
		Type string
		Data []struct{ Name, Icon string }
	} `json:"legend"`
	YAxis struct {
		Name string
		Min  *float64
		Max  *float64
	} `json:"yAxis"`
}

// legendNames are the names the legend lists, in order.
func (o option) legendNames() string {
	var out []string
	for _, d := range o.Legend.Data {
		out = append(out, d.Name)
	}
	return strings.Join(out, ",")
}

func decode(t *testing.T, c render.Chart) option {
	t.Helper()
	b, err := json.Marshal(c.Option)
	if err != nil {
		t.Fatal(err)
	}
	var o option
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func items(t *testing.T, raw []json.RawMessage) [][]*float64 {
	t.Helper()
	out := make([][]*float64, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func cells(n int, fn func(i int) rate.Cell) []render.Point {
	pts := make([]render.Point, n)
	for i := range pts {
		pts[i] = render.Point{T: 1000 + float64(i)*2, Cell: fn(i)}
	}
	return pts
}

// Nulls are drawn as nulls, in place, with their own provenance; the
// spans they leave are shaded and named; a series with every value has
// one provenance for all its items.
func TestTimeSeriesNulls(t *testing.T) {
	a := render.Series{Name: "a", Points: cells(10, func(i int) rate.Cell {
		if i == 4 || i == 5 {
			return rate.Cell{Source: "src", Reason: rate.ReasonStale}
		}
		return rate.Cell{Value: rate.Some(float64(i)), Source: "src"}
	})}
	b := render.Series{Name: "b", Points: cells(10, func(i int) rate.Cell {
		if i == 5 {
			return rate.Cell{Source: "src", Reason: rate.ReasonJump}
		}
		return rate.Cell{Value: rate.Some(1), Source: "src"}
	})}
	c, err := render.TimeSeries{ID: "x", Series: []render.Series{a, b}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, c)
	got := items(t, o.Series[0].Data)
	if len(got) != 10 {
		t.Fatalf("%d items, want all 10", len(got))
	}
	for i, it := range got {
		if null := it[1] == nil; null != (i == 4 || i == 5) {
			t.Errorf("item %d: y %v", i, it[1])
		}
		if *it[0] != float64(i)*2 {
			t.Errorf("item %d: x %v, want seconds since the first point", i, *it[0])
		}
		if i == 4 && (len(it) != 3 || !strings.Contains(c.Prov[int(*it[2])], "refused (stale)")) {
			t.Errorf("null item has no provenance of its own: %v", it)
		}
	}
	if p := c.Prov[c.SeriesProv[0]]; p != "src (read)" {
		t.Errorf("series provenance %q", p)
	}
	// One refused span, poll 3 to poll 6, holding both series' nulls.
	ref := o.Series[2]
	if ref.Name != "refused window" || len(ref.MarkArea.Data) != 1 {
		t.Fatalf("refused series %+v", ref)
	}
	area := ref.MarkArea.Data[0]
	if *area[0].XAxis != 6 || *area[1].XAxis != 12 || area[0].Name != "stale ×2, jump ×1" {
		t.Errorf("refused span %v–%v %q", *area[0].XAxis, *area[1].XAxis, area[0].Name)
	}
	if got, want := o.legendNames(), "a,b,refused window"; got != want {
		t.Errorf("legend %q, want %q", got, want)
	}
}

// A long series is drawn with about Budget points and a note that says
// so; a spike and a Keep point survive.
func TestTimeSeriesDownsamples(t *testing.T) {
	pts := cells(43200, func(i int) rate.Cell {
		v := 10.0
		if i == 12345 {
			v = 1e6
		}
		return rate.Cell{Value: rate.Some(v), Source: "s", Derived: true, Window: rate.Some(2)}
	})
	pts[777].Keep = true
	c, err := render.TimeSeries{ID: "long", Budget: 500, Series: []render.Series{{Name: "s", Points: pts}}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	got := items(t, decode(t, c).Series[0].Data)
	if len(got) > 503 {
		t.Errorf("%d items drawn for a budget of 500", len(got))
	}
	var spike, keep bool
	for _, it := range got {
		spike = spike || *it[1] == 1e6
		keep = keep || *it[0] == 777*2
	}
	if !spike || !keep {
		t.Errorf("spike kept %v, Keep point kept %v", spike, keep)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "of 43,200 points") {
		t.Errorf("notes %q", c.Notes)
	}
}

// Bands open at the top reach the fixed top of the axis.
func TestTimeSeriesBands(t *testing.T) {
	pts := cells(5, func(i int) rate.Cell { return rate.KVCell("kv", rate.Some(0.5)) })
	c, err := render.TimeSeries{ID: "kv", Percent: true, YMin: rate.Some(0), YMax: rate.Some(1), Series: []render.Series{{Name: "kv", Points: pts}},
		Bands: []render.Band{{From: 0.9, To: math.Inf(1), Class: render.ClassFail, Label: "fail"}}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, c)
	band := o.Series[len(o.Series)-1].MarkArea.Data[0]
	if *band[0].YAxis != 0.9 || *band[1].YAxis != 1 || band[0].Name != "fail" {
		t.Errorf("band %v–%v %q", *band[0].YAxis, *band[1].YAxis, band[0].Name)
	}
}

// The KV bands are rate.KVSeverity's classes.
func TestKVBands(t *testing.T) {
	for _, b := range render.KVBands() {
		for _, v := range []float64{b.From, (b.From + b.To) / 2, b.To - 1e-6} {
			if got := rate.KVSeverity(v); got != b.Class {
				t.Errorf("band %q holds %v, which KVSeverity calls %q", b.Label, v, got)
			}
		}
	}
}

func TestChartRejects(t *testing.T) {
	back := cells(3, func(int) rate.Cell { return rate.Cell{Value: rate.Some(1)} })
	back[2].T = 0
	if _, err := (render.TimeSeries{ID: "x", Series: []render.Series{{Points: back}}}).Chart(); err == nil {
		t.Error("points going back in time: no error")
	}
	if _, err := (render.TimeSeries{ID: "Bad Id"}).Chart(); err == nil {
		t.Error("bad id: no error")
	}
	if _, err := (render.Bars{ID: "b", Categories: []string{"a", "b"}, Series: []render.BarSeries{{Values: make([]render.Value, 1)}}}).Chart(); err == nil {
		t.Error("bars with a missing value: no error")
	}
	// An empty chart is a chart.
	if _, err := (render.TimeSeries{ID: "empty"}).Chart(); err != nil {
		t.Errorf("empty chart: %v", err)
	}
}

// A quantile series read from histogram buckets is drawn over a band of
// its buckets: two stacked series named "bucket", lo then hi − lo, out of
// the tooltip, null where the bucket has no finite hi (the overflow past
// the top bound) or the point no value; a series without buckets has none.
func TestTimeSeriesBucketBand(t *testing.T) {
	in := func(lo, hi float64) rate.Bucket { return rate.Bucket{Lo: rate.Some(lo), Hi: rate.Some(hi)} }
	buckets := []rate.Bucket{in(0.01, 0.025), in(0.01, 0.025), in(0.025, 0.05),
		{Lo: rate.Some(0.05), Flags: rate.FlagPastEdge}, {}, in(0.01, 0.025)}
	values := []float64{0.012, 0.02, 0.03, 0.05, math.NaN(), 0.015}
	q := render.Series{Name: "ITL p50", Points: cells(len(values), func(i int) rate.Cell {
		if math.IsNaN(values[i]) {
			return rate.Cell{Source: "src", Reason: rate.ReasonStale}
		}
		return rate.Cell{Value: rate.Some(values[i]), Source: "src", Bucket: buckets[i]}
	})}
	plain := render.Series{Name: "plain", Points: cells(len(values), func(i int) rate.Cell {
		return rate.Cell{Value: rate.Some(0.02), Source: "src"}
	})}
	c, err := render.TimeSeries{ID: "x", Unit: "s", Series: []render.Series{q, plain}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c.Option)
	var o struct {
		Series []struct {
			Name      string            `json:"name"`
			Stack     string            `json:"stack"`
			Data      []json.RawMessage `json:"data"`
			AreaStyle *struct{}         `json:"areaStyle"`
			Tooltip   *struct{ Show bool }
		} `json:"series"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	n := len(o.Series)
	if n < 4 || o.Series[n-2].Name != "bucket" || o.Series[n-1].Name != "bucket" {
		t.Fatalf("no bucket band last among %d series: %s", n, b)
	}
	lo, width := o.Series[n-2], o.Series[n-1]
	if lo.Stack == "" || lo.Stack != width.Stack || lo.AreaStyle != nil || width.AreaStyle == nil {
		t.Errorf("band not stacked lo then shaded width: %+v %+v", lo, width)
	}
	if lo.Tooltip == nil || lo.Tooltip.Show || width.Tooltip == nil || width.Tooltip.Show {
		t.Errorf("band in the tooltip")
	}
	if len(c.SeriesProv) != n || c.SeriesProv[n-1] != -1 || len(c.SeriesCanon) != n {
		t.Errorf("series provenance %v for %d series", c.SeriesProv, n)
	}
	// Drawn in ms (the values are under a second).
	wantLo := []float64{10, 10, 25, -1, -1, 10}
	wantW := []float64{15, 15, 25, -1, -1, 15}
	los, ws := items(t, lo.Data), items(t, width.Data)
	for i := range values {
		for _, c := range []struct {
			name string
			it   []*float64
			want float64
		}{{"lo", los[i], wantLo[i]}, {"hi−lo", ws[i], wantW[i]}} {
			if *c.it[0] != float64(i)*2 {
				t.Errorf("%s %d: x %v", c.name, i, *c.it[0])
			}
			switch {
			case c.want < 0 && c.it[1] != nil:
				t.Errorf("%s %d: %v, want a gap", c.name, i, *c.it[1])
			case c.want >= 0 && (c.it[1] == nil || math.Abs(*c.it[1]-c.want) > 1e-9):
				t.Errorf("%s %d: %v, want %v", c.name, i, c.it[1], c.want)
			}
		}
	}
	legend := 0
	for _, s := range o.Series {
		if s.Name == "bucket" {
			legend++
		}
	}
	if legend != 2 {
		t.Errorf("%d bucket series, want 2 (the plain series has none)", legend)
	}
	if !strings.Contains(decode(t, c).legendNames(), "bucket") {
		t.Errorf("legend %q has no bucket", decode(t, c).legendNames())
	}

	c, err = render.TimeSeries{ID: "y", Unit: "s", Series: []render.Series{plain}}.Chart()
	if err != nil {
		t.Fatal(err)
	}
	o2 := decode(t, c)
	for _, s := range o2.Series {
		if s.Name == "bucket" {
			t.Errorf("a chart without buckets has a bucket band")
		}
	}
	if strings.Contains(o2.legendNames(), "bucket") {
		t.Errorf("legend %q", o2.legendNames())
	}
}
