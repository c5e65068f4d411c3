package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/redact"
)

// Summary value names shared by the summary formats (units in the name
// where they are time).
const (
	VRequests     = "requests"            // requests sent
	VCompleted    = "completed"           // requests that succeeded
	VErrors       = "errors"              // requests that failed
	VDuration     = "duration_s"          // the run's length
	VOutTokensPS  = "output_tokens_per_s" // output tokens over the run's wall time
	VRequestsPS   = "requests_per_s"
	VInTokensSum  = "input_tokens_total"
	VOutTokensSum = "output_tokens_total"
)

// pick is one summary value read from a path of a JSON document.
type pick struct {
	name, unit, path string
	scale            float64 // 0 = 1
}

// stats adds the mean, p50, p90 and p99 of a latency under prefix.
func stats(name, prefix, mean, p50, p90, p99 string, scale float64) []pick {
	return []pick{
		{name + "_mean_s", "s", prefix + mean, scale},
		{name + "_p50_s", "s", prefix + p50, scale},
		{name + "_p90_s", "s", prefix + p90, scale},
		{name + "_p99_s", "s", prefix + p99, scale},
	}
}

// at is the number at a dotted path of a decoded JSON document.
func at(doc map[string]any, path string) (float64, bool) {
	var cur any = doc
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		cur = m[k]
	}
	switch v := cur.(type) {
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// values reads picks from doc; a path the document lacks gives no value
// (absent, never 0).
func values(doc map[string]any, picks []pick) []Value {
	out := []Value{}
	for _, p := range picks {
		v, ok := at(doc, p.path)
		if !ok {
			continue
		}
		if p.scale != 0 {
			v *= p.scale
		}
		out = append(out, Value{Name: p.name, V: v, Unit: p.unit, Field: p.path})
	}
	return out
}

var infPerfPicks = append(append(append(append([]pick{
	{VRequests, "requests", "load_summary.count", 0},
	{VCompleted, "requests", "successes.count", 0},
	{VErrors, "requests", "failures.count", 0},
	{VDuration, "s", "benchmark_time_seconds", 0},
	{"send_duration_s", "s", "load_summary.send_duration", 0},
	{"requested_rate", "1/s", "load_summary.requested_rate", 0},
	{"achieved_rate", "1/s", "load_summary.achieved_rate", 0},
	{VOutTokensPS, "1/s", "successes.throughput.output_tokens_per_sec", 0},
	{"input_tokens_per_s", "1/s", "successes.throughput.input_tokens_per_sec", 0},
	{VRequestsPS, "1/s", "successes.throughput.requests_per_sec", 0},
	{VOutTokensSum, "tokens", "successes.output_tokens.total", 0},
	{VInTokensSum, "tokens", "successes.prompt_tokens.total", 0},
},
	stats("ttft", "successes.latency.time_to_first_token.", "mean", "median", "p90", "p99", 0)...),
	stats("e2e", "successes.latency.request_latency.", "mean", "median", "p90", "p99", 0)...),
	stats("itl", "successes.latency.inter_token_latency.", "mean", "median", "p90", "p99", 0)...),
	stats("tpot", "successes.latency.time_per_output_token.", "mean", "median", "p90", "p99", 0)...)

const noBounds = "none: the file holds no timestamps; placed in time only by run bounds the caller gives"

// readInfPerfStage reads an inference-perf stage_N or summary
// lifecycle_metrics.json.
func readInfPerfStage(data []byte, file string) (*Run, error) {
	doc, err := decodeObject(data, file)
	if err != nil {
		return nil, err
	}
	// inference-perf writes the same shape from the server's Prometheus
	// series over each stage: not the client's measurements.
	for _, k := range []string{"successes.queue_len.mean", "successes.kv_cache_usage_percentage.mean", "successes.rate"} {
		if _, ok := at(doc, k); ok {
			return nil, fmt.Errorf("%s: field %s: this is inference-perf's prometheus_metrics report, figures it queried from the server's Prometheus over each stage, not the client's measurements: not read as a client file", file, k)
		}
	}
	run := &Run{Meta: Meta{Tool: "inference-perf", Level: LevelSummary, Schema: "lifecycle_metrics.json (load_summary, successes, failures)",
		TimeBase: "none (latencies in seconds)", Aligned: "by run bounds alone: the file holds no timestamps"}}
	name := strings.TrimSuffix(filepath.Base(file), "_lifecycle_metrics.json")
	run.Summaries = append(run.Summaries, Summary{Name: name, Bounds: noBounds, Values: values(doc, infPerfPicks)})
	run.note("inter_token_latency here is over every gap between streamed chunks, its median can be near 0 when chunks arrive in bursts; per-label failure messages are not read")
	return run, nil
}

var llmperfPicks = append(append(append([]pick{
	{VRequests, "requests", "results_num_requests_started", 0},
	{VCompleted, "requests", "results_num_completed_requests", 0},
	{VErrors, "requests", "results_number_errors", 0},
	{VOutTokensPS, "1/s", "results_mean_output_throughput_token_per_s", 0},
	{"completed_per_min", "1/min", "results_num_completed_requests_per_min", 0},
	{"concurrency", "requests", "num_concurrent_requests", 0},
},
	stats("ttft", "results_ttft_s_", "mean", "quantiles_p50", "quantiles_p90", "quantiles_p99", 0)...),
	stats("e2e", "results_end_to_end_latency_s_", "mean", "quantiles_p50", "quantiles_p90", "quantiles_p99", 0)...),
	stats("itl", "results_inter_token_latency_s_", "mean", "quantiles_p50", "quantiles_p90", "quantiles_p99", 0)...)

// readLLMPerfSummary reads llmperf's *_summary.json.
func readLLMPerfSummary(data []byte, file string) (*Run, error) {
	doc, err := decodeObject(data, file)
	if err != nil {
		return nil, err
	}
	run := &Run{Meta: Meta{Tool: "llmperf", Level: LevelSummary, Schema: "*_summary.json (flat results_* fields)",
		TimeBase: "timestamp: Unix epoch seconds (integer), written at the end of the run", Aligned: "by run bounds alone"}}
	if v, ok := doc["version"].(string); ok {
		run.Meta.Version = v
	}
	s := Summary{Name: fmt.Sprint(doc["name"]), Bounds: noBounds, Values: values(doc, llmperfPicks)}
	if ts, ok := at(doc, "timestamp"); ok {
		end, err := epochSeconds(ts, "s")
		if err != nil {
			return nil, fmt.Errorf("%s: field timestamp: %w", file, err)
		}
		s.End = rate.Some(end)
		s.Bounds = "end: timestamp (written at the end of the run, whole seconds); no start"
		done, ok1 := s.Get(VCompleted)
		perMin, ok2 := s.Get("completed_per_min")
		if ok1 && ok2 && perMin.V > 0 {
			d := 60 * done.V / perMin.V
			s.Start = rate.Some(end - d)
			s.Values = append(s.Values, Value{Name: VDuration, V: d, Unit: "s", Field: "60 × results_num_completed_requests ÷ results_num_completed_requests_per_min"})
			s.Bounds = "end: timestamp (written at the end of the run, whole seconds); start: end − 60 × completed ÷ completed per minute (derived)"
		}
	}
	run.Summaries = append(run.Summaries, s)
	return run, nil
}

type llmperfResponse struct {
	ErrorCode    any      `json:"error_code"`
	ErrorMsg     string   `json:"error_msg"`
	ITL          *float64 `json:"inter_token_latency_s"`
	TTFT         *float64 `json:"ttft_s"`
	E2E          *float64 `json:"end_to_end_latency_s"`
	OutputTokens *float64 `json:"number_output_tokens"`
	InputTokens  *float64 `json:"number_input_tokens"`
}

// readLLMPerfRequests reads llmperf's *_individual_responses.json:
// durations only, no timestamps, so a run summary computed from them.
func readLLMPerfRequests(data []byte, file string) (*Run, error) {
	var rs []llmperfResponse
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, docErr(file, data, err)
	}
	run := &Run{Meta: Meta{Tool: "llmperf", Level: LevelSummary, Schema: "*_individual_responses.json (durations per request)",
		TimeBase: "none: durations in seconds, no timestamps", Aligned: "by run bounds alone: the records have no timestamps"}}
	var ttft, e2e, itl []float64
	in, out, errs := 0.0, 0.0, 0
	for i, r := range rs {
		if r.ErrorCode != nil || r.ErrorMsg != "" {
			errs++
			run.note("request %d: error %v: %s", i+1, r.ErrorCode, redact.Text(r.ErrorMsg))
			continue
		}
		for _, d := range []struct {
			p  *float64
			xs *[]float64
		}{{r.TTFT, &ttft}, {r.E2E, &e2e}, {r.ITL, &itl}} {
			if d.p != nil {
				*d.xs = append(*d.xs, *d.p)
			}
		}
		if r.InputTokens != nil {
			in += *r.InputTokens
		}
		if r.OutputTokens != nil {
			out += *r.OutputTokens
		}
	}
	s := Summary{Name: strings.TrimSuffix(filepath.Base(file), ".json"), Bounds: noBounds, Values: []Value{
		{Name: VRequests, V: float64(len(rs)), Unit: "requests", Field: "number of records"},
		{Name: VCompleted, V: float64(len(rs) - errs), Unit: "requests", Field: "records without error_code or error_msg"},
		{Name: VErrors, V: float64(errs), Unit: "requests", Field: "records with error_code or error_msg"},
		{Name: VInTokensSum, V: in, Unit: "tokens", Field: "Σ number_input_tokens of completed records"},
		{Name: VOutTokensSum, V: out, Unit: "tokens", Field: "Σ number_output_tokens of completed records"},
	}}
	for _, d := range []struct {
		name, field string
		xs          []float64
	}{{"ttft", "ttft_s", ttft}, {"e2e", "end_to_end_latency_s", e2e}, {"itl", "inter_token_latency_s", itl}} {
		if len(d.xs) == 0 {
			continue
		}
		for _, q := range []struct {
			suffix string
			q      float64
		}{{"_p50_s", 0.5}, {"_p90_s", 0.9}, {"_p99_s", 0.99}} {
			v := Quantile(d.xs, q.q)
			s.Values = append(s.Values, Value{Name: d.name + q.suffix, V: v.V, Unit: "s", Field: "linear-interpolated quantile of " + d.field + " over completed records"})
		}
		s.Values = append(s.Values, Value{Name: d.name + "_mean_s", V: mean(d.xs), Unit: "s", Field: "mean of " + d.field + " over completed records"})
	}
	run.Summaries = append(run.Summaries, s)
	return run, nil
}

