package sim

import (
	"sort"
	"strconv"
	"strings"
)

// labelStr formats label pairs (key, value, key, value, ...) sorted by key,
// as prometheus_client prints them.
func labelStr(pairs ...string) string {
	type kv struct{ k, v string }
	kvs := make([]kv, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		kvs = append(kvs, kv{pairs[i], pairs[i+1]})
	}
	sort.SliceStable(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
	var sb strings.Builder
	for i, p := range kvs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(p.k)
		sb.WriteString(`="`)
		sb.WriteString(escapeLabel(p.v))
		sb.WriteByte('"')
	}
	return sb.String()
}

// vllmBuilder writes the template of a vLLM body with n label sets.
type vllmBuilder struct {
	tmplBuilder
	e       *Engine
	n       int
	created map[int]int // per label set (-1: the process): series written to _created families so far
}

func (b *vllmBuilder) header(name, typ, help string) {
	b.text("# HELP ", name, " ", help, "\n# TYPE ", name, " ", typ, "\n")
}

func (b *vllmBuilder) sample(name, labels string, set, idx int, add float64) {
	b.text(name)
	if labels != "" {
		b.text("{", labels, "}")
	}
	b.text(" ")
	b.value(fmtPy, set, idx, add)
	b.text("\n")
}

// setLabels are the labels of label set s plus extra pairs.
func (b *vllmBuilder) setLabels(s int, extra ...string) string {
	return labelStr(append([]string{"engine", b.e.sets[s].label, "model_name", b.e.spec.Model}, extra...)...)
}

// createdStep spaces the _created values of successive series the way
// prometheus_client does as it creates them one after another. The count is
// kept per label set, so a set joining later leaves the _created values of
// the others unchanged, as a real engine does.
const createdStep = 31.4e-6

// createdFamily writes the _created gauge of a family; series lists the
// label sets of each series (set -1: the process).
func (b *vllmBuilder) createdFamily(base, help string, series func(emit func(set int, labels string))) {
	b.header(base+"_created", "gauge", help)
	series(func(set int, labels string) {
		src := max(set, 0)
		if b.created == nil {
			b.created = map[int]int{}
		}
		b.sample(base+"_created", labels, src, xCreated, float64(b.created[set])*createdStep)
		b.created[set]++
	})
}

// counter writes a per-set counter family and its _created family. extra
// holds the extra label pairs and the value index of each series.
func (b *vllmBuilder) counter(base, help string, series ...counterSeries) {
	b.header(base+"_total", "counter", help)
	for s := range b.n {
		for _, cs := range series {
			b.sample(base+"_total", b.setLabels(s, cs.extra...), s, cs.idx, 0)
		}
	}
	b.createdFamily(base, help, func(emit func(int, string)) {
		for s := range b.n {
			for _, cs := range series {
				emit(s, b.setLabels(s, cs.extra...))
			}
		}
	})
}

type counterSeries struct {
	idx   int
	extra []string
}

// gauge writes a per-set gauge family.
func (b *vllmBuilder) gauge(name, help string, series ...counterSeries) {
	b.header(name, "gauge", help)
	for s := range b.n {
		for _, cs := range series {
			b.sample(name, b.setLabels(s, cs.extra...), s, cs.idx, 0)
		}
	}
}

// hist writes a histogram family of label sets sets (each with its own
// labels) and its _created family.
func (b *vllmBuilder) hist(base, help string, h int, sets []int, labels func(set int, extra ...string) string) {
	b.header(base, "histogram", help)
	for _, s := range sets {
		for k, x := range b.e.bounds[h] {
			b.sample(base+"_bucket", labels(s, "le", string(appendPy(nil, x))), s, hBucket(h, k), 0)
		}
		b.sample(base+"_bucket", labels(s, "le", "+Inf"), s, hCount(h), 0)
		b.sample(base+"_count", labels(s), s, hCount(h), 0)
		b.sample(base+"_sum", labels(s), s, hSum(h), 0)
	}
	b.createdFamily(base, help, func(emit func(int, string)) {
		for _, s := range sets {
			emit(s, labels(s))
		}
	})
}

func (b *vllmBuilder) setHist(base, help string, h int) {
	sets := make([]int, b.n)
	for i := range sets {
		sets[i] = i
	}
	b.hist(base, help, h, sets, b.setLabels)
}

