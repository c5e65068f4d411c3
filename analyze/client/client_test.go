package client

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// A bad line is an error naming the file, the line and, for JSON, the
// column or field; the lines before it are not returned as a partial read.
func TestBadLineNamesFileAndLine(t *testing.T) {
	good := `{"metadata":{"request_start_ns":1762551534797067827,"request_end_ns":1762551538441354976,"benchmark_phase":"profiling"},"metrics":{"time_to_first_token":{"value":31.7,"unit":"ms"}},"error":null}`
	cases := []struct {
		name, data, want string
	}{
		{"aiperf syntax", good + "\n" + good + "\n" + `{"metadata":{"request_start_ns":17625515347970678` + "\n", "x.jsonl:3:"},
		{"aiperf type", good + "\n" + `{"metadata":{"request_start_ns":"soon"},"metrics":{}}` + "\n", "x.jsonl:2:"},
		{"aiperf unit", good + "\n" + strings.Replace(good, `"ms"`, `"fortnights"`, 1) + "\n", `x.jsonl:2: metrics.time_to_first_token: unit "fortnights"`},
		{"aiperf no start", `{"metadata":{"benchmark_phase":"warmup"},"metrics":{}}`, "x.jsonl:1: no request start"},
		{"aiperf end before start", strings.Replace(good, "1762551538441354976", "1762551530000000000", 1), "x.jsonl:1: request ends"},
		{"csv fields", "start_s,end_s\n1762551534.1,1762551535.2\n1762551534.1\n", "x.jsonl:3: 1 fields"},
		{"csv number", "start_s,end_s,output_tokens\n1762551534.1,1762551535.2,12\n1762551534.1,1762551535.2,many\n", `x.jsonl:3: field output_tokens: "many"`},
		{"csv status", "start_s,status\n1762551534.1,ok\n1762551534.1,meh\n", `x.jsonl:3: field status: "meh"`},
		{"jsonl generic", `{"start_s":1762551534.1}` + "\n" + `{"start_s":[1]}` + "\n", "x.jsonl:2: field start"},
		{"telemetry", `{"timestamp_ns":1762551530946074466,"gpu_uuid":"G","telemetry_data":{"gpu_power_usage":30.2}}` + "\n" + `{"timestamp_ns":12,"gpu_uuid":"G","telemetry_data":{}}`, "x.jsonl:2: timestamp_ns"},
		{"sglang", `{"backend":"sglang","completed":3}` + "\n" + `{"backend":"sglang",` + "\n", "x.jsonl:2:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, err := Read([]byte(c.data), "x.jsonl", Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
			if run != nil {
				t.Errorf("a partial read returned beside the error")
			}
		})
	}
}

// A JSON document's error names its line and column.
func TestBadDocumentNamesLine(t *testing.T) {
	doc := "{\n \"benchmarks\": [\n  {\"start_time\": 1749157168.05,\n   \"end_time\": \"later\"}\n ]\n}\n"
	_, err := Read([]byte(doc), "g.json", Options{})
	if err == nil || !strings.Contains(err.Error(), "g.json:4:") || !strings.Contains(err.Error(), "end_time") {
		t.Fatalf("error %v, want g.json:4 and the field", err)
	}
}

// Blank lines inside a file are counted, not silently passed over.
func TestBlankLinesCounted(t *testing.T) {
	data := "start_s\n1762551534.1\n"
	run, err := Read([]byte(`{"start_s":1762551534.1}`+"\n\n"+`{"start_s":1762551535.1}`+"\n"), "x.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Requests) != 2 || len(run.Meta.Skipped) != 1 || run.Meta.Skipped[0].Count != 1 || run.Meta.Skipped[0].Lines[0] != 2 {
		t.Errorf("%d requests, skipped %+v", len(run.Requests), run.Meta.Skipped)
	}
	if _, err := Read([]byte(data), "x.csv", Options{}); err != nil {
		t.Error(err)
	}
}

