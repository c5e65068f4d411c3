package engines

import "strings"

// Kind is what a series really is, whatever its TYPE line says: some
// engines type a lifetime average or a running maximum counter.
type Kind string

// Kinds of series.
const (
	// Monotonic: a count that only rises in a healthy process; a fall is
	// a restart, and rate() is taken of it.
	Monotonic Kind = "monotonic counter"
	// LifetimeAverage: an average since the process started; it falls in
	// a healthy process whenever the averaged quantity drops.
	LifetimeAverage Kind = "lifetime average"
	// Maximum: the largest value seen since the process started; it never
	// falls in a healthy process, but it counts nothing (no rate).
	Maximum Kind = "running maximum"
	// Gauge: a value that may go either way.
	Gauge Kind = "gauge"
	// Timestamp: a point in time (a process start): a change is a new
	// process.
	Timestamp Kind = "timestamp"
	// Clock: a point in time that moves in a healthy process (the last
	// iteration, the last stats log): never a rate, never a restart.
	Clock Kind = "wall-clock time"
)

// Rateable reports whether rate() may be taken of a series of kind k.
func (k Kind) Rateable() bool { return k == Monotonic }

// FallIsRestart reports whether a fall of a series of kind k can only
// happen across a restart: a monotonic counter or a running maximum.
func (k Kind) FallIsRestart() bool { return k == Monotonic || k == Maximum }

// Declaration is what one family of an engine really is.
type Declaration struct {
	Family string `json:"family"`
	// Label narrows it to the series with this label pair (name="value"),
	// "" every series of the family: TensorRT-LLM prints a counter and a
	// clock in one gauge family.
	Label string `json:"label,omitempty"`
	Kind  Kind   `json:"kind"`
	// Typed is the TYPE the engine prints for it, by build where it
	// differs ("" as its kind says).
	Typed string `json:"typed,omitempty"`
	// Source says where the kind was read: the engine's code, the catalog.
	Source string `json:"source"`
}

// declarations are the families whose kind is not what every build's TYPE
// line says, and the counters an engine reader reads, by engine.
var declarations = map[string][]Declaration{
	LlamaCpp: {
		// llama.cpp server.cpp (examples/server, later tools/server),
		// handle_metrics: the "counter" group holds the five totals and
		// n_busy_slots_per_decode = n_busy_slots_total / max(n_decode_total, 1).
		{Family: "llamacpp:prompt_tokens_total", Kind: Monotonic, Source: "server.cpp handle_metrics: n_prompt_tokens_processed_total"},
		{Family: "llamacpp:prompt_seconds_total", Kind: Monotonic, Source: "server.cpp handle_metrics: t_prompt_processing_total"},
		{Family: "llamacpp:tokens_predicted_total", Kind: Monotonic, Source: "server.cpp handle_metrics: n_tokens_predicted_total"},
		{Family: "llamacpp:tokens_predicted_seconds_total", Kind: Monotonic, Source: "server.cpp handle_metrics: t_tokens_generation_total"},
		{Family: "llamacpp:n_decode_total", Kind: Monotonic, Source: "server.cpp handle_metrics: n_decode_total (PR #9283)"},
		{Family: "llamacpp:n_busy_slots_per_decode", Kind: LifetimeAverage,
			Typed:  "counter (b4748 and the builds of PR #9283 on; some builds print gauge)",
			Source: "server.cpp handle_metrics: n_busy_slots_total / max(n_decode_total, 1); metric catalog: mistyped, not monotonic"},
		{Family: "llamacpp:n_tokens_max", Kind: Maximum, Typed: "counter",
			Source: "server.cpp: the largest prompt or context size seen in any slot; metric catalog"},
		{Family: "llamacpp:n_past_max", Kind: Maximum, Typed: "counter (older builds)",
			Source: "server.cpp: the largest n_past seen; metric catalog"},
		{Family: "llamacpp:prompt_tokens_seconds", Kind: Gauge, Source: "server.cpp handle_metrics: a per-slot average over a bucket window"},
		{Family: "llamacpp:predicted_tokens_seconds", Kind: Gauge, Source: "server.cpp handle_metrics: a per-slot average over a bucket window"},
		{Family: "llamacpp:requests_processing", Kind: Gauge, Source: "server.cpp handle_metrics: slots busy"},
		{Family: "llamacpp:requests_deferred", Kind: Gauge, Source: "server.cpp handle_metrics: tasks waiting for a slot"},
		{Family: "llamacpp:kv_cache_usage_ratio", Kind: Gauge, Source: "server.cpp handle_metrics (removed by PR #13660)"},
		{Family: "llamacpp:kv_cache_tokens", Kind: Gauge, Source: "server.cpp handle_metrics (removed by PR #13660)"},
	},
	VLLM:   vllmDeclarations,
	VLLMV0: vllmDeclarations,
	SGLang: {
		// Both rise at request completion (observe_one_finished_request),
		// in request-sized steps: monotonic, rated over long windows.
		{Family: "sglang:prompt_tokens_total", Kind: Monotonic, Source: "sglang srt/metrics/collector.py TokenizerMetricsCollector: incremented at request completion; metric catalog 4.1"},
		{Family: "sglang:generation_tokens_total", Kind: Monotonic, Source: "sglang srt/metrics/collector.py TokenizerMetricsCollector: incremented at request completion; metric catalog 4.1"},
		{Family: "sglang:gen_throughput", Kind: Gauge, Source: "sglang scheduler_metrics_mixin.py: tokens over the last decode log interval, held when idle; metric catalog 4.2"},
	},
	TGI: {
		// TGI has no process start (series or header): its counters,
		// typed counter without the _total suffix, are its only restart
		// evidence.
		{Family: "tgi_request_count", Kind: Monotonic, Source: "text-generation-inference router/src/server.rs: metrics::counter!(\"tgi_request_count\").increment(1) (increment_counter! in older builds); metric catalog 5"},
		{Family: "tgi_request_success", Kind: Monotonic, Source: "text-generation-inference router/src/server.rs: counter at each successful request; metric catalog 5"},
		{Family: "tgi_request_failure", Kind: Monotonic, Source: "text-generation-inference router/src/server.rs: counter by err; metric catalog 5"},
		{Family: "tgi_batch_inference_count", Kind: Monotonic, Source: "text-generation-inference backends/v3 queue and batching: counter by method; metric catalog 5"},
		{Family: "tgi_batch_inference_success", Kind: Monotonic, Source: "text-generation-inference backends/v3 batching: counter by method; metric catalog 5"},
	},
	TRTLLM: {
		// One gauge family holds a count and a clock, told apart by label.
		{Family: "nv_trt_llm_general_metrics", Label: `general_type="iteration_counter"`, Kind: Monotonic, Typed: "gauge",
			Source: "tensorrtllm_backend README \"Triton Metrics\" (general_type iteration_counter: iterations since start); metric catalog 6, mistyped"},
		{Family: "nv_trt_llm_general_metrics", Label: `general_type="timestamp"`, Kind: Clock, Typed: "gauge",
			Source: "tensorrtllm_backend README \"Triton Metrics\" (general_type timestamp: Unix seconds of the last iteration); metric catalog 6"},
	},
}