// buildVLLM builds the template of a vLLM V1 body with n label sets, in the
// family order of a real vLLM server.
func (e *Engine) buildVLLM(n int) template {
	b := &vllmBuilder{e: e, n: n}
	proc := -1
	gens := []string{"0", "1", "2"}

	b.header("python_gc_objects_collected_total", "counter", "Objects collected during gc")
	for i, g := range gens {
		b.sample("python_gc_objects_collected_total", labelStr("generation", g), proc, xGC0+i, 0)
	}
	b.header("python_gc_objects_uncollectable_total", "counter", "Uncollectable objects found during GC")
	for _, g := range gens {
		b.sample("python_gc_objects_uncollectable_total", labelStr("generation", g), proc, xZero, 0)
	}
	b.header("python_gc_collections_total", "counter", "Number of times this generation was collected")
	for i, g := range gens {
		b.sample("python_gc_collections_total", labelStr("generation", g), proc, xGCC0+i, 0)
	}
	b.header("python_info", "gauge", "Python platform information")
	b.sample("python_info", labelStr("implementation", "CPython", "major", "3", "minor", "12",
		"patchlevel", "3", "version", "3.12.3"), proc, xZero, 1)
	b.header("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.")
	b.sample("process_virtual_memory_bytes", "", proc, xZero, 1.372014592e10)
	b.header("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
	b.sample("process_resident_memory_bytes", "", proc, xZero, 1.109622784e9)
	b.header("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.")
	b.sample("process_start_time_seconds", "", proc, xProcStart, 0)
	b.header("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.")
	b.sample("process_cpu_seconds_total", "", proc, xCPU, 0)
	b.header("process_open_fds", "gauge", "Number of open file descriptors.")
	b.sample("process_open_fds", "", proc, xZero, 44)
	b.header("process_max_fds", "gauge", "Maximum number of open file descriptors.")
	b.sample("process_max_fds", "", proc, xZero, 65535)

	b.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", counterSeries{idx: xRunning})
	b.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", counterSeries{idx: xWaiting})
	b.gauge("vllm:num_requests_waiting_by_reason", "Number of requests waiting to be processed, by reason.",
		counterSeries{idx: xWaitCap, extra: []string{"reason", "capacity"}},
		counterSeries{idx: xWaitDef, extra: []string{"reason", "deferred"}})
	b.gauge("vllm:gpu_cache_usage_perc",
		"GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.",
		counterSeries{idx: xKV})
	b.counter("vllm:gpu_prefix_cache_queries",
		"GPU prefix cache queries, in terms of number of queriedtokens. DEPRECATED: Use vllm:prefix_cache_queries instead.",
		counterSeries{idx: cPrompt})
	b.counter("vllm:gpu_prefix_cache_hits",
		"GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use vllm:prefix_cache_hits instead.",
		counterSeries{idx: cHits})
	b.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", counterSeries{idx: xKV})
	b.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
		counterSeries{idx: cPrompt})
	b.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
		counterSeries{idx: cHits})
	b.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", counterSeries{idx: cPreempt})
	b.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", counterSeries{idx: cPrompt})
	b.counter("vllm:generation_tokens", "Number of generation tokens processed.", counterSeries{idx: cGen})
	b.counter("vllm:request_success", "Count of successfully processed requests.",
		counterSeries{idx: cStop, extra: []string{"finished_reason", "stop"}},
		counterSeries{idx: cLength, extra: []string{"finished_reason", "length"}},
		counterSeries{idx: cAbort, extra: []string{"finished_reason", "abort"}})
	b.setHist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", hPromptTok)
	b.setHist("vllm:request_generation_tokens", "Number of generation tokens processed.", hGenTok)
	b.setHist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", hIterTok)
	b.setHist("vllm:request_max_num_generation_tokens",
		"Histogram of maximum number of requested generation tokens.", hMaxGenTok)
	b.setHist("vllm:request_params_n", "Histogram of the n request parameter.", hParamsN)
	b.setHist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", hParamsMaxTok)
	b.setHist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", hTTFT)
	b.setHist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", hTPOT)
	if e.spec.InterTokenLatency {
		b.setHist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", hTPOT)
		b.setHist("vllm:request_time_per_output_token_seconds",
			"Histogram of time_per_output_token_seconds per request.", hReqTPOT)
	}
	b.setHist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", hE2E)
	b.setHist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", hQueue)
	b.setHist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.",
		hInference)
	b.setHist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
		hPrefill)
	b.setHist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", hDecode)

	b.header("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig")
	for s := range n {
		b.sample("vllm:cache_config_info", labelStr(
			"block_size", strconv.Itoa(e.spec.BlockSize), "cache_dtype", "auto", "calculate_kv_scales", "False",
			"cpu_kvcache_space_bytes", "None", "cpu_offload_gb", "0.0", "enable_prefix_caching", "True",
			"engine", e.sets[s].label, "gpu_memory_utilization", "0.9", "is_attention_free", "False",
			"kv_sharing_fast_prefill", "False", "mamba_cache_dtype", "auto", "mamba_page_size_padded", "None",
			"mamba_ssm_cache_dtype", "auto", "num_cpu_blocks", "None",
			"num_gpu_blocks", strconv.Itoa(e.spec.NumGPUBlocks), "num_gpu_blocks_override", "None",
			"prefix_caching_hash_algo", "builtin", "sliding_window", "None", "swap_space", "4.0",
			"swap_space_bytes", "4294967296.0"), s, xZero, 1)
	}

	// The API server's own instrumentation (prometheus-fastapi-instrumentator).
	chat := "/v1/chat/completions"
	b.header("http_requests_total", "counter", "Total number of requests by method, status and handler.")
	b.sample("http_requests_total", labelStr("handler", chat, "method", "POST", "status", "2xx"), proc, cReqs, 0)
	b.createdFamily("http_requests", "Total number of requests by method, status and handler.",
		func(emit func(int, string)) { emit(proc, labelStr("handler", chat, "method", "POST", "status", "2xx")) })
	for _, sz := range []struct {
		name, help string
		h          int
	}{
		{"http_request_size_bytes", "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ", hHTTPReqSize},
		{"http_response_size_bytes", "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ", hHTTPRespSize},
	} {
		b.header(sz.name, "summary", sz.help)
		b.sample(sz.name+"_count", labelStr("handler", chat), proc, hCount(sz.h), 0)
		b.sample(sz.name+"_sum", labelStr("handler", chat), proc, hSum(sz.h), 0)
		b.createdFamily(sz.name, sz.help, func(emit func(int, string)) { emit(proc, labelStr("handler", chat)) })
	}
	b.hist("http_request_duration_highr_seconds",
		"Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. ",
		hHTTPHighr, []int{proc}, func(_ int, extra ...string) string { return labelStr(extra...) })
	b.hist("http_request_duration_seconds",
		"Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. ",
		hHTTPDur, []int{proc}, func(_ int, extra ...string) string {
			return labelStr(append([]string{"handler", chat, "method", "POST"}, extra...)...)
		})
	return b.t
}

