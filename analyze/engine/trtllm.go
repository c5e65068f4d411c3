package engine

import "github.com/llmrec/llmrec/analyze/rate"

const (
	trtRequests = "nv_trt_llm_request_metrics"
	trtKV       = "nv_trt_llm_kv_cache_block_metrics"
	trtGeneral  = "nv_trt_llm_general_metrics"
	nvSuccess   = "nv_inference_request_success"
	nvPending   = "nv_inference_pending_request_count"
	nvQueueUs   = "nv_inference_queue_duration_us"
	nvRequestUs = "nv_inference_request_duration_us"
)

var (
	trtScheduled = newSel("request_type", "scheduled", false)
	trtWaiting   = newSel("request_type", "waiting", false)
	trtMax       = newSel("request_type", "max", false)
	trtFraction  = newSel("kv_cache_block_type", "fraction", false)
	trtUsed      = newSel("kv_cache_block_type", "used", false)
	trtMaxBlocks = newSel("kv_cache_block_type", "max", false)
	trtTokensPer = newSel("kv_cache_block_type", "tokens_per", false)
)

// newTriton reads Triton's core series and the TensorRT-LLM backend's
// nv_trt_llm_* gauges (snapshots of the batcher's last iteration). There are
// no token counters at all; latencies are cumulative microseconds.
func newTriton(id string) *reader {
	r := &reader{id: id, prefixes: []string{"nv_gpu_", "nv_cpu_", "nv_energy_", "nv_pinned_memory_", "nv_cache_"}}
	r.families = catalog(
		trtRequests, "requests_running requests_waiting max_running_requests",
		trtKV, "kv_cache_usage_ratio kv_cache_capacity_tokens",
		trtGeneral, "",
		"nv_trt_llm_runtime_memory_metrics", "",
		"nv_trt_llm_inflight_batcher_metrics", "",
		"nv_trt_llm_v1_metrics", "",
		"nv_trt_llm_disaggregated_serving_metrics", "",
		nvSuccess, "requests_finished_per_second requests_finished_total e2e_request_latency_seconds request_queue_time_seconds",
		"nv_inference_request_failure", "", "nv_inference_count", "", "nv_inference_exec_count", "",
		nvRequestUs, "e2e_request_latency_seconds",
		nvQueueUs, "request_queue_time_seconds",
		"nv_inference_compute_input_duration_us", "", "nv_inference_compute_infer_duration_us", "",
		"nv_inference_compute_output_duration_us", "",
		nvPending, "requests_waiting",
	)
	r.notes = map[string]string{
		RequestsRunning:    `nv_trt_llm_request_metrics{request_type="scheduled"}: the batcher's last iteration`,
		RequestsWaiting:    `request_type="waiting" on newer builds, else Triton's nv_inference_pending_request_count`,
		E2E + SuffixMean:   "Δnv_inference_request_duration_us / Δnv_inference_request_success: cumulative per-request µs over requests",
		Queue + SuffixMean: "Δnv_inference_queue_duration_us / Δnv_inference_request_success",
		KVCacheUsageRatio:  `kv_cache_block_type="fraction" on newer builds, else used ÷ max blocks`,
	}
	r.fill = func(q *query) {
		q.put(RequestsRunning, q.gauge(aggSum, trtScheduled, trtRequests))
		w := q.gauge(aggSum, trtWaiting, trtRequests)
		if !w.Value.Valid {
			w = q.gauge(aggSum, nil, nvPending)
		}
		q.put(RequestsWaiting, w)
		q.put(MaxRunningRequests, q.gauge(aggSum, trtMax, trtRequests))

		kv := q.kv(trtFraction, trtKV)
		if !kv.Value.Valid {
			kv = q.kvRatio(q.gauge(aggSum, trtUsed, trtKV), q.gauge(aggSum, trtMaxBlocks, trtKV))
		}
		q.put(KVCacheUsageRatio, kv)
		q.put(KVCacheCapacityTokens, q.product(q.gauge(aggSum, trtMaxBlocks, trtKV), q.gauge(aggSum, trtTokensPer, trtKV)))

		q.put(RequestsFinishedPerSecond, q.rate(nil, nvSuccess))
		q.put(RequestsFinishedTotal, q.total(nil, nvSuccess))
		q.put(E2E+SuffixMean, q.perRequestMicros(nvRequestUs))
		q.put(Queue+SuffixMean, q.perRequestMicros(nvQueueUs))
	}
	return r
}

// kvRatio is used ÷ capacity, with its severity.
func (q *query) kvRatio(used, capacity Cell) Cell {
	if !used.Value.Valid {
		return used
	}
	if !capacity.Value.Valid {
		return capacity
	}
	// An empty pool has no usage ratio.
	if capacity.Value.V <= 0 {
		return Cell{Cell: rate.Cell{Reason: rate.ReasonEmpty, Source: q.src('c', used.Source, capacity.Source), Derived: true}}
	}
	c := Cell{Cell: rate.KVCell(q.src('c', used.Source, capacity.Source), rate.Some(used.Value.V/capacity.Value.V))}
	c.Derived = true
	return c
}

// product is a × b as read.
func (q *query) product(a, b Cell) Cell {
	if !a.Value.Valid {
		return a
	}
	if !b.Value.Valid {
		return b
	}
	return Cell{Cell: rate.Cell{Value: rate.Some(a.Value.V * b.Value.V), Source: q.src('*', a.Source, b.Source), Derived: true}}
}

// perRequestMicros is Δ(cumulative µs)/Δrequests over the window, in seconds.
func (q *query) perRequestMicros(us string) Cell {
	q.fed(us, nvSuccess)
	c := Cell{Cell: q.est.Ratio(us, nvSuccess, nil)}
	c.Source = q.src('u', us, nvSuccess)
	return scale(c, 1e-6)
}
