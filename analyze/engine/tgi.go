package engine

// newTGI reads the text-generation-inference router. It has no token
// counters: the token rates come from the _sum of its per-request length
// histograms, which move when a request is validated (input) or finishes
// (generated).
func newTGI() *reader {
	var (
		input  = "tgi_request_input_length_sum"
		output = "tgi_request_generated_tokens_sum"
		tpot   = hn("tgi_request_mean_time_per_token_duration")
		e2e    = hn("tgi_request_duration")
		queue  = hn("tgi_request_queue_duration")
	)
	r := &reader{id: TGI}
	// The token histograms' _sum move once per request (input length at
	// validation, generated tokens at completion), and so does the success
	// counter; tgi_request_duration gives the request duration.
	r.atCompletion = map[string]bool{"tgi_request_input_length": true, "tgi_request_generated_tokens": true,
		"tgi_request_success": true}
	r.duration = durationSource{e2e: e2e.base}
	r.families = catalog(
		"tgi_request_input_length", "prompt_tokens_per_second prompt_tokens_total tokens_total",
		"tgi_request_generated_tokens", "decode_tokens_per_second generation_tokens_total tokens_total",
		"tgi_request_success", "requests_finished_per_second requests_finished_total",
		"tgi_request_failure", "", "tgi_request_count", "",
		"tgi_queue_size", "requests_waiting",
		"tgi_batch_current_size", "requests_running",
		"tgi_batch_current_max_tokens", "",
		"tgi_request_duration", "e2e_request_latency_seconds",
		"tgi_request_queue_duration", "request_queue_time_seconds",
		tpot.base, "time_per_output_token_seconds per_request_decode_tokens_per_second",
		"tgi_request_validation_duration", "", "tgi_request_inference_duration", "",
		"tgi_request_max_new_tokens", "", "tgi_request_skipped_tokens", "",
		"tgi_batch_concat", "", "tgi_batch_concat_duration", "",
		"tgi_batch_inference_count", "", "tgi_batch_inference_success", "",
		"tgi_batch_forward_duration", "", "tgi_batch_inference_duration", "",
		"tgi_batch_decode_duration", "", "tgi_batch_filter_duration", "",
		"tgi_batch_next_size", "",
	)
	r.notes = map[string]string{
		PromptTokensPerSecond: "Δtgi_request_input_length_sum: prompt lengths at validation, failed requests and cached tokens included",
		DecodeTokensPerSecond: "Δtgi_request_generated_tokens_sum: output lengths at completion, so it moves only when requests finish",
		TPOT:                  "tgi_request_mean_time_per_token_duration: (prefill + decode) ÷ generated tokens per request; prefill is spread over the tokens",
		E2E:                   "validation + queue + inference",
	}
	r.decode, r.decodeReads = func(q *query, c *Cell) { q.rateTo(c, nil, output) }, output
	r.fill = func(q *query) {
		r.decode(q, q.cell(DecodeTokensPerSecond))
		q.put(PromptTokensPerSecond, q.rate(nil, input))
		q.put(RequestsRunning, q.gauge(aggSum, nil, "tgi_batch_current_size"))
		q.put(RequestsWaiting, q.gauge(aggSum, nil, "tgi_queue_size"))
		q.put(RequestsFinishedPerSecond, q.rate(nil, "tgi_request_success"))
		mean, name := q.histWith(TPOT, histMean, tpot)
		q.put(PerRequestDecodeTokensPerSecond, q.perRequest(mean, name))
		q.put(PerRequestDecodeTokensPerSecondLifetime, q.perRequestLifetime(tpot))
		q.histTo(E2E, e2e)
		q.histTo(Queue, queue)
		pt, gt := q.total(nil, input), q.total(nil, output)
		q.put(TokensTotal, q.sumTotals(pt, gt, false))
		q.put(PromptTokensTotal, pt)
		q.put(GenerationTokensTotal, gt)
		q.put(RequestsFinishedTotal, q.total(nil, "tgi_request_success"))
	}
	return r
}