// Generic columns: units from the header's suffixes, epoch units by
// magnitude where unambiguous, TTFT and first token derived from each
// other, ITL from the end, error text redacted.
func TestGenericCSV(t *testing.T) {
	data := `start_ms,end_ms,ttft_ms,prompt_tokens,completion_tokens,status,error,phase
1762551534000,1762551536000,250,100,21,ok,,warmup
1762551536000,1762551536500,,100,,error,"dial tcp: Get ""https://bob:hunter2@api.example.com/v1?token=abc"": refused",measure
`
	run, err := Read([]byte(data), "g.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Format != FormatGenericCSV || len(run.Requests) != 2 {
		t.Fatalf("format %q, %d requests", run.Meta.Format, len(run.Requests))
	}
	r := run.Requests[0]
	if r.Start != 1762551534 || r.End.V != 1762551536 || r.TTFT.V != 0.25 || r.FirstToken.V != 1762551534.25 ||
		!near(r.ITL.V, 1.75/20, 1e-12) || r.Phase != "warmup" || r.Line != 2 {
		t.Errorf("request %+v", r)
	}
	e := run.Requests[1]
	if e.Status != StatusError || strings.Contains(e.Error, "hunter2") || strings.Contains(e.Error, "abc") || !strings.Contains(e.Error, "refused") {
		t.Errorf("error request %+v", e)
	}
	if e.ITL.Valid || e.TTFT.Valid {
		t.Errorf("unknown ITL/TTFT read as %v/%v: absent is never 0", e.ITL, e.TTFT)
	}
}

// A time column may name its clock before its unit (the llama.cpp real
// runs' requests.csv): start_unix_ms is start in ms, an HTTP code is a
// status, request_id is no field; a duration or an unknown name with
// _unix is not read as a time.
func TestGenericUnixColumns(t *testing.T) {
	data := `request_id,phase,start_unix_ms,end_unix_ms,first_token_unix_ms,status,input_tokens,output_tokens,error
1,load-4clients,1796399827563,1796399828191,1796399827574,200,48,128,
2,load-8clients,1796399827600,1796399827700,,503,49,,busy
3,load-8clients,1796399827600,1796399827900,1796399827650,0,,,stream ended without a final chunk
`
	run, err := Read([]byte(data), "requests.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Format != FormatGenericCSV || len(run.Requests) != 3 {
		t.Fatalf("format %q, %d requests", run.Meta.Format, len(run.Requests))
	}
	if b := run.Requests[2]; b.Status != StatusError || b.OutputTokens.Valid {
		t.Errorf("status 0 (no complete response) read as %+v", b)
	}
	r := run.Requests[0]
	if !near(r.Start, 1796399827.563, 1e-12) || !near(r.End.V, 1796399828.191, 1e-12) || !near(r.TTFT.V, 0.011, 1e-4) ||
		r.Status != StatusOK || r.Phase != "load-4clients" || r.OutputTokens.V != 128 || r.InputTokens.V != 48 {
		t.Errorf("request %+v", r)
	}
	if e := run.Requests[1]; e.Status != StatusError || e.TTFT.Valid || e.Error != "busy" {
		t.Errorf("error request %+v", e)
	}
	if !strings.Contains(run.Meta.TimeBase, "start: epoch ms") {
		t.Errorf("time base %q does not say start is epoch ms", run.Meta.TimeBase)
	}
	for _, header := range []string{"ttft_unix_ms,end_s", "request_unix_ms,end_s", "_unix_ms,end_s"} {
		if _, err := Read([]byte(header+"\n1,2\n"), "x.csv", Options{}); err == nil {
			t.Errorf("header %q read: no start column", header)
		}
	}
}

