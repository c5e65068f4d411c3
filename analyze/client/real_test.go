package client

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
)

// sharedDir holds the real client files beside the repository.
const sharedDir = "../../../shared/clients"

// shared is the path of a shared client file, or skips the test when it
// is absent.
func shared(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(sharedDir, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no real client file: %s is absent (it sits beside the repository as ../shared/clients)", p)
	}
	return p
}

func read(t testing.TB, rel string, opt Options) *Run {
	t.Helper()
	run, err := ReadFile(shared(t, rel), opt)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func near(got, want, rel float64) bool {
	if want == 0 {
		return math.Abs(got) <= rel
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// stat is one metric of AIPerf's summary.
type stat struct {
	Avg   *float64 `json:"avg"`
	Min   *float64 `json:"min"`
	Max   *float64 `json:"max"`
	P1    *float64 `json:"p1"`
	P5    *float64 `json:"p5"`
	P25   *float64 `json:"p25"`
	P50   *float64 `json:"p50"`
	P75   *float64 `json:"p75"`
	P90   *float64 `json:"p90"`
	P95   *float64 `json:"p95"`
	P99   *float64 `json:"p99"`
	Std   *float64 `json:"std"`
	Count *int     `json:"count"`
	Unit  string   `json:"unit"`
}

// aiperfSummary reads profile_export_aiperf.json, either layout (metrics
// under "records", or at the top).
func aiperfSummary(t *testing.T, rel string) map[string]stat {
	t.Helper()
	data, err := os.ReadFile(shared(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if r, ok := doc["records"]; ok {
		data = r
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	out := map[string]stat{}
	for k, v := range all {
		var s stat
		if json.Unmarshal(v, &s) == nil && s.Unit != "" {
			out[k] = s
		}
	}
	return out
}

// checkStat compares the distribution of xs with a summary metric: every
// field the summary gives (mean, population std, min, max, linear
// percentiles), to rel.
func checkStat(t *testing.T, name string, xs []float64, s stat, rel float64) {
	t.Helper()
	if s.Count != nil && *s.Count != len(xs) {
		t.Errorf("%s: %d values, the summary counts %d", name, len(xs), *s.Count)
	}
	m := mean(xs)
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	std := math.Sqrt(v / float64(len(xs)))
	for _, c := range []struct {
		field string
		want  *float64
		got   float64
	}{
		{"avg", s.Avg, m}, {"std", s.Std, std},
		{"min", s.Min, Quantile(xs, 0).V}, {"max", s.Max, Quantile(xs, 1).V},
		{"p1", s.P1, Quantile(xs, 0.01).V}, {"p5", s.P5, Quantile(xs, 0.05).V}, {"p25", s.P25, Quantile(xs, 0.25).V},
		{"p50", s.P50, Quantile(xs, 0.5).V}, {"p75", s.P75, Quantile(xs, 0.75).V}, {"p90", s.P90, Quantile(xs, 0.9).V},
		{"p95", s.P95, Quantile(xs, 0.95).V}, {"p99", s.P99, Quantile(xs, 0.99).V},
	} {
		if c.want == nil {
			continue
		}
		// The summary's std of a constant can be a rounding residue.
		if c.field == "std" && *c.want < 1e-9 && c.got < 1e-9 {
			continue
		}
		if !near(c.got, *c.want, rel) {
			t.Errorf("%s %s: reproduced %.12g, the summary says %.12g", name, c.field, c.got, *c.want)
		}
	}
}

// field gathers a field of the ok requests.
func field(rs []Request, f func(*Request) rate.Num, scale float64) []float64 {
	var xs []float64
	for i := range rs {
		if rs[i].Status != StatusOK {
			continue
		}
		if v := f(&rs[i]); v.Valid {
			xs = append(xs, v.V*scale)
		}
	}
	return xs
}

var (
	fTTFTOf = func(r *Request) rate.Num { return r.TTFT }
	fITLOf  = func(r *Request) rate.Num { return r.ITL }
	fE2EOf  = func(r *Request) rate.Num { return r.E2E() }
	fInOf   = func(r *Request) rate.Num { return r.InputTokens }
	fOutOf  = func(r *Request) rate.Num { return r.OutputTokens }
)

// AIPerf's own summary of a complete run is reproduced from the
// per-request records: counts, every statistic of TTFT, request latency,
// ISL, OSL and ITL, the run's bounds and duration, request and token
// throughput. Not carried by the model and so not reproduced:
// inter_chunk_latency (a list per request), ttst, reasoning_token_count
// and output_token_count apart (OSL holds both), and
// output_token_throughput_per_user.
func TestAIPerfSummaryReproducedRun1(t *testing.T) {
	run := read(t, "aiperf/examples-artifacts-run1/profile_export.jsonl", Options{})
	sum := aiperfSummary(t, "aiperf/examples-artifacts-run1/profile_export_aiperf.json")
	if run.Meta.Schema != AIPerfEarly {
		t.Fatalf("schema %q, want the early one", run.Meta.Schema)
	}
	ok, cancelled := 0, 0
	for _, r := range run.Requests {
		switch r.Status {
		case StatusOK:
			ok++
		case StatusCancelled:
			cancelled++
			if r.End.Valid {
				t.Errorf("line %d: a cancelled request of the early schema has no end, read %v", r.Line, r.End)
			}
		}
	}
	if float64(ok) != *sum["request_count"].Avg || float64(cancelled) != *sum["error_request_count"].Avg {
		t.Errorf("%d ok and %d cancelled, the summary says %v and %v", ok, cancelled, *sum["request_count"].Avg, *sum["error_request_count"].Avg)
	}
	// ms in the summary; the reader's seconds.
	checkStat(t, "ttft", field(run.Requests, fTTFTOf, 1e3), sum["ttft"], 1e-9)
	checkStat(t, "inter_token_latency", field(run.Requests, fITLOf, 1e3), sum["inter_token_latency"], 1e-9)
	// End − start from epoch ns: 1 µs of float rounding on 9 s.
	checkStat(t, "request_latency", field(run.Requests, fE2EOf, 1e3), sum["request_latency"], 1e-6)
	checkStat(t, "input_sequence_length", field(run.Requests, fInOf, 1), sum["input_sequence_length"], 1e-12)
	checkStat(t, "output_sequence_length", field(run.Requests, fOutOf, 1), sum["output_sequence_length"], 1e-12)
	checkRun(t, run, sum, ok)
}

// checkRun checks the run's bounds and throughputs against the summary,
// through the client phase the reader cut from credit_phase.
func checkRun(t *testing.T, run *Run, sum map[string]stat, ok int) {
	t.Helper()
	ps, how := Phases(run)
	if how != FromField || len(ps) != 1 || ps[0].Name != "profiling" {
		t.Fatalf("phases %+v by %q, want one profiling phase from the phase field", ps, how)
	}
	p := ps[0]
	start, end := *sum["min_request_timestamp"].Avg/1e9, *sum["max_response_timestamp"].Avg/1e9
	if math.Abs(p.Start-start) > 1e-6 || math.Abs(p.End-end) > 1e-6 {
		t.Errorf("profiling %.6f to %.6f, the summary's min_request_timestamp/max_response_timestamp %.6f to %.6f", p.Start, p.End, start, end)
	}
	if d := *sum["benchmark_duration"].Avg; math.Abs(p.Duration()-d) > 1e-6 {
		t.Errorf("duration %.9f, the summary's benchmark_duration %.9f", p.Duration(), d)
	}
	f := Measure(run, ps)[0]
	for _, c := range []struct{ fig, metric string }{{FRequestsPS, "request_throughput"}, {FOutputTokensPS, "output_token_throughput"}} {
		g, _ := f.Get(c.fig)
		if !g.Value.Valid || !near(g.Value.V, *sum[c.metric].Avg, 1e-6) {
			t.Errorf("%s %v (%s), the summary's %s %v", c.fig, g.Value, g.Why, c.metric, *sum[c.metric].Avg)
		}
	}
	g, _ := f.Get("ttft_p99_s")
	if !near(g.Value.V*1e3, *sum[ttftName(sum)].P99, 1e-9) || g.Records != ok {
		t.Errorf("phase ttft p99 %v s of %d records, the summary's %v ms of %d", g.Value, g.Records, *sum[ttftName(sum)].P99, ok)
	}
	var isl, osl float64
	for _, r := range run.Requests {
		if r.Status == StatusOK {
			isl += r.InputTokens.V
			osl += r.OutputTokens.V
		}
	}
	if isl != *sum["total_isl"].Avg || osl != *sum["total_osl"].Avg {
		t.Errorf("total ISL %v, OSL %v; the summary %v, %v", isl, osl, *sum["total_isl"].Avg, *sum["total_osl"].Avg)
	}
}

func ttftName(sum map[string]stat) string {
	if _, ok := sum["ttft"]; ok {
		return "ttft"
	}
	return "time_to_first_token"
}

// The plot fixtures were trimmed upstream to 10 of 64 requests: their
// summaries' means, percentiles, totals, duration and throughputs are of
// 64 requests and cannot be reproduced from 10. What can: every record's
// value lies within the summary's min and max, every record lies within
// the run's bounds, a constant ISL reproduces exactly, and each record's
// ITL is (e2e − TTFT)/(OSL − 1) from its epoch-ns start and end to 1e-4
// (which checks the time base of both).
func TestAIPerfSummaryTrimmedFixtures(t *testing.T) {
	for _, dir := range []string{"aiperf/plot-fixture-qwen_concurrency1", "aiperf/plot-fixture-qwen_concurrency4"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			run := read(t, dir+"/profile_export.jsonl", Options{})
			sum := aiperfSummary(t, dir+"/profile_export_aiperf.json")
			if run.Meta.Schema != AIPerf03 {
				t.Fatalf("schema %q, want 0.3", run.Meta.Schema)
			}
			if n := *sum["request_count"].Avg; float64(len(run.Requests)) >= n {
				t.Fatalf("%d records of %v: not trimmed, reproduce the summary whole instead", len(run.Requests), n)
			}
			start, end := *sum["min_request_timestamp"].Avg/1e9, *sum["max_response_timestamp"].Avg/1e9
			for _, r := range run.Requests {
				if r.Start < start-1e-6 || r.End.V > end+1e-6 {
					t.Errorf("line %d: %.6f to %.6f outside the run's %.6f to %.6f", r.Line, r.Start, r.End.V, start, end)
				}
				for _, c := range []struct {
					metric string
					v      float64
				}{{"time_to_first_token", r.TTFT.V * 1e3}, {"request_latency", r.E2E().V * 1e3}, {"inter_token_latency", r.ITL.V * 1e3},
					{"output_sequence_length", r.OutputTokens.V}, {"input_sequence_length", r.InputTokens.V}} {
					s := sum[c.metric]
					if c.v < *s.Min-1e-6 || c.v > *s.Max+1e-6 {
						t.Errorf("line %d: %s %v outside the summary's [%v, %v]", r.Line, c.metric, c.v, *s.Min, *s.Max)
					}
				}
				// AIPerf times latencies on a monotonic clock and stamps the
				// bounds with time_ns: the two differ here by tens of µs a
				// request (1e-5 of the ITL), not by a unit.
				itl := (r.E2E().V - r.TTFT.V) / (r.OutputTokens.V - 1)
				if !near(itl, r.ITL.V, 1e-4) {
					t.Errorf("line %d: (e2e − ttft)/(osl − 1) = %v s, inter_token_latency %v s", r.Line, itl, r.ITL.V)
				}
			}
			isl := sum["input_sequence_length"]
			if *isl.Min == *isl.Max {
				checkStat(t, "input_sequence_length", field(run.Requests, fInOf, 1), stat{Avg: isl.Avg, Min: isl.Min, Max: isl.Max, P50: isl.P50, P99: isl.P99}, 0)
			}
		})
	}
}

// The early schema's records check the same identity: ITL from the
// published TTFT and the epoch-ns bounds.
func TestAIPerfEarlyITLIdentity(t *testing.T) {
	run := read(t, "aiperf/examples-artifacts-run1/profile_export.jsonl", Options{})
	for _, r := range run.Requests {
		if r.Status != StatusOK {
			continue
		}
		itl := (r.E2E().V - r.TTFT.V) / (r.OutputTokens.V - 1)
		if !near(itl, r.ITL.V, 1e-6) {
			t.Errorf("line %d: (e2e − ttft)/(osl − 1) = %v s, inter_token_latency %v s", r.Line, itl, r.ITL.V)
		}
	}
}

// A cancelled AIPerf request keeps its error text, redacted; none of the
// shared file's texts holds a URL, so this one is made up from its line.
func TestAIPerfCancelledAndRedacted(t *testing.T) {
	line := `{"metadata":{"timestamp_ns":1759522419154829652,"credit_phase":"profiling"},"metrics":{"error_request_count":{"value":1,"unit":"requests"}},"error":{"code":502,"type":"HTTPError","message":"Post \"http://user:pw@10.0.0.1:8000/v1/chat?api_key=SECRET\": bad gateway"}}
{"metadata":{"timestamp_ns":1759522419155727799,"credit_phase":"profiling"},"metrics":{"error_request_count":{"value":1,"unit":"requests"}},"error":{"code":499,"type":"RequestCancellationError","message":"Request was cancelled after 0.000 seconds"}}
`
	run, err := Read([]byte(line), "made-up.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := run.Requests
	if r[0].Status != StatusError || r[1].Status != StatusCancelled {
		t.Fatalf("statuses %q, %q", r[0].Status, r[1].Status)
	}
	if strings.Contains(r[0].Error, "SECRET") || strings.Contains(r[0].Error, "pw") || !strings.Contains(r[0].Error, "bad gateway") {
		t.Errorf("error text %q: secret kept or message lost", r[0].Error)
	}
}

// GuideLLM's JSON and YAML exports of one run read the same; the file
// lists 1 of its 47 requests, so the stage's rates over wall time are
// refused and its quantiles are of the one listed.
func TestGuideLLMOld(t *testing.T) {
	j := read(t, "guidellm/tests-unit-entrypoints-assets/benchmarks_stripped.json", Options{})
	y := read(t, "guidellm/tests-unit-entrypoints-assets/benchmarks_stripped.yaml", Options{})
	if len(j.Requests) != 1 || len(y.Requests) != 1 {
		t.Fatalf("%d and %d requests, want 1", len(j.Requests), len(y.Requests))
	}
	a, b := j.Requests[0], y.Requests[0]
	a.Line, b.Line = 0, 0
	if a != b {
		t.Errorf("JSON %+v\nYAML %+v", a, b)
	}
	if a.Start != 1749157168.1827004 || a.End.V != 1749157168.871885 || a.FirstToken.V != 1749157168.2039824 ||
		a.InputTokens.V != 257 || a.OutputTokens.V != 128 || a.Status != StatusOK || !near(a.TTFT.V, 0.021281957626342773, 1e-12) {
		t.Errorf("request %+v", a)
	}
	ps, how := Phases(j)
	if how != FromStages || len(ps) != 1 || ps[0].Name != "benchmark 0: synchronous" || ps[0].Sampled == "" {
		t.Fatalf("phases %+v by %q", ps, how)
	}
	f := Measure(j, ps)[0]
	for _, name := range []string{FOutputTokensPS, FRequestsPS, FConcMean} {
		if g, _ := f.Get(name); g.Value.Valid || !strings.Contains(g.Why, "1 of the 47") {
			t.Errorf("%s %v (%q): a sample's rate over wall time must be refused", name, g.Value, g.Why)
		}
	}
	if g, _ := f.Get("e2e_p50_s"); !near(g.Value.V, 0.6891846656799316, 1e-9) {
		t.Errorf("e2e p50 %v", g.Value)
	}
}

// GuideLLM's report v2 fixture saved no requests: two stages from the
// scheduler's measured bounds, and every figure absent, none 0.
func TestGuideLLMV2(t *testing.T) {
	run := read(t, "guidellm/llm-d-benchmark-fixture/guidellm_report_v2.json", Options{})
	if run.Meta.Version != "0.8.0.dev18" || run.Meta.Level != LevelSummary || len(run.Stages) != 2 {
		t.Fatalf("meta %+v, %d stages", run.Meta, len(run.Stages))
	}
	if s := run.Stages[0]; s.Start != 1786678148.2526348 || s.End != 1786678153.2722828 || s.Name != "benchmark 0: constant 2 req/s" {
		t.Errorf("stage %+v", s)
	}
	ps, _ := Phases(run)
	for _, f := range Measure(run, ps) {
		for _, g := range f.Figures {
			if g.Value.Valid || g.Why == "" {
				t.Errorf("%s %s = %v (%q): no records, so no figure", f.Phase.Name, g.Name, g.Value, g.Why)
			}
		}
	}
}

// llmperf's summary quantiles are linear percentiles of its individual
// responses: the durations-only file reproduces them.
func TestLLMPerf(t *testing.T) {
	dir := "llmperf/yi-1.5-34b-4xa10g-vllm-concurrency8/"
	ind := read(t, dir+"01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json", Options{})
	sum := read(t, dir+"01-ai-Yi-1-5-34B-Chat_550_150_summary.json", Options{})
	if ind.Meta.Level != LevelSummary || sum.Meta.Level != LevelSummary {
		t.Fatalf("levels %q, %q: both are summaries without timestamps", ind.Meta.Level, sum.Meta.Level)
	}
	a, b := &ind.Summaries[0], &sum.Summaries[0]
	for _, name := range []string{"ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "ttft_mean_s", "e2e_p50_s", "e2e_p99_s", "itl_p50_s", "itl_mean_s", VCompleted, VErrors} {
		x, ok1 := a.Get(name)
		y, ok2 := b.Get(name)
		if !ok1 || !ok2 || !near(x.V, y.V, 1e-9) {
			t.Errorf("%s: from the responses %v (%v), the summary %v (%v)", name, x.V, ok1, y.V, ok2)
		}
	}
	if !b.End.Valid || b.End.V != 1718209114 || !b.Start.Valid || !near(b.End.V-b.Start.V, 60*104/36.044085449240555, 1e-6) {
		t.Errorf("bounds %v to %v (%s)", b.Start, b.End, b.Bounds)
	}
	if a.Start.Valid || a.End.Valid {
		t.Errorf("individual responses have no timestamps, read bounds %v to %v", a.Start, a.End)
	}
}

// inference-perf: stage lifecycle metrics are summaries; its
// prometheus_metrics files, the server's figures, are refused; per-request
// perf_counter times need an anchor.
func TestInferencePerf(t *testing.T) {
	run := read(t, "inference-perf/kubecon-na-2025-vllm-results/stage_0_lifecycle_metrics.json", Options{})
	s := run.Summaries[0]
	if v, _ := s.Get("ttft_p50_s"); v.V != 0.031026913959067315 || v.Field != "successes.latency.time_to_first_token.median" {
		t.Errorf("ttft p50 %+v", v)
	}
	if _, ok := s.Get(VDuration); ok {
		t.Errorf("this layout has no benchmark_time_seconds: no duration")
	}
	_, err := ReadFile(shared(t, "inference-perf/kubecon-na-2025-vllm-results/stage_0_prometheus_metrics.json"), Options{})
	if err == nil || !strings.Contains(err.Error(), "not the client's measurements") {
		t.Errorf("prometheus_metrics read as a client file: %v", err)
	}
	p := shared(t, "inference-perf/synthetic-validation-corpus-v0_5_0-clean-two-stage-run/per_request_lifecycle_metrics.json")
	if _, err := ReadFile(p, Options{}); !errors.Is(err, errMonotonic) {
		t.Errorf("per-request perf_counter times read without an anchor: %v", err)
	}
	run, err = ReadFile(p, Options{Anchor: &Anchor{Mono: 0, Epoch: 1.8e9}})
	if err != nil {
		t.Fatal(err)
	}
	r := run.Requests[0]
	if len(run.Requests) != 6 || r.Start != 1.8e9 || r.End.V != 1.8e9+1 || !near(r.TTFT.V, 0.1111111111111111, 1e-9) || r.OutputTokens.V != 8 {
		t.Errorf("%d requests, first %+v", len(run.Requests), r)
	}
}

// SGLang appends one summary line per run.
func TestSGLang(t *testing.T) {
	run := read(t, "sglang/datacrunch-h200/llama_3_3_70b_online_output.jsonl", Options{})
	if len(run.Summaries) != 7 {
		t.Fatalf("%d summaries, want 7", len(run.Summaries))
	}
	s := run.Summaries[0]
	if v, _ := s.Get("ttft_p50_s"); !near(v.V, 0.08574514742940664, 1e-12) {
		t.Errorf("ttft p50 %v", v.V)
	}
	if v, _ := s.Get(VDuration); v.V != 298.3675805060193 {
		t.Errorf("duration %v", v.V)
	}
}

// GPU telemetry: one GPU through two DCGM exporters is counted once; the
// power integral agrees with DCGM's energy counter over the samples'
// span to within the lag between them (a unit slip, MJ or ns, would be a
// factor of 1000); bounds past the samples are refused.
func TestTelemetryEnergy(t *testing.T) {
	run := read(t, "aiperf/plot-fixture-qwen_concurrency1/gpu_telemetry_export.jsonl", Options{})
	if len(run.Power) != 20 {
		t.Fatalf("%d samples", len(run.Power))
	}
	var src []PowerSample
	for _, s := range run.Power {
		if s.Source == run.Power[0].Source {
			src = append(src, s)
		}
	}
	a, b := src[0], src[len(src)-1]
	e := EnergyOver(run.Power, a.T, b.T, 1)
	if e.GPUs != 1 || !e.Joules.Valid || !strings.Contains(e.Why, "another source") {
		t.Fatalf("energy %+v", e)
	}
	counter := b.EnergyJ.V - a.EnergyJ.V
	if !near(e.Joules.V, counter, 0.15) {
		t.Errorf("∫ power %v J, energy counter %v J", e.Joules.V, counter)
	}
	if e := EnergyOver(run.Power, a.T-10, b.T, 1); e.Joules.Valid || !strings.Contains(e.Why, "cover") {
		t.Errorf("energy past the samples %+v", e)
	}
}

// Files that are not per-request client records are refused, and the
// error lists what was tried.
func TestDetectRefuses(t *testing.T) {
	for _, rel := range []string{
		"aiperf/examples-artifacts-run1/profile_export_aiperf.json",
		"aiperf/synthetic-rust-golden/server_metrics_export.json",
		"llm-d-benchmark/br_v0_2_example.yaml",
	} {
		_, err := ReadFile(shared(t, rel), Options{})
		if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "tried: AIPerf profile_export.jsonl") {
			t.Errorf("%s: %v", rel, err)
		}
	}
}

// Energy per token on the shared fixture is refused: its telemetry was
// trimmed to 3 s before the first kept request.
func TestEnergyPerTokenRefusedOnTrimmedFixture(t *testing.T) {
	dir := "aiperf/plot-fixture-qwen_concurrency1/"
	run := read(t, dir+"profile_export.jsonl", Options{})
	tel := read(t, dir+"gpu_telemetry_export.jsonl", Options{})
	ps, _ := Phases(run)
	f := Measure(run, ps)[0]
	g := EnergyPerToken(tel.Power, &f, 1)
	if g.Value.Valid || !strings.Contains(g.Why, "energy unknown") || !strings.Contains(g.Why, "cover") {
		t.Errorf("energy per token %v (%q)", g.Value, g.Why)
	}
}
