package engine

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/expo"
)

// feed observes one body at time T (request sent 10 ms earlier).
func feed(t *testing.T, tr *Tracker, T float64, body string) Cells {
	t.Helper()
	ss, err := expo.Parse([]byte(body), "text/plain")
	if err != nil {
		t.Fatalf("body at %v: %v", T, err)
	}
	return tr.ObserveSamples(T, T-0.01, ss, nil)
}

// cell returns a cell that must exist.
func cell(t *testing.T, cs Cells, name string) Cell {
	t.Helper()
	c, ok := cs.Get(name)
	if !ok {
		t.Fatalf("no cell %s", name)
	}
	return c
}

// want checks a cell's value (NaN: null) and, when not "", its reason.
func want(t *testing.T, cs Cells, name string, v float64, reason string) Cell {
	t.Helper()
	c := cell(t, cs, name)
	switch {
	case math.IsNaN(v) && c.Value.Valid:
		t.Errorf("%s = %v, want null", name, c.Value)
	case !math.IsNaN(v) && (!c.Value.Valid || math.Abs(c.Value.V-v) > 1e-9*max(1, math.Abs(v))):
		t.Errorf("%s = %v (reason %q), want %v", name, c.Value, c.Reason, v)
	}
	if reason != "" && c.Reason != reason {
		t.Errorf("%s reason %q, want %q", name, c.Reason, reason)
	}
	return c
}

var null = math.NaN()

func TestNormalizeHint(t *testing.T) {
	for in, out := range map[string]string{
		"vLLM": VLLM, "vllm-v1": VLLM, "vllm_v0": VLLMV0, "NIM": NIM, "llama.cpp": LlamaCpp, "llama-cpp": LlamaCpp,
		"ik_llama.cpp": LlamaCpp, "SGLang": SGLang, "text-generation-inference": TGI, "TensorRT-LLM": TRTLLM,
		"triton": Triton, "generic": Generic, "": "", "ollama": "",
	} {
		if got := NormalizeHint(in); got != out {
			t.Errorf("NormalizeHint(%q) = %q, want %q", in, got, out)
		}
	}
}

func TestDetectSeries(t *testing.T) {
	for _, c := range []struct {
		fams []string
		want string
	}{
		{[]string{"vllm:num_requests_running", "vllm:kv_cache_usage_perc", "python_info"}, VLLM},
		{[]string{"vllm:num_requests_running", "vllm:gpu_cache_usage_perc", "vllm:avg_generation_throughput_toks_per_s"}, VLLMV0},
		{[]string{"llamacpp:prompt_tokens_total", "llamacpp:kv_cache_usage_ratio"}, LlamaCpp},
		{[]string{"sglang:num_running_reqs"}, SGLang},
		{[]string{"tgi_queue_size", "tgi_request_count"}, TGI},
		{[]string{"nv_trt_llm_request_metrics"}, TRTLLM},
		{[]string{"nv_inference_request_success", "nv_inference_count", "nv_trt_llm_request_metrics"}, TRTLLM},
		{[]string{"nv_inference_request_success", "nv_gpu_utilization"}, Triton},
		{[]string{"num_requests_running", "gpu_cache_usage_perc", "prompt_tokens_total", "generation_tokens_total"}, NIM},
		{[]string{"num_requests_running", "prompt_tokens_total"}, Generic},
		{[]string{"http_requests_total"}, Generic},
		{nil, Generic},
		// A proxy printing two engines' series is the engine with most families.
		{[]string{"tgi_queue_size", "llamacpp:a", "llamacpp:b"}, LlamaCpp},
	} {
		if got := DetectSeries(c.fams); got != c.want {
			t.Errorf("DetectSeries(%v) = %s, want %s", c.fams, got, c.want)
		}
	}
}

const llamaBody = `# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total %P
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total %G
# TYPE llamacpp:tokens_predicted_seconds_total counter
llamacpp:tokens_predicted_seconds_total %S
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
`

func llama(p, g, s string) string {
	return strings.NewReplacer("%P", p, "%G", g, "%S", s).Replace(llamaBody)
}

// The configured engine wins over the series; an unknown hint leaves the
// engine to the series; a vLLM hint still lets the series tell V0 from V1.
func TestHintWins(t *testing.T) {
	tr := NewTracker("sglang", rate.Config{})
	feed(t, tr, 1, llama("1", "1", "1"))
	if id, how := tr.Engine(); id != SGLang || how != DetectedByHint {
		t.Errorf("engine %s by %s, want sglang by hint", id, how)
	}
	if u := tr.Unknown(); !slices.Contains(u, "llamacpp:prompt_tokens_total") {
		t.Errorf("unknown %v: the llama.cpp series are not SGLang's", u)
	}

	tr = NewTracker("ollama", rate.Config{})
	feed(t, tr, 1, llama("1", "1", "1"))
	if id, how := tr.Engine(); id != LlamaCpp || how != DetectedBySeries {
		t.Errorf("engine %s by %s, want llamacpp by series", id, how)
	}

	tr = NewTracker("vllm", rate.Config{})
	if id, how := tr.Engine(); id != VLLM || how != DetectedByHint {
		t.Errorf("before any poll: %s by %s", id, how)
	}
	cs := feed(t, tr, 1, "# TYPE vllm:avg_generation_throughput_toks_per_s gauge\nvllm:avg_generation_throughput_toks_per_s 3\n")
	if id, _ := tr.Engine(); id != VLLMV0 {
		t.Errorf("engine %s, want vllm-v0 from its V0 series", id)
	}
	want(t, cs, DecodeTokensPerSecondNative, 3, "")
	if len(tr.Unknown()) != 0 {
		t.Errorf("unknown %v", tr.Unknown())
	}
}

