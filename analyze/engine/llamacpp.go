package engine

import "strings"

// llama.cpp series names, and the names forks give the counters mainline
// does not have (a cached-prompt counter, speculative-decoding counters):
// the first present is read.
var (
	lcPrompt       = "llamacpp:prompt_tokens_total"
	lcPredicted    = "llamacpp:tokens_predicted_total"
	lcPredictedSec = "llamacpp:tokens_predicted_seconds_total"
	lcCached       = []string{"llamacpp:prompt_tokens_cache_total", "llamacpp:prompt_tokens_cached_total",
		"llamacpp:tokens_prompt_cached_total", "llamacpp:cached_prompt_tokens_total"}
	lcDrafted = []string{"llamacpp:n_drafted_total", "llamacpp:n_draft_total", "llamacpp:draft_tokens_total",
		"llamacpp:n_draft_tokens_total"}
	lcAccepted = []string{"llamacpp:n_drafted_accepted_total", "llamacpp:n_draft_accepted_total",
		"llamacpp:draft_tokens_accepted_total", "llamacpp:n_accepted_total"}
	lcKV = "llamacpp:kv_cache_usage_ratio"
)

var noteNoCached = []string{"cache hits not included: this build exports no cached-prompt counter"}

// newLlamaCpp reads llama-server --metrics and its forks (ik_llama.cpp keeps
// the kv_cache gauges mainline removed; others add cached-prompt and
// speculative-decoding counters). No series has labels.
func newLlamaCpp() *reader {
	r := &reader{id: LlamaCpp, skips: true}
	// n_decode_total moves once per llama_decode() call; the token
	// counters move when a request's prompt is done or it completes.
	r.everyStep = map[string]bool{"llamacpp:n_decode_total": true}
	// The token counters and their per-request seconds move once per
	// request: the prompt's when its prompt is done, the predicted ones
	// when it completes. llama.cpp publishes no request count and no
	// duration histogram: the duration is Little's law's, from the busy
	// slots and the polls at which tokens_predicted_total moved.
	r.atCompletion = map[string]bool{lcPrompt: true, "llamacpp:prompt_seconds_total": true, lcPredicted: true, lcPredictedSec: true}
	for _, c := range lcCached {
		r.atCompletion[c] = true
	}
	r.duration = durationSource{running: "llamacpp:requests_processing", moves: lcPredicted}
	pairs := []string{
		lcPrompt, "prompt_tokens_per_second prompt_tokens_computed_per_second prompt_tokens_total tokens_total prefix_cache_hit_ratio",
		"llamacpp:prompt_seconds_total", "",
		lcPredicted, "decode_tokens_per_second generation_tokens_total tokens_total per_request_decode_tokens_per_second",
		lcPredictedSec, "per_request_decode_tokens_per_second",
		"llamacpp:prompt_tokens_seconds", "prompt_tokens_per_second_native",
		"llamacpp:predicted_tokens_seconds", "decode_tokens_per_second_native",
		"llamacpp:requests_processing", "requests_running",
		"llamacpp:requests_deferred", "requests_waiting",
		lcKV, "kv_cache_usage_ratio",
		"llamacpp:kv_cache_tokens", "",
		"llamacpp:n_decode_total", "",
		"llamacpp:n_busy_slots_per_decode", "",
		"llamacpp:n_tokens_max", "",
		"llamacpp:n_past_max", "",
		"llamacpp:prompt_cache_hit_ratio", "prefix_cache_hit_ratio_native",
		"llamacpp:draft_acceptance_rate", "spec_accept_ratio_native",
		"llamacpp:draft_mean_accept_len", "",
		"llamacpp:draft_verify_steps_total", "",
		"llamacpp:n_draft_verif_steps_total", "",
		"llamacpp:n_verify_steps_total", "",
		"llamacpp:n_drafted_rejected_total", "",
	}
	for _, c := range lcCached {
		pairs = append(pairs, c, "prompt_tokens_cached_total tokens_total prefix_cache_hit_ratio")
	}
	for _, c := range lcDrafted {
		pairs = append(pairs, c, "spec_accept_ratio")
	}
	for _, c := range lcAccepted {
		pairs = append(pairs, c, "spec_accept_ratio")
	}
	r.families = catalog(pairs...)
	r.notes = map[string]string{
		PromptTokensPerSecond:           "prompt tokens evaluated: tokens reused from the slot's prompt cache are excluded; added once per request when its prompt is processed",
		PromptTokensComputedPerSecond:   "the same counter: llama.cpp counts evaluated prompt tokens only",
		DecodeTokensPerSecond:           "tokens_predicted_total moves only when a request finishes: use windows longer than a request",
		PerRequestDecodeTokensPerSecond: "Δtokens_predicted_total / Δtokens_predicted_seconds_total: per-slot speed, not server throughput",
		DecodeTokensPerSecondNative:     "predicted_tokens_seconds: a per-slot average whose window depends on the build (since start, or since the last scrape); never the headline",
		PromptTokensPerSecondNative:     "prompt_tokens_seconds: a per-slot average whose window depends on the build; never the headline",
		RequestsWaiting:                 "requests_deferred: tasks waiting for a free slot. Requests held in the HTTP server's threads (--threads-http) before they become tasks are in no series: with every slot busy, 0 waiting does not mean no queue",
	}
	r.variant = func(t *Tracker) string {
		q := query{t: t}
		var parts []string
		if q.present(lcKV) && !q.present("llamacpp:n_decode_total") {
			parts = append(parts, "kv_cache gauges and no n_decode_total: ik_llama.cpp or a build before PR #13660")
		}
		if _, ok := q.pick(lcCached...); ok {
			parts = append(parts, "a cached-prompt counter")
		}
		if _, ok := q.pick(lcDrafted...); ok {
			parts = append(parts, "speculative-decoding counters")
		}
		return strings.Join(parts, "; ")
	}
	r.decode, r.decodeReads = func(q *query, c *Cell) { q.rateTo(c, nil, lcPredicted) }, lcPredicted
	var (
		decodeBit    = wantBits(DecodeTokensPerSecond)
		promptBits   = wantBits(PromptTokensPerSecond, PromptTokensComputedPerSecond)
		hitBit       = wantBits(PrefixCacheHitRatio)
		specBit      = wantBits(SpecAcceptRatio)
		specLifeBit  = wantBits(SpecAcceptRatioLifetime)
		perReqBit    = wantBits(PerRequestDecodeTokensPerSecond)
		decodeNative = wantBits(DecodeTokensPerSecondNative)
		promptNative = wantBits(PromptTokensPerSecondNative)
		hitNative    = wantBits(PrefixCacheHitRatioNative)
		specNative   = wantBits(SpecAcceptRatioNative)
		predicted    = []string{lcPredicted}
		predictedSec = []string{lcPredictedSec}
	)
	// The cells are written in place (query.cell), each once; a cell read
	// through the estimator is made only when wanted (Tracker.Want), as
	// its counters are fed only then.
	r.fill = func(q *query) {
		if q.wants(decodeBit) {
			r.decode(q, q.cell(DecodeTokensPerSecond))
		}
		if q.wants(promptBits) {
			pr := q.cell(PromptTokensPerSecond)
			q.rateTo(pr, nil, lcPrompt)
			*q.cell(PromptTokensComputedPerSecond) = *pr
		}
		q.gaugeTo(q.cell(RequestsRunning), aggSum, nil, "llamacpp:requests_processing")
		q.gaugeTo(q.cell(RequestsWaiting), aggSum, nil, "llamacpp:requests_deferred")
		q.kvTo(q.cell(KVCacheUsageRatio), nil, lcKV)

		if q.wants(hitBit) {
			cached, _ := q.pick(lcCached...)
			q.put(PrefixCacheHitRatio, q.hitShare(cached, lcPrompt))
		}
		pt, ct, gt := q.cell(PromptTokensTotal), q.cell(PromptTokensCachedTotal), q.cell(GenerationTokensTotal)
		q.totalTo(pt, nil, lcPrompt)
		q.totalTo(ct, nil, lcCached...)
		q.totalTo(gt, nil, lcPredicted)
		q.put(PrefixCacheHitRatioLifetime, q.lifetimeShare(*ct, *pt))
		if q.wants(specBit) {
			q.ratioTo(q.cell(SpecAcceptRatio), lcAccepted, lcDrafted)
		}
		if q.wants(specLifeBit) {
			q.totalsRatioTo(q.cell(SpecAcceptRatioLifetime), lcAccepted, lcDrafted)
		}
		if q.wants(perReqBit) {
			q.ratioTo(q.cell(PerRequestDecodeTokensPerSecond), predicted, predictedSec)
		}
		var sec, ptc Cell
		q.totalTo(&sec, nil, lcPredictedSec)
		q.lifetimeRatioTo(q.cell(PerRequestDecodeTokensPerSecondLifetime), gt, &sec)

		tt := q.cell(TokensTotal)
		q.sumTotalsTo(&ptc, pt, ct, true)
		q.sumTotalsTo(tt, &ptc, gt, false)
		if tt.Value.Valid && !ct.Value.Valid {
			tt.Notes = noteNoCached
		}

		if q.wants(decodeNative) {
			q.gaugeTo(q.cell(DecodeTokensPerSecondNative), aggSum, nil, "llamacpp:predicted_tokens_seconds")
		}
		if q.wants(promptNative) {
			q.gaugeTo(q.cell(PromptTokensPerSecondNative), aggSum, nil, "llamacpp:prompt_tokens_seconds")
		}
		if q.wants(hitNative) {
			q.gaugeTo(q.cell(PrefixCacheHitRatioNative), aggMax, nil, "llamacpp:prompt_cache_hit_ratio")
		}
		if q.wants(specNative) {
			q.gaugeTo(q.cell(SpecAcceptRatioNative), aggMax, nil, "llamacpp:draft_acceptance_rate")
		}
	}
	return r
}
