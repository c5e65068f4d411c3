package engine

// newSGLang reads sglang --enable-metrics. Scheduler gauges may be printed
// once per tensor-parallel rank with the same value, so they are read from
// tp_rank 0 (or series without the label) and summed over the other ranks.
func newSGLang() *reader {
	const p = "sglang:"
	var (
		gen    = p + "generation_tokens_total"
		prompt = p + "prompt_tokens_total"
		cached = p + "cached_tokens_total"
		itl    = []hname{hn(p + "inter_token_latency_seconds"), hn(p + "time_per_output_token_seconds")}
		ttft   = hn(p + "time_to_first_token_seconds")
		e2e    = hn(p + "e2e_request_latency_seconds")
		rank0  = newSel("tp_rank", "0", true)
	)
	r := &reader{id: SGLang, prefixes: []string{"python_", "process_"}}
	// Every token counter and the request counter move when a request
	// finishes (observe_one_finished_request); its e2e histogram gives
	// the request duration.
	r.atCompletion = map[string]bool{gen: true, prompt: true, cached: true, p + "num_requests_total": true}
	r.duration = durationSource{e2e: e2e.base}
	r.families = catalog(
		gen, "decode_tokens_per_second generation_tokens_total tokens_total",
		prompt, "prompt_tokens_per_second prompt_tokens_computed_per_second prompt_tokens_total tokens_total prefix_cache_hit_ratio",
		cached, "prompt_tokens_computed_per_second prompt_tokens_cached_total prefix_cache_hit_ratio",
		p+"num_requests_total", "requests_finished_per_second requests_finished_total",
		p+"num_so_requests_total", "", p+"num_aborted_requests_total", "",
		p+"num_running_reqs", "requests_running",
		p+"num_queue_reqs", "requests_waiting",
		p+"num_grammar_queue_reqs", "", p+"num_running_reqs_offline_batch", "",
		p+"token_usage", "kv_cache_usage_ratio",
		p+"num_used_tokens", "",
		p+"max_total_num_tokens", "kv_cache_capacity_tokens",
		p+"swa_token_usage", "", p+"mamba_usage", "", p+"pending_prealloc_token_usage", "",
		p+"gen_throughput", "decode_tokens_per_second_native",
		p+"cache_hit_rate", "prefix_cache_hit_ratio_native",
		p+"spec_accept_rate", "spec_accept_ratio_native",
		p+"spec_accept_length", "",
		p+"num_retracted_reqs", "",
		p+"utilization", "", p+"decode_sum_seq_lens", "", p+"new_token_ratio", "", p+"is_cuda_graph", "",
		p+"engine_startup_time", "", p+"engine_load_weights_time", "",
		p+"time_to_first_token_seconds", "time_to_first_token_seconds",
		itl[0].base, "inter_token_latency_seconds time_per_output_token_seconds per_request_decode_tokens_per_second",
		itl[1].base, "inter_token_latency_seconds time_per_output_token_seconds per_request_decode_tokens_per_second (before PR #4914)",
		p+"e2e_request_latency_seconds", "e2e_request_latency_seconds",
		p+"prompt_tokens_histogram", "", p+"generation_tokens_histogram", "",
		p+"num_retractions", "", p+"func_latency_seconds", "",
		p+"http_requests_active", "",
	)
	r.notes = map[string]string{
		PromptTokensPerSecond:         "prompt tokens of finished requests, cached tokens included; moves at request completion",
		PromptTokensComputedPerSecond: "prompt tokens net of cached_tokens_total",
		DecodeTokensPerSecond:         "generation tokens of finished requests: moves at request completion, use windows longer than a request",
		ITL:                           "per token: a chunk of k tokens adds k observations",
		TPOT:                          "SGLang's per-token inter-token latency (it has no per-request TPOT)",
		TTFT:                          "from arrival at the tokenizer manager",
		KVCacheUsageRatio:             "token_usage: tokens in use over the pool, evictable cached tokens counted free",
		DecodeTokensPerSecondNative:   "gen_throughput: the last ~40 decode steps, engine-wide; holds its last value when idle",
		PrefixCacheHitRatioNative:     "cache_hit_rate: the prefill batches logged last, not cumulative",
	}
	r.variant = func(t *Tracker) string {
		q := query{t: t}
		// The old name of the per-token latency.
		if q.present(itl[1].count) && !q.present(itl[0].count) {
			return "before PR #4914: time_per_output_token_seconds read as ITL and as TPOT"
		}
		return ""
	}
	r.decode, r.decodeReads = func(q *query, c *Cell) { q.rateTo(c, nil, gen) }, gen
	r.fill = func(q *query) {
		r.decode(q, q.cell(DecodeTokensPerSecond))
		pr := q.rate(nil, prompt)
		q.put(PromptTokensPerSecond, pr)
		q.put(PromptTokensComputedPerSecond, q.diffRates(pr, q.rate(nil, cached), prompt, cached))
		q.put(RequestsRunning, q.gauge(aggSum, rank0, p+"num_running_reqs"))
		q.put(RequestsWaiting, q.gauge(aggSum, rank0, p+"num_queue_reqs"))
		q.put(KVCacheUsageRatio, q.kv(rank0, p+"token_usage"))
		q.put(RequestsFinishedPerSecond, q.rate(nil, p+"num_requests_total"))
		q.put(PrefixCacheHitRatio, q.ratio([]string{cached}, []string{prompt}))
		pt, ct, gt := q.total(nil, prompt), q.total(nil, cached), q.total(nil, gen)
		q.put(PrefixCacheHitRatioLifetime, q.lifetimeRatio(ct, pt))

		q.histTo(TTFT, ttft)
		// One histogram is TPOT's and ITL's: made once, with the cells
		// either wants.
		mean, name := q.histWith(TPOT, histMean|q.histWants(ITL), itl...)
		q.put(PerRequestDecodeTokensPerSecond, q.perRequest(mean, name))
		q.histTo(ITL, itl...)
		q.put(PerRequestDecodeTokensPerSecondLifetime, q.perRequestLifetime(itl...))
		q.histTo(E2E, e2e)

		q.put(TokensTotal, q.sumTotals(pt, gt, false))
		q.put(PromptTokensTotal, pt)
		q.put(PromptTokensCachedTotal, ct)
		q.put(GenerationTokensTotal, gt)
		q.put(RequestsFinishedTotal, q.total(nil, p+"num_requests_total"))

		q.put(DecodeTokensPerSecondNative, q.gauge(aggSum, rank0, p+"gen_throughput"))
		q.put(PrefixCacheHitRatioNative, q.gauge(aggMax, rank0, p+"cache_hit_rate"))
		q.put(SpecAcceptRatioNative, q.gauge(aggMax, rank0, p+"spec_accept_rate"))
		q.put(KVCacheCapacityTokens, q.gauge(aggSum, rank0, p+"max_total_num_tokens"))
	}
	return r
}