// vllmDeclarations are vLLM's (V0 and V1 print the same TYPE lines for these).
var vllmDeclarations = []Declaration{
	{Family: "process_start_time_seconds", Kind: Timestamp, Typed: "gauge",
		Source: "prometheus_client ProcessCollector in vLLM's registry (vllm/entrypoints/openai/api_server.py mounts make_asgi_app)"},
	{Family: "vllm:lora_requests_info", Kind: Clock, Typed: "gauge",
		Source: "vllm/v1/metrics/loggers.py and vllm/engine/metrics.py: gauge_lora_info.labels(...).set_to_current_time() at each stats log; metric catalog 1.1, mistyped (a timestamp)"},
	{Family: "vllm:num_preemptions_total", Kind: Monotonic, Source: "vllm/v1/metrics/loggers.py, vllm/engine/metrics.py: counter; metric catalog 1.2"},
	{Family: "vllm:prompt_tokens_total", Kind: Monotonic, Source: "vllm/v1/metrics/loggers.py, vllm/engine/metrics.py: counter at each scheduler step; metric catalog 1.2"},
	{Family: "vllm:generation_tokens_total", Kind: Monotonic, Source: "vllm/v1/metrics/loggers.py, vllm/engine/metrics.py: counter at each scheduler step; metric catalog 1.2"},
	{Family: "vllm:request_success_total", Kind: Monotonic, Source: "vllm/v1/metrics/loggers.py, vllm/engine/metrics.py: counter by finished_reason; metric catalog 1.2"},
}

// DeclaredKind returns what the series of family with labels (canonical,
// name="value" pairs joined by commas) of engine id really is; ok is false
// when nothing is declared (then its TYPE line says).
func DeclaredKind(id, family, labels string) (d Declaration, ok bool) {
	for _, d := range declarations[id] {
		if d.Family == family && (d.Label == "" || HasPair(labels, d.Label)) {
			return d, true
		}
	}
	return Declaration{}, false
}

// CountsUp reports whether some engine declares the series of family with
// labels a monotonic counter although it is typed gauge: it is registered
// as a counter before the engine is known.
func CountsUp(family, labels string) bool {
	for _, ds := range declarations {
		for _, d := range ds {
			if d.Kind == Monotonic && d.Typed == "gauge" && d.Family == family && (d.Label == "" || HasPair(labels, d.Label)) {
				return true
			}
		}
	}
	return false
}

// HasPair reports whether labels ({a="x",b="y"} or without the braces)
// holds the pair p as a whole element.
func HasPair(labels, p string) bool {
	for i := 0; ; {
		j := strings.Index(labels[i:], p)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(p)
		if (j == 0 || labels[j-1] == ',' || labels[j-1] == '{') && (end == len(labels) || labels[end] == ',' || labels[end] == '}') {
			return true
		}
		i = j + 1
	}
}

// Declarations returns engine id's declarations.
func Declarations(id string) []Declaration { return append([]Declaration(nil), declarations[id]...) }

// processStartHeaders are the response headers engines send by themselves
// with their process start on every /metrics answer.
var processStartHeaders = map[string]string{
	// llama.cpp server.cpp handle_metrics:
	// res.set_header("Process-Start-Time-Unix", std::to_string(res_metrics->t_start)),
	// t_start in ggml_time_us() (not Unix time): the same for every answer
	// of one process, another for the next (b4748 and current code).
	LlamaCpp: "Process-Start-Time-Unix",
}

// ProcessStartHeader returns the response header engine id sends with its
// process start on every /metrics answer, "" when it sends none.
func ProcessStartHeader(id string) string { return processStartHeaders[id] }

// ProcessStartHeaders returns the headers to read a process start from for
// engine id: its own, or every engine's while it is Generic (not known
// yet, or unknown: the name is specific enough to be evidence).
func ProcessStartHeaders(id string) []string {
	if id != Generic && id != "" {
		if h := processStartHeaders[id]; h != "" {
			return []string{h}
		}
		return nil
	}
	out := make([]string, 0, len(processStartHeaders))
	for _, h := range processStartHeaders {
		out = append(out, h)
	}
	return out
}
