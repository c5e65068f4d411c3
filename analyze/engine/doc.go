// Package engine maps each inference engine's Prometheus series to canonical
// cells: one reader per engine, engine detection, the canonical cell names as
// constants, and a catalog of the series each reader knows so that the rest
// can be listed as unknown.
//
// Readers: vLLM V1 ([VLLM]) and V0 ([VLLMV0]), NVIDIA NIM ([NIM], V0's
// families without a prefix), llama.cpp and its forks ([LlamaCpp]; cached-
// prompt and speculative-decoding counters when present), SGLang, TGI,
// Triton with the TensorRT-LLM backend ([TRTLLM], [Triton]), and a generic
// fallback ([Generic]) that gives a rate for every counter, a value for every
// gauge and the window cells of every histogram of an engine nobody
// recognises. Each file of this package is one engine.
//
// # Detection
//
// The engine configured for the target when recording (its hint) wins; see
// [NormalizeHint]. Otherwise [DetectSeries] names the engine from the
// families of a poll: the prefix with most families (vllm:, llamacpp:,
// sglang:, tgi_, nv_trt_llm_, nv_inference_), V0 told from V1 by V0-only
// families, NIM by its unprefixed V0 set. A target stays generic, and is
// looked at again on every poll, until one is recognised.
//
// # Cells
//
// A [Tracker] replays one target: register each distinct series once with
// [Tracker.Key], then per poll [Tracker.Begin], [Tracker.Set] per sample and
// [Tracker.End], which feeds the counters (histogram parts included) to a
// rate.Estimator and returns the poll's [Cells]. Every known engine's reader
// writes every name of [Canonical], in that order, on every poll; what the
// engine does not publish is null with reason [ReasonNotExported], what is
// missing from the poll is null with reason absent: absent is never 0.
//
// Cells read over a window come from the estimator (rates, ratios of deltas,
// histograms from bucket deltas) with its gates and provenance; gauges and
// lifetime counters are read as they are; formulas say so in their source
// ("computed:a + b"). Renamed series are read under either name, the current
// one first (vLLM: gpu_cache_usage_perc → kv_cache_usage_perc,
// gpu_prefix_cache_* → prefix_cache_*, time_per_output_token_seconds →
// inter_token_latency_seconds and request_time_per_output_token_seconds).
// An engine's own throughput gauges are separate *_native cells and never
// stand in for a measured rate: a measured zero is what an idle engine does.
//
// What a cell means differs between engines where the engines differ (the
// seams: llama.cpp's prompt counter excludes cache hits, vLLM's includes
// them; TGI's time per token includes prefill); [Tracker.Notes] says so per
// cell.
package engine