// An engine nobody recognises gets the generic reader: every counter a rate
// cell, every gauge label set a value cell, every histogram its window
// cells; its canonical cells say not_exported, and every family is listed
// as unknown. Detection goes on until an engine's series appear.
func TestGenericReader(t *testing.T) {
	tr := NewTracker("", rate.Config{})
	body := `# TYPE foo_total counter
foo_total{a="1"} 10
foo_total{a="2"} 5
# TYPE temp gauge
temp{zone="x"} 40
temp{zone="y"} 41
# TYPE lat histogram
lat_bucket{le="0.1"} 1
lat_bucket{le="+Inf"} 2
lat_sum 0.3
lat_count 2
`
	cs := feed(t, tr, 10, body)
	want(t, cs, DecodeTokensPerSecond, null, ReasonNotExported)
	want(t, cs, "rate:foo_total", null, rate.ReasonNoBaseline)
	g := want(t, cs, `gauge:temp{zone="x"}`, 40, "")
	if g.Source != `temp{zone="x"}` || g.Derived {
		t.Errorf("gauge cell %+v", g)
	}
	want(t, cs, `gauge:temp{zone="y"}`, 41, "")
	want(t, cs, "hist:lat__count", null, rate.ReasonNoBaseline)
	body2 := strings.NewReplacer(`foo_total{a="1"} 10`, `foo_total{a="1"} 30`, "lat_count 2", "lat_count 4",
		`lat_bucket{le="+Inf"} 2`, `lat_bucket{le="+Inf"} 4`, "lat_sum 0.3", "lat_sum 0.5").Replace(body)
	cs = feed(t, tr, 20, body2)
	want(t, cs, "rate:foo_total", 2, "")
	want(t, cs, "hist:lat__count", 2, "")
	want(t, cs, "hist:lat__mean", 0.1, "")
	// A series gone from a poll has no cell in it.
	cs = feed(t, tr, 25, "# TYPE temp gauge\ntemp{zone=\"x\"} 39\n")
	if _, ok := cs.Get("rate:foo_total"); ok {
		t.Error("a cell for a series not in the poll")
	}
	want(t, cs, `gauge:temp{zone="x"}`, 39, "")
	if id, how := tr.Engine(); id != Generic || how != "" {
		t.Errorf("engine %s by %q", id, how)
	}
	if u := tr.Unknown(); !slices.Equal(u, []string{"foo_total", "lat", "temp"}) {
		t.Errorf("unknown %v", u)
	}
	// The engine's series appear: detected, and the reader changes.
	cs = feed(t, tr, 30, llama("1", "1", "1"))
	if id, how := tr.Engine(); id != LlamaCpp || how != DetectedBySeries {
		t.Errorf("engine %s by %s", id, how)
	}
	want(t, cs, RequestsRunning, 2, "")
	if _, ok := cs.Get("rate:foo_total"); ok {
		t.Error("generic cells after detection")
	}
}

func TestLlamaCppReader(t *testing.T) {
	tr := NewTracker("", rate.Config{Span: 10})
	cs := feed(t, tr, 1000, llama("100", "1000", "20"))
	want(t, cs, PerRequestDecodeTokensPerSecondLifetime, 50, "")
	want(t, cs, PrefixCacheHitRatio, null, rate.ReasonAbsent)
	tt := want(t, cs, TokensTotal, 1100, "")
	if len(tt.Notes) != 1 || !strings.Contains(tt.Notes[0], "no cached-prompt counter") {
		t.Errorf("tokens_total notes %q", tt.Notes)
	}
	want(t, cs, Queue+SuffixP99, null, ReasonNotExported)
	cs = feed(t, tr, 1010, llama("300", "1400", "30"))
	want(t, cs, DecodeTokensPerSecond, 40, "")
	want(t, cs, PromptTokensComputedPerSecond, 20, "")
	want(t, cs, PerRequestDecodeTokensPerSecond, 40, "")
	if n := tr.Notes(); n[PromptTokensPerSecond] == "" || n["engine"] != "" {
		t.Errorf("notes %v", n)
	}

	// A fork: cached prompt tokens, speculative counters, the kv gauges and
	// no n_decode_total; a window without evaluated or cached tokens has no
	// hit share.
	fork := func(cached, prompt string) string {
		return llama(prompt, "1", "1") + "# TYPE llamacpp:prompt_tokens_cached_total counter\nllamacpp:prompt_tokens_cached_total " + cached +
			"\n# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio 0.5\n" +
			"# TYPE llamacpp:n_draft_total counter\nllamacpp:n_draft_total 10\n" +
			"# TYPE llamacpp:n_draft_accepted_total counter\nllamacpp:n_draft_accepted_total 0\n"
	}
	tr = NewTracker("", rate.Config{Span: 10})
	cs = feed(t, tr, 1000, fork("0", "0"))
	want(t, cs, PrefixCacheHitRatioLifetime, null, rate.ReasonEmpty)
	want(t, cs, SpecAcceptRatioLifetime, 0, "")
	cs = feed(t, tr, 1010, fork("0", "0"))
	want(t, cs, PrefixCacheHitRatio, null, rate.ReasonEmpty)
	want(t, cs, SpecAcceptRatio, null, rate.ReasonEmpty)
	cs = feed(t, tr, 1015, fork("5", "0"))
	want(t, cs, PrefixCacheHitRatio, 1, "")
	cs = feed(t, tr, 1020, fork("10", "30"))
	want(t, cs, PrefixCacheHitRatio, 0.25, "")
	want(t, cs, PrefixCacheHitRatioLifetime, 0.25, "")
	if n := tr.Notes()["engine"]; !strings.Contains(n, "ik_llama") || !strings.Contains(n, "cached-prompt") || !strings.Contains(n, "speculative") {
		t.Errorf("variant %q", n)
	}
	// A refused window (a reset of the cached counter) refuses the share.
	cs = feed(t, tr, 1030, fork("5", "40"))
	want(t, cs, PrefixCacheHitRatio, null, rate.ReasonReset)
}