var sglangPicks = []pick{
	{VCompleted, "requests", "completed", 0},
	{VDuration, "s", "duration", 0},
	{VOutTokensPS, "1/s", "output_throughput", 0},
	{VRequestsPS, "1/s", "request_throughput", 0},
	{"requested_rate", "1/s", "request_rate", 0},
	{"max_concurrency", "requests", "max_concurrency", 0},
	{VInTokensSum, "tokens", "total_input_tokens", 0},
	{VOutTokensSum, "tokens", "total_output_tokens", 0},
	{"output_tokens_retokenized_total", "tokens", "total_output_tokens_retokenized", 0},
	{"e2e_mean_s", "s", "mean_e2e_latency_ms", 1e-3},
	{"e2e_p50_s", "s", "median_e2e_latency_ms", 1e-3},
	{"e2e_p99_s", "s", "p99_e2e_latency_ms", 1e-3},
	{"ttft_mean_s", "s", "mean_ttft_ms", 1e-3},
	{"ttft_p50_s", "s", "median_ttft_ms", 1e-3},
	{"ttft_p99_s", "s", "p99_ttft_ms", 1e-3},
	{"itl_mean_s", "s", "mean_itl_ms", 1e-3},
	{"itl_p50_s", "s", "median_itl_ms", 1e-3},
	{"itl_p99_s", "s", "p99_itl_ms", 1e-3},
}