// buildLlamaCpp builds the template of a llama.cpp server body (mainline,
// mid-2026: no KV gauges, n_busy_slots_per_decode typed gauge).
func (e *Engine) buildLlamaCpp() template {
	b := &tmplBuilder{}
	m := b.llamaFamily
	m("prompt_tokens_total", "counter", "Number of prompt tokens processed.", fmtInt, xEvalPrompt)
	m("prompt_seconds_total", "counter", "Prompt process time", fmtG6, cPromptSec)
	m("tokens_predicted_total", "counter", "Number of generation tokens processed.", fmtInt, cPredicted)
	m("tokens_predicted_seconds_total", "counter", "Predict process time", fmtG6, cGenSec)
	m("n_decode_total", "counter", "Total number of llama_decode() calls", fmtInt, cSteps)
	m("n_tokens_max", "counter", "Largest observed n_tokens.", fmtInt, xNTokMax)
	m("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.", fmtG6, xPromptTPS)
	m("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.", fmtG6, xPredTPS)
	m("requests_processing", "gauge", "Number of requests processing.", fmtInt, xRunning)
	m("requests_deferred", "gauge", "Number of requests deferred.", fmtInt, xWaiting)
	m("n_busy_slots_per_decode", "gauge", "Average number of busy slots per llama_decode() call", fmtG6, xBusy)
	return b.t
}