const vllmV1 = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 1.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.8
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} %P
# TYPE vllm:prompt_tokens_by_source_total counter
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_compute"} %C
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_cache_hit"} %H
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 0
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",enable_prefix_caching="True",engine="0",num_gpu_blocks="100"} 1.0
vllm:cache_config_info{block_size="16",enable_prefix_caching="maybe",engine="1",num_gpu_blocks="x"} 1.0
`

// vLLM's waiting queue split by reason; a poll with nothing in it reads
// every cell absent; a value that is not a number is no reading.
func TestWaitingByReasonAndEmptyPolls(t *testing.T) {
	tr := NewTracker("", rate.Config{})
	body := `# TYPE vllm:num_requests_waiting_by_reason gauge
vllm:num_requests_waiting_by_reason{engine="0",reason="capacity"} 2
vllm:num_requests_waiting_by_reason{engine="1",reason="capacity"} 1
vllm:num_requests_waiting_by_reason{engine="0",reason="deferred"} 1
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0"} NaN
`
	cs := feed(t, tr, 1, body)
	c := want(t, cs, WaitingByReason, 4, "")
	if c.By["capacity"] != 3 || c.By["deferred"] != 1 || len(c.By) != 2 || c.Source != "vllm:num_requests_waiting_by_reason" {
		t.Errorf("by reason %+v", c)
	}
	want(t, cs, RequestsRunning, null, rate.ReasonAbsent)
	cs = feed(t, tr, 2, "# nothing\n")
	for _, n := range Canonical {
		want(t, cs, n, null, rate.ReasonAbsent)
	}
	cs = feed(t, tr, 3, body)
	first := want(t, cs, WaitingByReason, 4, "").By
	// An unchanged split is shared with the poll before; a changed one is
	// new, and the one published before it stays as it was.
	cs = feed(t, tr, 4, body)
	if same := want(t, cs, WaitingByReason, 4, "").By; reflect.ValueOf(same).Pointer() != reflect.ValueOf(first).Pointer() {
		t.Error("an unchanged split is a new map")
	}
	cs = feed(t, tr, 5, strings.Replace(body, `reason="deferred"} 1`, `reason="deferred"} 5`, 1))
	if c := want(t, cs, WaitingByReason, 8, ""); c.By["deferred"] != 5 || first["deferred"] != 1 || len(first) != 2 {
		t.Errorf("changed split %v, earlier %v", c.By, first)
	}
}

func TestVLLMReader(t *testing.T) {
	v1 := func(p, c, h string) string { return strings.NewReplacer("%P", p, "%C", c, "%H", h).Replace(vllmV1) }
	tr := NewTracker("", rate.Config{Span: 10})
	cs := feed(t, tr, 1000, v1("100", "60", "40"))
	want(t, cs, RequestsRunning, 3, "")
	kv := want(t, cs, KVCacheUsageRatio, 0.8, "")
	if kv.Severity != rate.SeverityWarn || len(kv.Notes) != 1 {
		t.Errorf("kv %+v: the fullest engine, with a note", kv)
	}
	// Facts are read from the engines whose labels parse.
	want(t, cs, KVCacheCapacityTokens, 1600, "")
	want(t, cs, PrefixCachingEnabled, 1, "")
	cs = feed(t, tr, 1010, v1("300", "120", "180"))
	c := want(t, cs, PromptTokensComputedPerSecond, 6, "")
	if c.Source != `computed:Δvllm:prompt_tokens_by_source_total{source="local_compute"}/Δt` {
		t.Errorf("source %q", c.Source)
	}
	want(t, cs, PromptTokensPerSecond, 20, "")
	want(t, cs, DecodeTokensPerSecondNative, null, ReasonNotExported)
	if id, _ := tr.Engine(); id != VLLM {
		t.Errorf("engine %s", id)
	}
	// A series whose labels are all unparseable is no fact.
	tr = NewTracker("vllm", rate.Config{})
	cs = feed(t, tr, 1, "# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"a\"} 1\n")
	want(t, cs, KVCacheCapacityTokens, null, rate.ReasonAbsent)
}

const vllmOld = `# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.1
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} %P
# TYPE vllm:gpu_prefix_cache_hits_total counter
vllm:gpu_prefix_cache_hits_total{model_name="m"} %H
# TYPE vllm:gpu_prefix_cache_queries_total counter
vllm:gpu_prefix_cache_queries_total{model_name="m"} %P
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{le="0.1",model_name="m"} %N
vllm:time_per_output_token_seconds_bucket{le="+Inf",model_name="m"} %N
vllm:time_per_output_token_seconds_count{model_name="m"} %N
vllm:time_per_output_token_seconds_sum{model_name="m"} %S
`

// Before 0.9 and 0.11 the same quantities had other names: both are read.
func TestVLLMRenames(t *testing.T) {
	old := func(p, h, n, s string) string {
		return strings.NewReplacer("%P", p, "%H", h, "%N", n, "%S", s).Replace(vllmOld)
	}
	tr := NewTracker("", rate.Config{Span: 10})
	cs := feed(t, tr, 1000, old("100", "10", "10", "0"))
	want(t, cs, KVCacheUsageRatio, 0.1, "")
	want(t, cs, PromptTokensCachedTotal, 10, "")
	want(t, cs, PerRequestDecodeTokensPerSecondLifetime, null, rate.ReasonEmpty)
	cs = feed(t, tr, 1010, old("300", "60", "30", "1"))
	want(t, cs, PrefixCacheHitRatio, 0.25, "")
	c := want(t, cs, PromptTokensComputedPerSecond, 15, "")
	if c.Source != "computed:(Δvllm:prompt_tokens_total − Δvllm:gpu_prefix_cache_hits_total)/Δt" {
		t.Errorf("source %q", c.Source)
	}
	want(t, cs, TPOT+SuffixMean, 0.05, "")
	want(t, cs, ITL+SuffixMean, 0.05, "")
	want(t, cs, PerRequestDecodeTokensPerSecond, 20, "")
	if n := tr.Notes()["engine"]; !strings.Contains(n, "pre-0.9") || !strings.Contains(n, "pre-0.11") {
		t.Errorf("variant %q", n)
	}
	// A refused prompt rate refuses the computed one. A counter that fell
	// is the target restarting: every window across it is refused, the
	// histogram's too.
	cs = feed(t, tr, 1020, old("200", "60", "40", "1"))
	want(t, cs, PromptTokensComputedPerSecond, null, rate.ReasonReset)
	want(t, cs, PerRequestDecodeTokensPerSecond, null, rate.ReasonReset)
	if r := tr.Restart(); !strings.HasSuffix(r, " fell from 300 to 200") {
		t.Errorf("restart evidence %q", r)
	}
	// A zero mean has no speed.
	cs = feed(t, tr, 1030, old("210", "60", "50", "1"))
	want(t, cs, PerRequestDecodeTokensPerSecond, null, rate.ReasonEmpty)
	if r := tr.Restart(); r != "" {
		t.Errorf("restart evidence %q on a poll without one", r)
	}
}

const vllmV0 = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 1.0
# TYPE vllm:num_requests_swapped gauge
vllm:num_requests_swapped{model_name="m"} 0.0
# TYPE vllm:avg_generation_throughput_toks_per_s gauge
vllm:avg_generation_throughput_toks_per_s{model_name="m"} 12.5
# TYPE vllm:avg_prompt_throughput_toks_per_s gauge
vllm:avg_prompt_throughput_toks_per_s{model_name="m"} 3.5
# TYPE vllm:gpu_prefix_cache_hit_rate gauge
vllm:gpu_prefix_cache_hit_rate{model_name="m"} -1.0
# TYPE vllm:spec_decode_draft_acceptance_rate gauge
vllm:spec_decode_draft_acceptance_rate{model_name="m"} 0.7
`