// Time bases: a number whose unit its size does not tell, a local time
// without a zone, a monotonic clock without an anchor, and a duration
// without a unit are each refused with the reason; given the unit, zone
// or anchor they read.
func TestGenericTimeBases(t *testing.T) {
	refuse := []struct {
		name, data, want string
		opt              Options
	}{
		{"ambiguous magnitude", "start\n176255153400000\n", "no Unix time", Options{}},
		{"local time", "start\n2025-11-07T13:38:54.793124\n", "local time without a zone", Options{}},
		{"monotonic", "start\n12.5\n", "monotonic clock", Options{}},
		{"stated unit, monotonic value", "start_s\n12.5\n", "monotonic clock", Options{}},
		{"stated unit, wrong", "start\n1762551534000\n", "not a Unix time", Options{TimeUnit: "us"}},
		{"duration without a unit", "start_s,ttft\n1762551534,0.2\n", "names no unit", Options{}},
		{"no start", "end_s,ttft_ms\n1762551534,2\n", "no start column", Options{Format: FormatGenericCSV}},
	}
	for _, c := range refuse {
		_, err := Read([]byte(c.data), "t.csv", c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	accept := []struct {
		name, data string
		opt        Options
		want       float64
	}{
		{"stated unit", "start\n1762551534000000\n", Options{TimeUnit: "us"}, 1762551534},
		{"zone given", "start\n2025-11-07T13:38:54.5\n", Options{TZ: la}, 1762551534.5},
		{"zone written", "start\n2025-11-07T21:38:54.5Z\n", Options{}, 1762551534.5},
		{"anchor", "start\n12.5\n", Options{Anchor: &Anchor{Mono: 10, Epoch: 1762551534}}, 1762551536.5},
		{"duration unit given", "start_s,ttft\n1762551534.5,0.2\n", Options{DurationUnit: "s"}, 1762551534.5},
	}
	for _, c := range accept {
		run, err := Read([]byte(c.data), "t.csv", c.opt)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := run.Requests[0].Start; math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s: start %.6f, want %.6f", c.name, got, c.want)
		}
	}
}

// A column map names columns the header does not spell the usual way.
func TestGenericColumnMap(t *testing.T) {
	data := "sent,done,firstbyte_ms\n1762551534,1762551535,120\n"
	opt := Options{Format: FormatGenericCSV, Columns: map[string]string{"start": "sent", "end": "done", "ttft": "firstbyte_ms"}, TimeUnit: "s"}
	run, err := Read([]byte(data), "m.csv", opt)
	if err != nil {
		t.Fatal(err)
	}
	if r := run.Requests[0]; r.Start != 1762551534 || r.End.V != 1762551535 || r.TTFT.V != 0.12 {
		t.Errorf("request %+v", r)
	}
	opt.Columns["nonsense"] = "sent"
	if _, err := Read([]byte(data), "m.csv", opt); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("unknown field in the map: %v", err)
	}
}

// Detection by content names what it tried.
func TestDetectUnknown(t *testing.T) {
	for _, data := range []string{"hello world\n", `{"foo": 1}`, "[1, 2]", "a,b\n1,2\n"} {
		_, err := Read([]byte(data), "u.txt", Options{})
		if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "u.txt") || !strings.Contains(err.Error(), "tried: ") {
			t.Errorf("%q: %v", data, err)
		}
	}
}

// closedLoop makes the records of a closed-loop client: for each level
// (clients, seconds) that many clients each send a request of lat seconds
// as soon as the last returns, 100 output tokens each.
func closedLoop(t0, lat float64, levels ...[2]float64) []Request {
	var rs []Request
	at := t0
	for _, l := range levels {
		n, d := int(l[0]), l[1]
		for c := range n {
			// Clients start staggered within one latency.
			s := at + lat*float64(c)/float64(n)
			for ; s+lat <= at+d; s += lat {
				rs = append(rs, Request{Start: s, End: some(s + lat), TTFT: some(0.1), FirstToken: some(s + 0.1),
					OutputTokens: some(100), InputTokens: some(50), Status: StatusOK, Line: len(rs) + 1})
			}
		}
		at += d
	}
	return rs
}

