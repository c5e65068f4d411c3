package render_test

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/render"
)

// names are the strings of a sample report that come from outside: scraped
// labels, model names, target names, series names, config values.
type names struct {
	Target, Model, Label, Series, Config, Engine string
}

var plain = names{
	Target: "vllm-a", Model: "meta-llama/Llama-3.1-8B-Instruct", Label: `model_name="meta-llama/Llama-3.1-8B-Instruct"`,
	Series: "vllm:generation_tokens_total", Config: `url = "http://127.0.0.1:8000/metrics"`, Engine: "vllm 0.11.0",
}

// The payloads of the issue: HTML that would run script, and go-echarts'
// function marker.
const (
	evilHTML = `</script><img src=x onerror=alert(1)>`
	evilFunc = `__f__(function(){alert(1)})__f__`
	evil     = evilHTML + evilFunc + `<!--<script>alert(2)</script>` + "`|*_[x](javascript:alert(3))\n# h"
)

var hostile = names{Target: evil, Model: evil, Label: evil, Series: evil, Config: evil, Engine: evil}

const t0 = 1767261600.0 // 2026-01-01 10:00:00 UTC

// cellAt makes the decode-rate cell of poll i: a value with its window, or
// a refusal at a few polls.
func cellAt(n names, i int, v float64) rate.Cell {
	src := "computed:Δ" + n.Series + "/Δt"
	w := rate.Some(2 + 0.1*float64(i%3))
	switch {
	case i == 0:
		return rate.Cell{Source: src, Derived: true, Reason: rate.ReasonNoBaseline}
	case i >= 40 && i < 43:
		return rate.Cell{Source: src, Derived: true, Window: rate.Some(0.4), Reason: rate.ReasonStale}
	case i == 90:
		return rate.Cell{Source: src, Derived: true, Reason: rate.ReasonReset}
	}
	return rate.Cell{Value: rate.Some(v), Source: src, Derived: true, Window: w, Notes: nil}
}