func TestVLLMV0AndNIM(t *testing.T) {
	tr := NewTracker("", rate.Config{})
	cs := feed(t, tr, 1, vllmV0)
	if id, _ := tr.Engine(); id != VLLMV0 {
		t.Fatalf("engine %s", id)
	}
	want(t, cs, DecodeTokensPerSecondNative, 12.5, "")
	want(t, cs, PromptTokensPerSecondNative, 3.5, "")
	want(t, cs, PrefixCacheHitRatioNative, null, ReasonDisabled)
	want(t, cs, SpecAcceptRatioNative, 0.7, "")
	if tr.Notes()["engine"] != "" {
		t.Errorf("V0 variant %q", tr.Notes()["engine"])
	}

	nim := "# TYPE num_requests_running gauge\nnum_requests_running 4\n# TYPE gpu_cache_usage_perc gauge\ngpu_cache_usage_perc 0.5\n" +
		"# TYPE prompt_tokens_total counter\nprompt_tokens_total 1\n# TYPE generation_tokens_total counter\ngeneration_tokens_total 1\n" +
		"# TYPE num_request_max gauge\nnum_request_max 64\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1\n"
	tr = NewTracker("", rate.Config{})
	cs = feed(t, tr, 1, nim)
	if id, _ := tr.Engine(); id != NIM {
		t.Fatalf("engine %s", id)
	}
	want(t, cs, MaxRunningRequests, 64, "")
	want(t, cs, RequestsRunning, 4, "")
	if u := tr.Unknown(); !slices.Equal(u, []string{"process_cpu_seconds_total"}) {
		t.Errorf("unknown %v: NIM knows only its own names", u)
	}
}

