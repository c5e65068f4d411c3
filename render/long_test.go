package render_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/render"
)

// A long run: 24 hours of 8 engines polled every 2 s.
const (
	longPolls   = 24 * 3600 / 2
	longTargets = 8
)

var reasons = []string{rate.ReasonStale, rate.ReasonJump, rate.ReasonReset, rate.ReasonEmpty}

// longSeries makes one target's series of a 24-hour run, from a fixed seed:
// a random walk per series with spikes, scattered refusals, a restart that
// nulls 30 polls, and three incidents whose polls are flagged Keep.
func longSeries(target int) (series map[string][]render.Series, marks []render.Mark) {
	r := rand.New(rand.NewPCG(uint64(target), 7))
	start := t0
	incidents := []int{r.IntN(longPolls), r.IntN(longPolls), r.IntN(longPolls)}
	for _, at := range incidents {
		marks = append(marks, render.Mark{From: start + float64(at)*2, To: start + float64(at+15)*2, Class: render.ClassFail, Label: "incident at poll " + strconv.Itoa(at)})
	}
	restart := r.IntN(longPolls - 100)
	mk := func(name, source string, derived bool, base, scale float64) render.Series {
		s := render.Series{Name: name, Points: make([]render.Point, longPolls)}
		v := base
		for i := range longPolls {
			t := start + float64(i)*2 + r.Float64()*0.02
			v = math.Max(0, v+r.NormFloat64()*scale)
			if r.IntN(2000) == 0 {
				v += 20 * scale * r.Float64() // a spike
			}
			c := rate.Cell{Value: rate.Some(v), Source: source, Derived: derived}
			if derived {
				c.Window = rate.Some(math.Round((2+r.NormFloat64()*0.03)*10) / 10)
			}
			switch {
			case i >= restart && i < restart+30:
				c.Value, c.Reason = rate.Num{}, rate.ReasonReset
			case r.IntN(300) == 0:
				c.Value, c.Reason = rate.Num{}, reasons[r.IntN(len(reasons))]
			}
			keep := false
			for _, at := range incidents {
				keep = keep || i >= at && i < at+15
			}
			s.Points[i] = render.Point{T: t, Cell: c, Keep: keep}
		}
		return s
	}
	q := func(metric string) []render.Series {
		var out []render.Series
		for k, qv := range []string{"0.5", "0.95", "0.99"} {
			out = append(out, mk([]string{"p50", "p95", "p99"}[k], "computed:histogram_quantile("+qv+", Δvllm:"+metric+"_bucket)", true, 0.05*float64(k+1), 0.002))
		}
		return out
	}
	series = map[string][]render.Series{
		"decode":      {mk("decode", "computed:Δvllm:generation_tokens_total/Δt", true, 1500, 20)},
		"prompt":      {mk("prompt", "computed:Δvllm:prompt_tokens_total/Δt", true, 6000, 80)},
		"requests":    {mk("running", "vllm:num_requests_running", false, 10, 0.5), mk("waiting", "vllm:num_requests_waiting", false, 1, 0.3)},
		"kv":          {mk("kv usage", "vllm:kv_cache_usage_perc", false, 0.6, 0.005)},
		"ttft":        q("time_to_first_token_seconds"),
		"tpot":        q("time_per_output_token_seconds"),
		"itl":         q("inter_token_latency_seconds"),
		"prefix":      {mk("hit ratio", "computed:Δvllm:prefix_cache_hits_total/Δvllm:prefix_cache_queries_total", true, 0.4, 0.01)},
		"spec":        {mk("acceptance", "computed:Δvllm:spec_decode_num_accepted_tokens_total/Δvllm:spec_decode_num_draft_tokens_total", true, 0.7, 0.01)},
		"preemptions": {mk("preemptions/s", "computed:Δvllm:num_preemptions_total/Δt", true, 0, 0.01)},
	}
	return series, marks
}

var chartOrder = []string{"decode", "prompt", "requests", "kv", "ttft", "tpot", "itl", "prefix", "spec", "preemptions"}

// longCharts lays out one target's ten charts.
func longCharts(tb testing.TB, target int, series map[string][]render.Series, marks []render.Mark) []render.Chart {
	var charts []render.Chart
	for _, name := range chartOrder {
		ts := render.TimeSeries{ID: render.ID("t"+strconv.Itoa(target), name), Title: name, T0: t0, Series: series[name], Marks: marks, Unit: "/s"}
		if name == "kv" {
			ts.Percent, ts.YMin, ts.YMax = true, rate.Some(0), rate.Some(1)
			ts.Bands = render.KVBands()
		}
		c, err := ts.Chart()
		if err != nil {
			tb.Fatal(err)
		}
		charts = append(charts, c)
	}
	return charts
}

// longReport is the report of the 24-hour run of 8 engines: ten charts per
// target, drawn with DefaultBudget points per series.
func longReport(tb testing.TB) render.Report {
	r := render.Report{Title: "24 hours of 8 engines", Generator: "llmrec v0.0.0-test"}
	for ti := range longTargets {
		series, marks := longSeries(ti)
		r.Sections = append(r.Sections, render.Section{
			ID: render.ID("t"+strconv.Itoa(ti), "target"), Title: "Target " + strconv.Itoa(ti),
			Charts: longCharts(tb, ti, series, marks),
		})
	}
	return r
}

// The 24-hour run of 8 engines renders to at most 5 MB, and every incident
// poll is drawn.
func TestLongRunBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 5.9 million points")
	}
	start := time.Now()
	r := longReport(t)
	built := time.Since(start)
	page := htmlOf(t, r)
	t.Logf("24 h × 8 engines: %s bytes; built in %v, rendered in %v", fmt.Sprint(len(page)), built.Round(time.Millisecond), (time.Since(start) - built).Round(time.Millisecond))
	if len(page) > 5e6 {
		t.Errorf("the page is %d bytes, over 5 MB", len(page))
	}
	// Every incident's polls are in the drawn data of the decode chart.
	series, _ := longSeries(0)
	var spec struct {
		Option struct {
			Series []struct {
				Data []json.RawMessage `json:"data"`
			} `json:"series"`
		} `json:"option"`
	}
	for _, s := range scriptRE.FindAllStringSubmatch(page, -1) {
		if strings.Contains(s[1], `id="t0-decode-spec"`) {
			if err := json.Unmarshal([]byte(s[2]), &spec); err != nil {
				t.Fatal(err)
			}
		}
	}
	drawn := map[float64]bool{}
	for _, item := range spec.Option.Series[0].Data {
		var xy []*float64
		if err := json.Unmarshal(item, &xy); err != nil {
			t.Fatal(err)
		}
		drawn[*xy[0]] = true
	}
	kept := 0
	for _, p := range series["decode"][0].Points {
		if p.Keep {
			kept++
			if x := math.Round((p.T-t0)*10) / 10; !drawn[x] {
				t.Errorf("incident poll at +%vs is not drawn", x)
			}
		}
	}
	if kept == 0 || len(drawn) > 2*render.DefaultBudget {
		t.Errorf("%d incident polls, %d points drawn", kept, len(drawn))
	}
}

func BenchmarkChartsOneTarget24h(b *testing.B) {
	series, marks := longSeries(0)
	b.ReportAllocs()
	for b.Loop() {
		longCharts(b, 0, series, marks)
	}
}

func BenchmarkHTML24h8(b *testing.B) {
	r := longReport(b)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := render.HTML(&buf, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/report")
}

func BenchmarkMarkdownSample(b *testing.B) {
	r := sampleReport(b, plain, 120)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := render.Markdown(&buf, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/summary")
}