// sampleReport is a small hand-made report: two targets of polls polls
// each (every 2 s), with refusals, an incident, KV bands, percentiles and
// the settle polls per span.
func sampleReport(tb testing.TB, n names, polls int) render.Report {
	tb.Helper()
	must := func(c render.Chart, err error) render.Chart {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
	var sections []render.Section
	var appendix []render.Section
	targets := []string{n.Target, "llama-b"}
	for ti, target := range targets {
		id := func(what string) string { return render.ID("t"+strconv.Itoa(ti), what) }
		var decode, running, waiting, kv, p50, p95, p99 render.Series
		decode.Name, running.Name, waiting.Name, kv.Name = n.Series, "running", "waiting ("+n.Label+")", "kv usage"
		p50.Name, p95.Name, p99.Name = "p50", "p95", "p99"
		running.Step, waiting.Step = true, true
		for i := range polls {
			t := t0 + float64(i)*2 + 0.013*float64(i%5)
			ph := float64(i) / 10
			dv := 1200 + 300*math.Sin(ph) + float64(ti)*100
			if i == 77 {
				dv = 4000 // a spike
			}
			decode.Points = append(decode.Points, render.Point{T: t, Cell: cellAt(n, i, dv)})
			decode.Points[i].Keep = i == 77
			run := math.Round(8 + 4*math.Sin(ph/2))
			running.Points = append(running.Points, render.Point{T: t, Cell: rate.Cell{Value: rate.Some(run), Source: "vllm:num_requests_running"}})
			waiting.Points = append(waiting.Points, render.Point{T: t, Cell: rate.Cell{Value: rate.Some(math.Max(0, run-9)), Source: "vllm:num_requests_waiting" + n.Label}})
			kv.Points = append(kv.Points, render.Point{T: t, Cell: rate.KVCell("vllm:kv_cache_usage_perc", rate.Some(0.5+0.45*math.Sin(ph/3)))})
			for k, s := range []*render.Series{&p50, &p95, &p99} {
				q := []string{"0.5", "0.95", "0.99"}[k]
				c := rate.Cell{Value: rate.Some(0.05 * float64(k+1) * (1 + 0.3*math.Sin(ph))), Source: "computed:histogram_quantile(" + q + ", Δvllm:time_to_first_token_seconds_bucket)", Derived: true, Window: rate.Some(2)}
				if i%25 == 24 {
					c = rate.Cell{Source: c.Source, Derived: true, Window: rate.Some(2), Reason: rate.ReasonEmpty}
				}
				s.Points = append(s.Points, render.Point{T: t, Cell: c})
			}
		}
		incident := render.Mark{From: t0 + 150, To: t0 + 170, Class: render.ClassFail, Label: "incident 1: queueing on " + target}
		charts := []render.Chart{
			must(render.TimeSeries{ID: id("decode"), Title: "Decode tokens/s", Unit: "tokens/s", T0: t0, Series: []render.Series{decode}, Marks: []render.Mark{incident}}.Chart()),
			must(render.TimeSeries{ID: id("requests"), Title: "Requests running and waiting", Unit: "requests", T0: t0, Series: []render.Series{running, waiting}}.Chart()),
			must(render.TimeSeries{ID: id("kv"), Title: "KV cache usage", Percent: true, T0: t0, YMin: rate.Some(0), YMax: rate.Some(1), Series: []render.Series{kv},
				Bands: render.KVBands()}.Chart()),
			must(render.TimeSeries{ID: id("ttft"), Title: "TTFT percentiles", Unit: "s", T0: t0, Series: []render.Series{p50, p95, p99}}.Chart()),
		}
		med := rate.Cell{Value: rate.Some(1234.5), Source: "computed:Δ" + n.Series + "/Δt", Derived: true, Window: rate.Some(2.0)}
		stale := rate.Cell{Source: "computed:Δ" + n.Series + "/Δt", Derived: true, Window: rate.Some(0.4), Reason: rate.ReasonStale}
		kvc := rate.KVCell("vllm:kv_cache_usage_perc", rate.Some(0.82))
		f1 := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
		pct := func(v float64) string { return strconv.FormatFloat(v*100, 'f', 0, 64) + " %" }
		sections = append(sections, render.Section{
			ID: id("target"), Title: "Target " + target + " (" + []string{n.Model, "qwen2.5-0.5b"}[ti] + ")",
			Notes: []string{"Engine " + n.Engine + "; label " + n.Label},
			Tables: []render.Table{{
				Title:   "Headlines of " + target,
				Summary: true,
				Columns: []render.Column{{Title: "cell"}, {Title: "median", Num: true, Prov: "median over the polls with a value"}, {Title: "last", Num: true}},
				Rows: [][]render.Cell{
					{{Text: "decode tokens/s"}, render.CellOf(med, f1), render.CellOf(stale, f1)},
					{{Text: "kv usage"}, render.CellOf(kvc, pct), {Text: "—", Class: render.ClassUnknown}},
				},
			}},
			Charts: charts,
		})
		appendix = append(appendix, render.Section{
			ID: id("catalog"), Title: "Series catalog of " + target,
			Tables: []render.Table{{
				Title: "Series", Fold: true,
				Columns: []render.Column{{Title: "series"}, {Title: "type"}, {Title: "label sets", Num: true}},
				Rows: [][]render.Cell{
					{{Text: n.Series}, {Text: "counter"}, {Text: "1"}},
					{{Text: "vllm:num_requests_waiting"}, {Text: "gauge"}, {Text: "2"}},
				},
			}, {
				Title:   "Unknown series",
				Columns: []render.Column{{Title: "series"}},
				Rows:    [][]render.Cell{{{Text: n.Label}}},
			}},
			Blocks: []render.Block{{Title: "Effective config", Text: "[[target]]\nname = \"" + target + "\"\n" + n.Config + "\n"}},
		})
	}

	settle := render.Bars{ID: "settle", Title: "Settle polls per span", XName: "span", Unit: "polls", Categories: []string{"2s", "10s", "60s"},
		Series: []render.BarSeries{{Name: n.Target, Values: []render.Value{
			{V: rate.Some(3), Prov: "polls until the rate stays within 5 % (span 2s)"},
			{V: rate.Some(5), Prov: "polls until the rate stays within 5 % (span 10s)"},
			{V: rate.Num{}, Prov: "refused (ceiling): the run is shorter than the span"},
		}}}}
	settleChart, err := settle.Chart()
	if err != nil {
		tb.Fatal(err)
	}
	sections = append(sections,
		render.Section{ID: "incidents", Title: "Incidents", Tables: []render.Table{{
			Title: "Incidents", Summary: true,
			Columns: []render.Column{{Title: "#"}, {Title: "target"}, {Title: "what"}, {Title: "counterfactual"}},
			Rows:    [][]render.Cell{{{Text: "1", Href: "#" + render.ID("t0", "target")}, {Text: n.Target}, {Text: "queueing: waiting > 0 for 20 s", Class: render.ClassFail, Prov: "vllm:num_requests_waiting > 0 from +2:30 to +2:50"}, {Text: "without it: 1,310 tokens/s", Prov: "computed: median decode rate outside the incident over Δ20.0s"}}},
		}}},
		render.Section{ID: "settle-polls", Title: "Settle polls", Tables: []render.Table{{
			Title: "Settle polls per span", Summary: true,
			Columns: []render.Column{{Title: "span"}, {Title: n.Target, Num: true}},
			Rows: [][]render.Cell{
				{{Text: "2s"}, {Text: "3", Prov: "polls until the rate stays within 5 % (span 2s)"}},
				{{Text: "10s"}, {Text: "5", Prov: "polls until the rate stays within 5 % (span 10s)"}},
				{{Text: "60s"}, {Text: "— (ceiling)", Class: render.ClassRefused, Prov: "refused (ceiling): the run is shorter than the span"}},
			},
		}}, Charts: []render.Chart{settleChart}},
	)
	return render.Report{
		Title:     "llmrec report: " + n.Target + " and llama-b",
		Generator: "llmrec v0.0.0-test",
		Header: render.Header{
			Facts: []render.Fact{
				{Name: "targets", Value: render.Cell{Text: "2"}},
				{Name: "duration", Value: render.Cell{Text: fmt.Sprintf("%ds", 2*(polls-1)), Prov: "first to last poll"}},
				{Name: "cadence", Value: render.Cell{Text: "2.0s", Prov: "configured interval"}},
				{Name: "span", Value: render.Cell{Text: "2.0s", Prov: "--span"}},
				{Name: "llmrec", Value: render.Cell{Text: "v0.0.0-test"}},
			},
			Tables: []render.Table{{
				Title:   "Targets",
				Columns: []render.Column{{Title: "target"}, {Title: "engine"}, {Title: "model"}},
				Rows: [][]render.Cell{
					{{Text: n.Target}, {Text: n.Engine, Prov: "vllm:cache_config_info / version label"}, {Text: n.Model}},
					{{Text: "llama-b"}, {Text: "llama.cpp b6000"}, {Text: "qwen2.5-0.5b"}},
				},
			}},
		},
		Verdicts: []render.Verdict{
			{Topic: "queueing", Class: render.ClassWarn, Text: "requests waited in 1 window; ceiling 14 running (" + n.Label + ")", Prov: "vllm:num_requests_waiting > 0 in 10 polls over Δ20.0s", Href: "#incidents"},
			{Topic: "incidents", Class: render.ClassFail, Text: "1 incident", Href: "#incidents"},
			{Topic: "seams", Class: render.ClassOK, Text: "none between the targets' counters"},
			{Topic: "drift", Class: render.ClassUnknown, Text: "not enough polls to judge"},
		},
		Sections: sections,
		Appendix: appendix,
	}
}