const sglangBody = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",tp_rank="0"} 8.0
sglang:num_running_reqs{model_name="m",tp_rank="1"} 8.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m",tp_rank="0"} 0.9
sglang:token_usage{model_name="m",tp_rank="1"} 0.9
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} %P
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{model_name="m"} %C
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="m"} %R
# TYPE sglang:inter_token_latency_seconds histogram
sglang:inter_token_latency_seconds_bucket{le="0.1",model_name="m"} %R
sglang:inter_token_latency_seconds_bucket{le="+Inf",model_name="m"} %R
sglang:inter_token_latency_seconds_sum{model_name="m"} %S
sglang:inter_token_latency_seconds_count{model_name="m"} %R
# TYPE sglang:spec_accept_rate gauge
sglang:spec_accept_rate{model_name="m",tp_rank="0"} 0.6
`

// SGLang's scheduler gauges are read from rank 0, not summed over ranks
// that print the same value.
func TestSGLangReader(t *testing.T) {
	b := func(p, c, r, s string) string {
		return strings.NewReplacer("%P", p, "%C", c, "%R", r, "%S", s).Replace(sglangBody)
	}
	tr := NewTracker("", rate.Config{Span: 10})
	cs := feed(t, tr, 1000, b("100", "20", "10", "0.5"))
	r := want(t, cs, RequestsRunning, 8, "")
	if r.Source != `sglang:num_running_reqs{tp_rank="0"}` {
		t.Errorf("source %q", r.Source)
	}
	kv := want(t, cs, KVCacheUsageRatio, 0.9, "")
	if kv.Severity != rate.SeverityFail {
		t.Errorf("kv severity %q", kv.Severity)
	}
	want(t, cs, PrefixCacheHitRatioLifetime, 0.2, "")
	want(t, cs, SpecAcceptRatioNative, 0.6, "")
	want(t, cs, PerRequestDecodeTokensPerSecondLifetime, 20, "")
	cs = feed(t, tr, 1010, b("300", "120", "20", "1"))
	want(t, cs, PromptTokensComputedPerSecond, 10, "")
	want(t, cs, PrefixCacheHitRatio, 0.5, "")
	want(t, cs, RequestsFinishedPerSecond, 1, "")
	want(t, cs, PerRequestDecodeTokensPerSecond, 20, "")
	want(t, cs, TPOT+SuffixMean, 0.05, "")
	if tr.Notes()["engine"] != "" {
		t.Errorf("variant %q", tr.Notes()["engine"])
	}
}

const tgiBody = `# TYPE tgi_queue_size gauge
tgi_queue_size 3
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 5
# TYPE tgi_request_success counter
tgi_request_success %R
# TYPE tgi_request_input_length histogram
tgi_request_input_length_bucket{le="+Inf"} %R
tgi_request_input_length_sum %I
tgi_request_input_length_count %R
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="+Inf"} %R
tgi_request_generated_tokens_sum %G
tgi_request_generated_tokens_count %R
# TYPE tgi_request_mean_time_per_token_duration histogram
tgi_request_mean_time_per_token_duration_bucket{le="0.1"} %R
tgi_request_mean_time_per_token_duration_bucket{le="+Inf"} %R
tgi_request_mean_time_per_token_duration_sum %S
tgi_request_mean_time_per_token_duration_count %R
`

func TestTGIReader(t *testing.T) {
	b := func(r, i, g, s string) string {
		return strings.NewReplacer("%R", r, "%I", i, "%G", g, "%S", s).Replace(tgiBody)
	}
	tr := NewTracker("", rate.Config{Span: 10})
	cs := feed(t, tr, 1000, b("10", "100", "500", "0.5"))
	want(t, cs, RequestsWaiting, 3, "")
	want(t, cs, TokensTotal, 600, "")
	want(t, cs, KVCacheUsageRatio, null, ReasonNotExported)
	cs = feed(t, tr, 1010, b("20", "300", "1500", "1"))
	want(t, cs, DecodeTokensPerSecond, 100, "")
	want(t, cs, PromptTokensPerSecond, 20, "")
	want(t, cs, PerRequestDecodeTokensPerSecond, 20, "")
	want(t, cs, RequestsFinishedPerSecond, 1, "")
	if id, _ := tr.Engine(); id != TGI {
		t.Errorf("engine %s", id)
	}
}

const trtBody = `# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="m",request_type="scheduled",version="1"} 3
nv_trt_llm_request_metrics{model="m",request_type="max",version="1"} 64
%W
# TYPE nv_trt_llm_kv_cache_block_metrics gauge
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used",model="m",version="1"} %U
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max",model="m",version="1"} %M
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="tokens_per",model="m",version="1"} 64
%F
# TYPE nv_trt_llm_general_metrics gauge
nv_trt_llm_general_metrics{general_type="iteration_counter",model="m",version="1"} %R
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="m",version="1"} %R
# TYPE nv_inference_queue_duration_us counter
nv_inference_queue_duration_us{model="m",version="1"} %Q
# TYPE nv_inference_request_duration_us counter
nv_inference_request_duration_us{model="m",version="1"} %Q
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="m",version="1"} 7
`

func TestTritonReader(t *testing.T) {
	b := func(w, u, m, f, r, q string) string {
		return strings.NewReplacer("%W", w, "%U", u, "%M", m, "%F", f, "%R", r, "%Q", q).Replace(trtBody)
	}
	tr := NewTracker("", rate.Config{Span: 10})
	cs := feed(t, tr, 1000, b("", "30", "100", "", "10", "1000"))
	want(t, cs, RequestsRunning, 3, "")
	want(t, cs, RequestsWaiting, 7, "")
	want(t, cs, MaxRunningRequests, 64, "")
	kv := want(t, cs, KVCacheUsageRatio, 0.3, "")
	if !kv.Derived || kv.Severity != rate.SeverityOK {
		t.Errorf("kv %+v", kv)
	}
	want(t, cs, KVCacheCapacityTokens, 6400, "")
	// Newer builds: a waiting request type and the fraction itself.
	cs = feed(t, tr, 1010, b(`nv_trt_llm_request_metrics{model="m",request_type="waiting",version="1"} 2`, "30", "100",
		`nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",model="m",version="1"} 0.95`, "20", "3000"))
	want(t, cs, RequestsWaiting, 2, "")
	kv = want(t, cs, KVCacheUsageRatio, 0.95, "")
	if kv.Derived || kv.Severity != rate.SeverityFail {
		t.Errorf("kv %+v", kv)
	}
	want(t, cs, RequestsFinishedPerSecond, 1, "")
	want(t, cs, Queue+SuffixMean, 200e-6, "")
	want(t, cs, E2E+SuffixMean, 200e-6, "")
	// An empty pool has no usage.
	cs = feed(t, tr, 1020, b("", "0", "0", "", "20", "3000"))
	want(t, cs, KVCacheUsageRatio, null, rate.ReasonEmpty)
	if id, _ := tr.Engine(); id != TRTLLM {
		t.Errorf("engine %s", id)
	}
	if u := tr.Unknown(); len(u) != 0 {
		t.Errorf("unknown %v", u)
	}
}