// readSGLang reads sglang.bench_serving's --output-file JSONL: one run
// summary a line.
func readSGLang(data []byte, file string) (*Run, error) {
	run := &Run{Meta: Meta{Tool: "SGLang bench_serving", Level: LevelSummary, Schema: "one summary object per run, appended a line per run",
		TimeBase: "none: durations (s) and latencies (ms), no timestamps", Aligned: "by run bounds alone: the lines have no timestamps"}}
	err := eachLine(data, run, func(line []byte, n int) error {
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var doc map[string]any
		if err := d.Decode(&doc); err != nil {
			return lineErr(file, n, err)
		}
		if doc == nil {
			return lineErr(file, n, fmt.Errorf("not a JSON object"))
		}
		name := "run " + strconv.Itoa(len(run.Summaries)+1)
		if r, ok := at(doc, "request_rate"); ok {
			name += fmt.Sprintf(": request rate %g", r)
		}
		if c, ok := at(doc, "max_concurrency"); ok {
			name += fmt.Sprintf(", max concurrency %g", c)
		}
		run.Summaries = append(run.Summaries, Summary{Name: name + fmt.Sprintf(" (line %d)", n), Bounds: noBounds, Values: values(doc, sglangPicks)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	run.note("output tokens are the server's usage counts; total_output_tokens_retokenized is the client's retokenisation of the text")
	return run, nil
}

// decodeObject decodes a JSON object with numbers kept exact.
func decodeObject(data []byte, file string) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		return nil, docErr(file, data, err)
	}
	if doc == nil {
		return nil, fmt.Errorf("%s: not a JSON object", file)
	}
	return doc, nil
}

type infPerfRequest struct {
	StartTime *float64 `json:"start_time"`
	EndTime   *float64 `json:"end_time"`
	Info      struct {
		InputTokens     *float64 `json:"input_tokens"`
		ResponseMetrics struct {
			OutputTokens     *float64  `json:"output_tokens"`
			OutputTokenTimes []float64 `json:"output_token_times"`
			ChunkTimes       []float64 `json:"chunk_times"`
		} `json:"response_metrics"`
	} `json:"info"`
	Error any `json:"error"`
}

// readInfPerfRequests reads inference-perf's per_request_lifecycle_metrics.json,
// whose times are time.perf_counter() seconds: only with an anchor.
func readInfPerfRequests(data []byte, file string, opt *Options) (*Run, error) {
	if opt.Anchor == nil {
		return nil, fmt.Errorf("%s: inference-perf per-request times are time.perf_counter() seconds: %w", file, errMonotonic)
	}
	var rs []infPerfRequest
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, docErr(file, data, err)
	}
	a := opt.Anchor
	run := &Run{Meta: Meta{Tool: "inference-perf", Level: LevelRequests, Schema: "per_request_lifecycle_metrics.json",
		TimeBase: fmt.Sprintf("time.perf_counter() seconds, anchored by the caller: %g ↔ %s", a.Mono, stamp(a.Epoch)),
		Aligned:  "by each request's anchored time: as exact as the anchor"}}
	epoch := func(t float64) float64 { return a.Epoch + t - a.Mono }
	for i, x := range rs {
		if x.StartTime == nil {
			return nil, fmt.Errorf("%s: record %d: no start_time", file, i+1)
		}
		r := Request{Start: epoch(*x.StartTime), Line: i + 1, Status: StatusOK}
		if x.EndTime != nil {
			if *x.EndTime < *x.StartTime {
				return nil, fmt.Errorf("%s: record %d: end_time before start_time", file, i+1)
			}
			r.End = rate.Some(epoch(*x.EndTime))
		}
		rm := &x.Info.ResponseMetrics
		times := rm.OutputTokenTimes
		if len(times) == 0 {
			times = rm.ChunkTimes
		}
		if len(times) > 0 {
			r.FirstToken = rate.Some(epoch(times[0]))
			r.TTFT = rate.Some(times[0] - *x.StartTime)
		}
		r.InputTokens, r.OutputTokens = ptrNum(x.Info.InputTokens), ptrNum(rm.OutputTokens)
		if r.End.Valid && r.FirstToken.Valid && r.OutputTokens.Valid && r.OutputTokens.V > 1 {
			r.ITL = rate.Some((r.End.V - r.FirstToken.V) / (r.OutputTokens.V - 1))
		}
		if x.Error != nil {
			r.Status = StatusError
			b, _ := json.Marshal(x.Error)
			r.Error = redact.Text(strings.Trim(string(b), `"`))
		}
		run.Requests = append(run.Requests, r)
	}
	run.note("no stage id per request: stages come from the per-stage reports' run.time bounds")
	return run, nil
}
