package engine

import (
	"slices"
	"strings"
)

// newVLLM reads vLLM V1 and V0 (prefix "vllm:") and NIM (V0's families with
// no prefix). Renamed series are read under either name, the current one
// first: gpu_cache_usage_perc → kv_cache_usage_perc, gpu_prefix_cache_* →
// prefix_cache_*, and time_per_output_token_seconds, split into
// inter_token_latency_seconds (per output event) and
// request_time_per_output_token_seconds (per request).
func newVLLM(id, p string) *reader {
	n := func(s string) string { return p + s }
	var (
		gen       = n("generation_tokens_total")
		prompt    = n("prompt_tokens_total")
		bySource  = n("prompt_tokens_by_source_total")
		cached    = n("prompt_tokens_cached_total")
		hits      = []string{n("prefix_cache_hits_total"), n("gpu_prefix_cache_hits_total")}
		queries   = []string{n("prefix_cache_queries_total"), n("gpu_prefix_cache_queries_total")}
		cachedAll = []string{cached, hits[0], hits[1]}
		accepted  = []string{n("spec_decode_num_accepted_tokens_total")}
		drafted   = []string{n("spec_decode_num_draft_tokens_total")}
		finished  = []string{n("request_success_total"), n("request_finish_total")}
		running   = n("num_requests_running")
		waiting   = n("num_requests_waiting")
		byReason  = n("num_requests_waiting_by_reason")
		preempt   = n("num_preemptions_total")
		kv        = []string{n("kv_cache_usage_perc"), n("gpu_cache_usage_perc")}
		cacheInfo = n("cache_config_info")
		avgGen    = n("avg_generation_throughput_toks_per_s")
		avgPrompt = n("avg_prompt_throughput_toks_per_s")
		hitRate   = n("gpu_prefix_cache_hit_rate")
		specRate  = n("spec_decode_draft_acceptance_rate")
		maxReq    = n("num_request_max")
		oldTPOT   = hn(n("time_per_output_token_seconds"))
		ttft      = hn(n("time_to_first_token_seconds"))
		tpot      = []hname{hn(n("request_time_per_output_token_seconds")), oldTPOT}
		itl       = []hname{hn(n("inter_token_latency_seconds")), oldTPOT}
		e2e       = hn(n("e2e_request_latency_seconds"))
		queue     = []hname{hn(n("request_queue_time_seconds")), hn(n("time_in_queue_requests"))}
		local     = newSel("source", "local_compute", false)
	)
	r := &reader{id: id, prefixes: []string{"python_", "process_"}, skips: true}
	// The decode tokens move on every step. The prompt tokens move once
	// per request, by its whole prompt, when its prefill is done (V1's
	// IterationStats counts a request's prompt at its first output), and
	// the prefix-cache lookups once when it is scheduled: at low
	// concurrency most poll intervals hold none, so they are windowed over
	// the typical request duration (from the e2e histogram) and a
	// request-sized step is no jump. The prompt-computed cell subtracts
	// the hits from the prompt tokens and the hit ratio divides hits by
	// queries: all of them move together.
	r.everyStep = map[string]bool{gen: true}
	r.atCompletion = map[string]bool{prompt: true, bySource: true}
	for _, f := range append(slices.Clone(hits), queries...) {
		r.atCompletion[f] = true
	}
	r.duration = durationSource{e2e: e2e.base}
	r.families = catalog(
		gen, "decode_tokens_per_second generation_tokens_total tokens_total",
		prompt, "prompt_tokens_per_second prompt_tokens_computed_per_second prompt_tokens_total tokens_total",
		bySource, "prompt_tokens_computed_per_second",
		cached, "prompt_tokens_cached_total",
		n("prompt_tokens_recomputed_total"), "",
		hits[0], "prefix_cache_hit_ratio prompt_tokens_computed_per_second prompt_tokens_cached_total",
		hits[1], "prefix_cache_hit_ratio prompt_tokens_computed_per_second prompt_tokens_cached_total (pre-0.9 name)",
		queries[0], "prefix_cache_hit_ratio",
		queries[1], "prefix_cache_hit_ratio (pre-0.9 name)",
		n("external_prefix_cache_hits_total"), "", n("external_prefix_cache_queries_total"), "",
		n("mm_cache_hits_total"), "", n("mm_cache_queries_total"), "",
		preempt, "preemptions_per_second preemptions_total",
		finished[0], "requests_finished_per_second requests_finished_total",
		finished[1], "requests_finished_per_second requests_finished_total (NIM)",
		n("request_failure_total"), "",
		n("corrupted_requests_total"), "",
		running, "requests_running",
		waiting, "requests_waiting",
		byReason, "waiting_by_reason",
		n("num_requests_swapped"), "",
		maxReq, "max_running_requests (NIM)",
		kv[0], "kv_cache_usage_ratio",
		kv[1], "kv_cache_usage_ratio (pre-0.9 name)",
		n("cpu_cache_usage_perc"), "",
		n("engine_sleep_state"), "",
		cacheInfo, "kv_cache_capacity_tokens prefix_caching_enabled",
		n("lora_requests_info"), "",
		accepted[0], "spec_accept_ratio",
		drafted[0], "spec_accept_ratio",
		n("spec_decode_num_drafts_total"), "",
		n("spec_decode_num_accepted_tokens_per_pos_total"), "",
		n("spec_decode_num_emitted_tokens_total"), "",
		specRate, "spec_accept_ratio_native",
		n("spec_decode_efficiency"), "",
		ttft.base, "time_to_first_token_seconds",
		itl[0].base, "inter_token_latency_seconds",
		tpot[0].base, "time_per_output_token_seconds per_request_decode_tokens_per_second",
		oldTPOT.base, "inter_token_latency_seconds time_per_output_token_seconds per_request_decode_tokens_per_second (pre-0.11 name)",
		e2e.base, "e2e_request_latency_seconds",
		queue[0].base, "request_queue_time_seconds",
		queue[1].base, "request_queue_time_seconds (V0, hidden in 0.8)",
		n("request_prefill_time_seconds"), "", n("request_decode_time_seconds"), "",
		n("request_inference_time_seconds"), "",
		n("request_prompt_tokens"), "", n("request_generation_tokens"), "",
		n("request_prefill_kv_computed_tokens"), "",
		n("request_max_num_generation_tokens"), "", n("request_params_max_tokens"), "",
		n("request_params_n"), "", n("request_params_best_of"), "",
		n("iteration_tokens_total"), "",
		n("kv_block_lifetime_seconds"), "", n("kv_block_idle_before_evict_seconds"), "",
		n("kv_block_reuse_gap_seconds"), "",
		n("model_forward_time_milliseconds"), "", n("model_execute_time_milliseconds"), "",
		avgPrompt, "prompt_tokens_per_second_native",
		avgGen, "decode_tokens_per_second_native",
		hitRate, "prefix_cache_hit_ratio_native",
		n("cpu_prefix_cache_hit_rate"), "",
		n("estimated_flops_per_gpu_total"), "",
	)
	r.notes = map[string]string{
		PromptTokensPerSecond:         "every prompt token of a finished prefill, prefix-cache hits and transferred KV included",
		PromptTokensComputedPerSecond: `prompt_tokens_by_source_total{source="local_compute"} when exported, else prompt tokens net of local prefix-cache hits`,
		ITL:                           "per output event of a request: with speculative decoding one event carries several tokens",
		TPOT:                          "request_time_per_output_token_seconds: each request's mean decode time per token; before 0.11 the per-event time_per_output_token_seconds, equal per token without speculative decoding",
		TTFT:                          "from front-end arrival, tokenisation included",
		DecodeTokensPerSecondNative:   "V0's avg_generation_throughput_toks_per_s: the last ~5 s logging interval, frozen when idle",
		PromptTokensPerSecondNative:   "V0's avg_prompt_throughput_toks_per_s: the last ~5 s logging interval, frozen when idle",
	}
	if id == NIM {
		r.prefixes = nil // unprefixed names clash easily: know only NIM's own
	}
	r.variant = func(t *Tracker) string {
		// V0 and NIM have only the old names; they are news for V1 alone.
		if id != VLLM {
			return ""
		}
		q := query{t: t}
		var parts []string
		if q.present(kv[1]) && !q.present(kv[0]) {
			parts = append(parts, "pre-0.9 names (gpu_cache_usage_perc, gpu_prefix_cache_*)")
		}
		if q.present(oldTPOT.count) && !q.present(itl[0].count) {
			parts = append(parts, "pre-0.11 names (time_per_output_token_seconds read as ITL and as TPOT)")
		}
		return strings.Join(parts, "; ")
	}
	blocks := func(l func(string) (string, bool)) (float64, bool) {
		b, ok1 := labelNumber(l, "num_gpu_blocks")
		size, ok2 := labelNumber(l, "block_size")
		return b * size, ok1 && ok2
	}
	caching := func(l func(string) (string, bool)) (float64, bool) { return labelBool(l, "enable_prefix_caching") }
	r.decode, r.decodeReads = func(q *query, c *Cell) { q.rateTo(c, nil, gen) }, gen
	// What a caller may not want (Tracker.Want): every cell read through
	// the estimator, with the cells it is made from, and the leaves
	// nothing else is made from. A family feeds the estimator only when
	// a cell its catalog entry names is wanted (feedsWanted), so a cell
	// skipped here is one whose counters may be starved.
	var (
		decodeBit, promptBit  = wantBits(DecodeTokensPerSecond), wantBits(PromptTokensPerSecond)
		computedBit           = wantBits(PromptTokensComputedPerSecond)
		preemptBit, finishBit = wantBits(PreemptionsPerSecond), wantBits(RequestsFinishedPerSecond)
		hitBit                = wantBits(PrefixCacheHitRatio)
		specBit, specLifeBit  = wantBits(SpecAcceptRatio), wantBits(SpecAcceptRatioLifetime)
		perReqBit             = wantBits(PerRequestDecodeTokensPerSecond)
		perReqLifeBit         = wantBits(PerRequestDecodeTokensPerSecondLifetime)
		ttftBits, tpotBits    = wantBits(TTFT), wantBits(TPOT)
		itlBits, e2eBits      = wantBits(ITL), wantBits(E2E)
		queueBits             = wantBits(Queue)
		cachedBit             = wantBits(PromptTokensCachedTotal)
		nativeBits            = wantBits(DecodeTokensPerSecondNative, PromptTokensPerSecondNative,
			PrefixCacheHitRatioNative, SpecAcceptRatioNative)
	)
	// The cells are written in place (query.cell), each once. A cell not
	// wanted may be made all the same (TPOT's mean, for the per-request
	// speed): it is made from counters fed to the estimator, since the
	// catalog names every cell a family feeds, made or made from.
	r.fill = func(q *query) {
		if q.wants(decodeBit) {
			r.decode(q, q.cell(DecodeTokensPerSecond))
		}
		if q.wants(promptBit | computedBit) {
			pr := q.cell(PromptTokensPerSecond)
			q.rateTo(pr, nil, prompt)
			switch {
			case !q.wants(computedBit):
			case q.present(bySource):
				q.rateTo(q.cell(PromptTokensComputedPerSecond), local, bySource)
			default:
				h, _ := q.pick(hits...)
				var hr Cell
				q.rateTo(&hr, nil, hits...)
				q.diffRatesTo(q.cell(PromptTokensComputedPerSecond), pr, &hr, prompt, h)
			}
		}
		q.gaugeTo(q.cell(RequestsRunning), aggSum, nil, running)
		q.gaugeTo(q.cell(RequestsWaiting), aggSum, nil, waiting)
		q.byTo(q.cell(WaitingByReason), byReason, "reason")
		q.kvTo(q.cell(KVCacheUsageRatio), nil, kv...)
		if q.wants(preemptBit) {
			q.rateTo(q.cell(PreemptionsPerSecond), nil, preempt)
		}
		if q.wants(finishBit) {
			q.rateTo(q.cell(RequestsFinishedPerSecond), nil, finished...)
		}
		if q.wants(hitBit) {
			q.ratioTo(q.cell(PrefixCacheHitRatio), hits, queries)
		}
		q.totalsRatioTo(q.cell(PrefixCacheHitRatioLifetime), hits, queries)
		if q.wants(specBit) {
			q.ratioTo(q.cell(SpecAcceptRatio), accepted, drafted)
		}
		if q.wants(specLifeBit) {
			q.totalsRatioTo(q.cell(SpecAcceptRatioLifetime), accepted, drafted)
		}

		if q.wants(ttftBits) {
			q.histTo(TTFT, ttft)
		}
		if q.wants(tpotBits | perReqBit) {
			// Before 0.11 one histogram is TPOT's and ITL's: made once,
			// with the cells either wants.
			extra := uint8(histMean)
			if q.wants(itlBits) && tpot[q.pickHistAt(tpot)].base == itl[q.pickHistAt(itl)].base {
				extra |= q.histWants(ITL)
			}
			mean, name := q.histWith(TPOT, extra, tpot...)
			q.perRequestTo(q.cell(PerRequestDecodeTokensPerSecond), mean, name)
		}
		if q.wants(perReqLifeBit) {
			q.perRequestLifetimeTo(q.cell(PerRequestDecodeTokensPerSecondLifetime), tpot...)
		}
		if q.wants(itlBits) {
			q.histTo(ITL, itl...)
		}
		if q.wants(e2eBits) {
			q.histTo(E2E, e2e)
		}
		if q.wants(queueBits) {
			q.histTo(Queue, queue...)
		}

		tt := q.cell(TokensTotal)
		pt, gt := q.cell(PromptTokensTotal), q.cell(GenerationTokensTotal)
		q.totalTo(pt, nil, prompt)
		q.totalTo(gt, nil, gen)
		q.sumTotalsTo(tt, pt, gt, false)
		if q.wants(cachedBit) {
			q.totalTo(q.cell(PromptTokensCachedTotal), nil, cachedAll...)
		}
		q.totalTo(q.cell(RequestsFinishedTotal), nil, finished...)
		q.totalTo(q.cell(PreemptionsTotal), nil, preempt)

		if id != VLLM && q.wants(nativeBits) {
			q.gaugeTo(q.cell(DecodeTokensPerSecondNative), aggSum, nil, avgGen)
			q.gaugeTo(q.cell(PromptTokensPerSecondNative), aggSum, nil, avgPrompt)
			c := q.cell(PrefixCacheHitRatioNative)
			q.gaugeTo(c, aggMax, nil, hitRate)
			disabledBelowZero(c)
			q.gaugeTo(q.cell(SpecAcceptRatioNative), aggMax, nil, specRate)
		}
		q.factTo(q.cell(KVCacheCapacityTokens), aggSum, cacheInfo, "kv_capacity", blocks)
		q.factTo(q.cell(PrefixCachingEnabled), aggMax, cacheInfo, "prefix_caching", caching)
		if id == NIM {
			q.gaugeTo(q.cell(MaxRunningRequests), aggSum, nil, maxReq)
		}
	}
	return r
}

// disabledBelowZero turns V0's −1 "prefix caching is off" into a null.
func disabledBelowZero(c *Cell) {
	// −1 is the engine saying the feature is off, not a ratio.
	if c.Value.Valid && c.Value.V < 0 {
		c.Value.Valid, c.Value.V = false, 0
		c.Reason = ReasonDisabled
	}
}