// A counter's _created sibling, printed after it or appearing later, tells
// a restart the counter's value alone would miss.
func TestCreatedSiblings(t *testing.T) {
	body := func(v, created string) string {
		return "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\"} " + v + "\n" + created
	}
	created := func(c string) string {
		return "# TYPE vllm:generation_tokens_created gauge\nvllm:generation_tokens_created{engine=\"0\"} " + c + "\n"
	}
	tr := NewTracker("", rate.Config{Span: 10})
	feed(t, tr, 1000, body("100", ""))
	cs := feed(t, tr, 1010, body("200", created("5")))
	want(t, cs, DecodeTokensPerSecond, 10, "")
	cs = feed(t, tr, 1020, body("300", created("6")))
	want(t, cs, DecodeTokensPerSecond, null, rate.ReasonReset)
}

// A series set twice in one poll keeps its first value.
func TestTrackerKeysAndSets(t *testing.T) {
	tr := NewTracker("llamacpp", rate.Config{})
	s := Series{Family: "llamacpp:requests_processing", Type: "gauge", Name: "llamacpp:requests_processing", Labels: "{}"}
	id := tr.Key(s)
	if tr.Key(s) != id {
		t.Error("one series, two ids")
	}
	tr.Begin(1, 0)
	tr.Set(id, 3)
	tr.Set(id, 4)
	cs := tr.End(nil)
	want(t, cs, RequestsRunning, 3, "")
	if cfg := tr.Config(); cfg.Span != rate.DefaultSpan {
		t.Errorf("config %+v", cfg)
	}
}