// Without phase labels the phases are the steady concurrency levels,
// each measured: its mean concurrency near the level and its request rate
// near level ÷ latency.
func TestLevels(t *testing.T) {
	rs := closedLoop(1.7e9, 1, [2]float64{2, 60}, [2]float64{6, 60}, [2]float64{1, 60})
	run := &Run{Requests: rs}
	ps, how := Phases(run)
	if how != FromLevels || len(ps) != 3 {
		t.Fatalf("%d phases by %q: %+v", len(ps), how, ps)
	}
	for i, want := range []float64{2, 6, 1} {
		p := ps[i]
		if p.Name != fmt.Sprintf("concurrency ≈%d", int(want)) || p.Source != Source {
			t.Errorf("phase %d named %q", i, p.Name)
		}
		// Each level's bounds lie within its stretch, to a window's slack.
		lo, hi := 1.7e9+60*float64(i), 1.7e9+60*float64(i+1)
		if p.Start < lo-3 || p.End > hi+3 || p.Duration() < 40 {
			t.Errorf("%s: %.1f to %.1f, the level ran %.0f to %.0f", p.Name, p.Start-1.7e9, p.End-1.7e9, lo-1.7e9, hi-1.7e9)
		}
		f := measure(rs, &p, nil)
		m, _ := f.Get(FConcMean)
		r, _ := f.Get(FRequestsPS)
		tok, _ := f.Get(FOutputTokensPS)
		if !near(m.Value.V, want, 0.1) || !near(r.Value.V, want, 0.15) || !near(tok.Value.V, 100*want, 0.15) {
			t.Errorf("%s: concurrency %v, %v req/s, %v tokens/s", p.Name, m.Value, r.Value, tok.Value)
		}
	}
}

// With phase labels the phases are the labels, each holding only its own
// records, even where they overlap in time.
func TestLabelledPhases(t *testing.T) {
	rs := closedLoop(1.7e9, 1, [2]float64{2, 10}, [2]float64{4, 30})
	for i := range rs {
		rs[i].Phase = "profiling"
		if rs[i].Start < 1.7e9+10 {
			rs[i].Phase = "warmup"
		}
	}
	rs = append(rs, Request{Start: 1.7e9 + 20, Status: StatusCancelled, Phase: "profiling", Error: "cancelled"})
	run := &Run{Requests: rs}
	ps, how := Phases(run)
	if how != FromField || len(ps) != 2 || ps[0].Name != "warmup" || ps[1].Name != "profiling" {
		t.Fatalf("phases %+v by %q", ps, how)
	}
	unlabelled := &Run{Requests: append(slices.Clone(rs), Request{Start: 1.7e9 + 5, Status: StatusOK})}
	if _, how := Phases(unlabelled); how != FromField+" (1 requests without a phase label are in none)" {
		t.Errorf("a record without a label unsaid: %q", how)
	}
	warm := 0
	for _, r := range rs {
		if r.Phase == "warmup" {
			warm++
		}
	}
	fs := Measure(run, ps)
	w, p := fs[0], fs[1]
	if w.Started[StatusOK] != warm || p.Started[StatusCancelled] != 1 || warm == 0 {
		t.Errorf("warmup started %v, profiling %v", w.Started, p.Started)
	}
	c, _ := p.Get(FCancelRate)
	if !near(c.Value.V, 1/float64(p.Started[StatusOK]+1), 1e-12) {
		t.Errorf("cancel rate %v of %v", c.Value, p.Started)
	}
	for _, g := range p.Figures {
		if !strings.Contains(g.Formula, `labelled "profiling"`) || g.Formula == "" {
			t.Errorf("%s: formula %q does not say its records", g.Name, g.Formula)
		}
	}
}