func TestCellsJSON(t *testing.T) {
	cs := Cells{
		{"b", Cell{Cell: rate.Cell{Value: rate.Some(2), Source: "s", Window: rate.Some(10), Derived: true}}},
		{"a", Cell{Cell: rate.Cell{Reason: rate.ReasonAbsent}}},
		{"w", Cell{Cell: rate.Cell{Value: rate.Some(3), Source: "x"}, By: map[string]float64{"capacity": 3}}},
	}
	b, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"b":{"value":2,"source":"s","derived":true,"window":10},"a":{"value":null,"source":"","derived":false,"reason":"absent"},"w":{"value":3,"source":"x","derived":false,"by":{"capacity":3}}}`
	if string(b) != wantJSON {
		t.Errorf("JSON\n%s\nwant\n%s", b, wantJSON)
	}
	var back Cells
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || back[0].Name != "b" || back[1].Name != "a" || back[2].Cell.By["capacity"] != 3 {
		t.Errorf("round trip %+v", back)
	}
	for _, bad := range []string{``, `}`, `{"a":1,`, `{1:2}`} {
		if err := back.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("UnmarshalJSON(%s): no error", bad)
		}
	}
	if _, err := json.Marshal(Cells{{"n", Cell{By: map[string]float64{"x": math.NaN()}}}}); err == nil {
		t.Error("a NaN in a breakdown marshalled")
	}
	if err := json.Unmarshal([]byte("null"), &back); err != nil || back != nil {
		t.Errorf("null: %v %v", back, err)
	}
	for _, bad := range []string{`[1]`, `{"a":1}`, `{"a"`, `{`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, ok := cs.Get("nope"); ok {
		t.Error("Get of a missing cell")
	}
}

func TestCanonicalLists(t *testing.T) {
	if len(Canonical) != len(canonIndex) {
		t.Fatal("duplicate canonical names")
	}
	// A poll marks the canonical cells its reader put in one uint64.
	if len(Canonical) > 64 {
		t.Fatalf("%d canonical cells: query.put1 holds 64", len(Canonical))
	}
	for _, h := range Headline {
		if _, ok := canonIndex[h]; !ok {
			t.Errorf("headline %s is not canonical", h)
		}
	}
	for _, e := range Engines {
		fams, _ := Catalog(e)
		if e != Generic && len(fams) == 0 {
			t.Errorf("%s: empty catalog", e)
		}
		for _, f := range fams {
			for _, cell := range strings.Fields(f.Feeds) {
				if strings.HasPrefix(cell, "(") || strings.HasSuffix(cell, ")") {
					continue
				}
				if _, ok := canonIndex[cell]; !ok && !slices.Contains(Histograms, cell) && !strings.Contains(f.Feeds, "(") {
					t.Errorf("%s: %s feeds %s, not a canonical cell", e, f.Family, cell)
				}
			}
		}
	}
	if f, p := Catalog("nope"); f != nil || p != nil {
		t.Error("catalog of an unknown engine")
	}
	if _, p := Catalog(VLLM); !slices.Contains(p, "python_") {
		t.Errorf("vllm prefixes %v", p)
	}
}

func TestLabelHelpers(t *testing.T) {
	l := rate.Labels("a", `x"y`, "b", "2", "ba", "3")
	for _, c := range []struct {
		name, value string
		want        bool
	}{{"a", `x"y`, false}, {"b", "2", true}, {"a", "2", false}, {"ba", "3", true}, {"c", "1", false}} {
		// hasLabel matches the canonical (escaped) text.
		if got := hasLabel(l, c.name, c.value); got != c.want {
			t.Errorf("hasLabel(%s, %s, %s) = %v", l, c.name, c.value, got)
		}
	}
	if !hasLabel(l, "a", `x\"y`) {
		t.Error("escaped value")
	}
	if !hasLabel(`{xa="1",a="1"}`, "a", "1") || hasLabel(`{xa="1",ab="1"}`, "a", "1") {
		t.Error("hasLabel past a match inside another label")
	}
	if got := splitLabels(`{abc}`); got != nil {
		t.Errorf("splitLabels of a malformed set %q", got)
	}
	if v, ok := labelOf(l, "a"); !ok || v != `x"y` {
		t.Errorf("labelOf a = %q %v", v, ok)
	}
	if _, ok := labelOf(l, "z"); ok {
		t.Error("labelOf z")
	}
	if got := withoutLabel(rate.Labels("le", "0.1", "m", "x"), "le"); got != `{m="x"}` {
		t.Errorf("withoutLabel %q", got)
	}
	if got := splitLabels(`{a="1\\2\n",b`); len(got) != 1 || got[0][1] != "1\\2\n" {
		t.Errorf("splitLabels of a torn set %q", got)
	}
	if got := splitLabels(`{a="x`); len(got) != 1 {
		t.Errorf("splitLabels unterminated %q", got)
	}
	if splitLabels("") != nil {
		t.Error("splitLabels of nothing")
	}
	if got := canonicalLabels(`{"b":"2","a":"1"}`); got != `{a="1",b="2"}` {
		t.Errorf("canonicalLabels %q", got)
	}
	if got := canonicalLabels(`not json`); got != "not json" {
		t.Errorf("canonicalLabels of a bad object %q", got)
	}
	s := newSel("tp_rank", "0", true)
	if !s.ok(`{m="x"}`) || !s.ok(`{tp_rank="0"}`) || s.ok(`{tp_rank="1"}`) {
		t.Error("sel with orMissing")
	}
	if (*sel)(nil).match() != nil || !(*sel)(nil).ok("x") {
		t.Error("nil sel")
	}
}

func TestRateableAndCreated(t *testing.T) {
	for _, c := range []struct {
		s    Series
		want bool
	}{
		{Series{Type: "counter", Name: "a_total"}, true},
		{Series{Type: "histogram", Name: "h_bucket"}, true},
		{Series{Type: "histogram", Name: "h_created"}, false},
		{Series{Type: "summary", Name: "s_sum"}, true},
		{Series{Type: "summary", Name: "s"}, false},
		{Series{Type: "untyped", Name: "u_total"}, true},
		{Series{Type: "untyped", Name: "u"}, false},
		{Series{Type: "gauge", Name: "g"}, false},
	} {
		if got := rateable(c.s, ""); got != c.want {
			t.Errorf("rateable(%+v) = %v", c.s, got)
		}
	}
	if !rateable(Series{Type: "gauge", Name: trtGeneral}, `{general_type="iteration_counter"}`) {
		t.Error("TRT-LLM's iteration counter is a counter typed gauge")
	}
	for name, want := range map[string]string{"a_total": "a_created", "h_bucket": "h_created", "h_count": "h_created",
		"h_sum": "h_created", "g": ""} {
		if got := createdOf(Series{Name: name}, `{le="1",x="y"}`).Series; got != want {
			t.Errorf("createdOf(%s) = %s", name, got)
		}
	}
	if got := createdOf(Series{Name: "h_bucket"}, `{le="1",x="y"}`).Labels; got != `{x="y"}` {
		t.Errorf("createdOf bucket labels %q", got)
	}
}

// Helpers on cells that readers share.
func TestQueryHelpers(t *testing.T) {
	q := &query{t: NewTracker("", rate.Config{})}
	a := Cell{Cell: rate.Cell{Value: rate.Some(2), Source: "a"}}
	n := absent()
	if c := q.sumTotals(a, n, false); c.Value.Valid {
		t.Error("a + absent, not optional")
	}
	if c := q.sumTotals(n, a, true); c.Value.Valid {
		t.Error("absent + a")
	}
	if c := q.lifetimeRatio(a, n); c.Reason != rate.ReasonAbsent {
		t.Error("ratio over absent")
	}
	if c := q.lifetimeRatio(a, Cell{Cell: rate.Cell{Value: rate.Some(0)}}); c.Reason != rate.ReasonEmpty {
		t.Error("ratio over a zero")
	}
	if c := q.lifetimeRatio(n, a); c.Reason != rate.ReasonAbsent {
		t.Error("ratio of absent")
	}
	if c := q.lifetimeShare(n, a); c.Reason != rate.ReasonAbsent {
		t.Error("share of absent")
	}
	if c := q.lifetimeShare(a, n); c.Reason != rate.ReasonAbsent {
		t.Error("share over absent")
	}
	if c := q.kvRatio(n, a); c.Reason != rate.ReasonAbsent {
		t.Error("kv of absent")
	}
	if c := q.kvRatio(a, n); c.Reason != rate.ReasonAbsent {
		t.Error("kv over absent")
	}
	if c := q.product(n, a); c.Value.Valid {
		t.Error("product of absent")
	}
	if c := q.product(a, n); c.Value.Valid {
		t.Error("product with absent")
	}
	if c := scale(n, 2); c.Value.Valid {
		t.Error("scale of absent")
	}
	above := a
	if disabledBelowZero(&above); above.Value.V != 2 || !above.Value.Valid {
		t.Error("disabled above zero")
	}
	if v, ok := labelNumber(func(string) (string, bool) { return "", false }, "x"); ok || v != 0 {
		t.Error("labelNumber of a missing label")
	}
	if _, ok := labelBool(func(string) (string, bool) { return "", false }, "x"); ok {
		t.Error("labelBool of a missing label")
	}
}

// The fast label decoder agrees with encoding/json on every label set expo
// writes, and leaves what it does not handle to encoding/json.
func TestCanonicalLabelsAgreesWithJSON(t *testing.T) {
	values := []string{"", "x", `a"b`, `c\d`, "line\nbreak", "tab\t", "cr\r", "<&>", "é€", "\x01ctl", "/slash", `\"`}
	for i, a := range values {
		for _, b := range values[i:] {
			m := map[string]string{"a": a, "model_name": b, "le": "+Inf"}
			js := expo.EncodeLabels(m)
			pairs := []string{}
			for k, v := range m {
				pairs = append(pairs, k, v)
			}
			if got, want := canonicalLabels(js), rate.Labels(pairs...); got != want {
				t.Errorf("canonicalLabels(%s) = %s, want %s", js, got, want)
			}
		}
	}
	for js, want := range map[string]string{
		`{"a":"\u20ac"}`: `{a="€"}`, // a \u escape expo does not write: encoding/json decodes it
		`{"a":1}`:        `{"a":1}`, // not a label set: kept as it is
		`{"a":"x",}`:     `{"a":"x",}`,
		`{"a"}`:          `{"a"}`,
		`{"a":"x`:        `{"a":"x`,
		`{"a":"\q"}`:     `{"a":"\q"}`,
		`{"a":"x\`:       `{"a":"x\`,
		`{"a":"\u00zz"}`: `{"a":"\u00zz"}`,
		`{"a":"x";}`:     `{"a":"x";}`,
		`{"a":"x"}`:      `{a="x"}`,
		`{"a":"x\}`:      `{"a":"x\}`,
		`{"a":"\nx}`:     `{"a":"\nx}`,
		"[]":             "[]",
	} {
		if got := canonicalLabels(js); got != want {
			t.Errorf("canonicalLabels(%s) = %s, want %s", js, got, want)
		}
	}
}

const stepBody = `# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0"} %G
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0"} %R
# TYPE process_start_time_seconds gauge
process_start_time_seconds %S
`

// With a step span, vLLM's token counters are windowed over it (one poll
// interval) while counters that move at request completion keep the
// configured span: an idle engine's decode reads 0 at the second poll.
func TestStepSpan(t *testing.T) {
	body := func(g, r, s string) string {
		return strings.NewReplacer("%G", g, "%R", r, "%S", s).Replace(stepBody)
	}
	tr := NewTracker("", rate.Config{Span: 10})
	tr.SetStepSpan(1)
	if s := tr.StepSpan(); s != 10 {
		t.Errorf("step span %v before the engine is known: the generic reader has no step counters", s)
	}
	feed(t, tr, 100, body("0", "0", "5"))
	feed(t, tr, 101, body("1000", "4", "5"))
	cs := feed(t, tr, 102, body("2000", "8", "5"))
	want(t, cs, DecodeTokensPerSecond, 1000, "")
	if w := cell(t, cs, DecodeTokensPerSecond).Window; w.V != 1 {
		t.Errorf("decode window %v, want 1 (the step span)", w)
	}
	if w := want(t, cs, RequestsFinishedPerSecond, 4, "").Window; w.V != 2 {
		t.Errorf("finished window %v, want 2 (the configured span reaches the first poll)", w)
	}
	cs = feed(t, tr, 103, body("2000", "8", "5"))
	want(t, cs, DecodeTokensPerSecond, 0, "")
	want(t, cs, RequestsFinishedPerSecond, 8.0/3, "")
	if s, d := tr.StepSpan(), tr.DecodeSpan(); s != 1 || d != 1 {
		t.Errorf("step span %v, decode span %v; want 1 and 1", s, d)
	}
	if r := tr.Restart(); r != "" {
		t.Errorf("restart %q without one", r)
	}
	// A new process start is a restart of every counter.
	cs = feed(t, tr, 104, body("2100", "9", "6"))
	want(t, cs, DecodeTokensPerSecond, null, rate.ReasonReset)
	want(t, cs, RequestsFinishedPerSecond, null, rate.ReasonReset)
	if r := tr.Restart(); r != "process_start_time_seconds moved" {
		t.Errorf("restart %q", r)
	}
	// A restart the series cannot show (a loading answer) is the caller's.
	ss, _ := expo.Parse([]byte(body("2200", "10", "6")), "text/plain")
	tr.Begin(105, 104.99)
	tr.MarkRestart("loading")
	tr.MarkRestart("ignored: the first evidence stays")
	for _, s := range ss {
		tr.Set(tr.Key(Series{Family: s.Family, Type: s.Type, Name: s.Name, Labels: s.Labels}), s.Value)
	}
	cs = tr.End(nil)
	want(t, cs, DecodeTokensPerSecond, null, rate.ReasonReset)
	if r := tr.Restart(); r != "loading" {
		t.Errorf("restart %q", r)
	}

	// Without a step span (or on llama.cpp, whose decode counter moves at
	// completion) the decode span is the configured one.
	tr = NewTracker("", rate.Config{Span: 10})
	feed(t, tr, 1, body("0", "0", "5"))
	if s := tr.DecodeSpan(); s != 10 {
		t.Errorf("decode span %v without a step span", s)
	}
	tr = NewTracker("llamacpp", rate.Config{Span: 10})
	tr.SetStepSpan(1)
	feed(t, tr, 1, llama("1", "1", "1"))
	if s, d := tr.StepSpan(), tr.DecodeSpan(); s != 1 || d != 10 {
		t.Errorf("llama.cpp: step span %v, decode span %v; want 1 (n_decode_total) and 10", s, d)
	}
	if !EveryStep(LlamaCpp, "llamacpp:n_decode_total") || EveryStep(LlamaCpp, "llamacpp:tokens_predicted_total") || EveryStep("nope", "x") {
		t.Error("EveryStep")
	}
	// llama.cpp, SGLang and TGI count generated tokens as requests
	// complete; vLLM on every step.
	for e, want := range map[string]bool{LlamaCpp: true, SGLang: true, TGI: true, VLLM: false, "nope": false} {
		if got := DecodeAtCompletion(e); got != want {
			t.Errorf("DecodeAtCompletion(%s) = %v, want %v", e, got, want)
		}
	}
}