// A phase with no records measures nothing, not 0; quantiles of no
// request are absent with the reason.
func TestMeasureEmpty(t *testing.T) {
	p := Phase{Label: "nothing"}
	p.Start, p.End = 1.7e9, 1.7e9+10
	f := measure(closedLoop(1.7e9, 1, [2]float64{1, 10}), &p, nil)
	for _, g := range f.Figures {
		if g.Value.Valid || g.Why == "" {
			t.Errorf("%s = %v (%q)", g.Name, g.Value, g.Why)
		}
	}
}

func BenchmarkReadAIPerf(b *testing.B) {
	p := shared(b, "aiperf/examples-artifacts-run1/profile_export.jsonl")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(data, p, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLevels(b *testing.B) {
	rs := closedLoop(1.7e9, 1, [2]float64{8, 600}, [2]float64{32, 600})
	run := &Run{Requests: rs}
	b.ReportAllocs()
	for b.Loop() {
		ps, _ := Phases(run)
		Measure(run, ps)
	}
}

// GuideLLM v2's per-request records (GenerativeRequestStats) read from
// their computed fields or info.timings; the error from info.error; a
// record without a start is counted as skipped. Made up: the shared v2
// fixture saved none.
func TestGuideLLMV2Requests(t *testing.T) {
	doc := `{"metadata":{"version":2,"guidellm_version":"0.8"},"benchmarks":[{"config":{"strategy":{"type_":"concurrent","streams":4}},
"start_time":1786678148.0,"end_time":1786678158.0,"scheduler_metrics":{"requests_made":{"total":3}},
"requests":{"successful":[{"request_start_time":1786678148.5,"request_end_time":1786678149.5,"time_to_first_token_ms":40,"prompt_tokens":10,"output_tokens":5}],
"errored":[{"info":{"error":"Post https://k:s@h/v1?key=z: 500","timings":{"request_start":1786678150.0,"first_token_iteration":1786678150.25,"request_end":1786678151.0}}}],
"incomplete":[{"info":{"timings":{}}}]}}]}`
	run, err := Read([]byte(doc), "v2.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Requests) != 2 || len(run.Meta.Skipped) != 1 || run.Meta.Skipped[0].Count != 1 {
		t.Fatalf("%d requests, skipped %+v", len(run.Requests), run.Meta.Skipped)
	}
	a, b := run.Requests[0], run.Requests[1]
	if a.Start != 1786678148.5 || a.End.V != 1786678149.5 || a.TTFT.V != 0.04 || a.OutputTokens.V != 5 || a.Phase != "benchmark 0: concurrent 4 streams" {
		t.Errorf("successful %+v", a)
	}
	if b.Status != StatusError || b.TTFT.V != 0.25 || !strings.Contains(b.Error, "500") || strings.Contains(b.Error, "k:s") || strings.Contains(b.Error, "key=z") {
		t.Errorf("errored %+v", b)
	}
}

// Energy per token: a GPU at a steady 200 W through a phase of closed-loop
// requests is 200 W × the phase's length ÷ its output tokens.
func TestEnergyPerToken(t *testing.T) {
	rs := closedLoop(1.7e9, 1, [2]float64{4, 60})
	run := &Run{Requests: rs}
	p := Phase{}
	p.Start, p.End = 1.7e9+10, 1.7e9+50
	f := Measure(run, []Phase{p})[0]
	var power []PowerSample
	for s := 1.7e9; s <= 1.7e9+60; s += 0.5 {
		power = append(power, PowerSample{T: s, GPU: "G", Watts: some(200)})
	}
	tps, _ := f.Get(FOutputTokensPS)
	g := EnergyPerToken(power, &f, 1)
	want := 200 * 40 / (tps.Value.V * 40)
	if !g.Value.Valid || !near(g.Value.V, want, 1e-9) {
		t.Errorf("energy per token %v (%q), want %v", g.Value, g.Why, want)
	}
	if g := EnergyPerToken(power[:10], &f, 1); g.Value.Valid {
		t.Errorf("samples that stop before the phase gave %v", g.Value)
	}
}
