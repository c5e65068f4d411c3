package sim

import (
	"strconv"
	"strings"
	"time"
)

// llamaBuild is how a llama.cpp build's server differs from the mainline
// page of buildLlamaCpp, as its real answers show. The zero value is the
// mainline.
type llamaBuild struct {
	// name is the build ("b4748").
	name string
	// page builds the build's /metrics template.
	page func(e *Engine) template
	// promptAtDone: prompt_tokens_total (and prompt_seconds_total) move
	// once per request, when its prompt is done, by the request's prompt
	// (server.cpp metrics.on_prompt_eval). tokens_predicted_total moves at
	// completion in every build (on_prediction).
	promptAtDone bool
	// startHeader names the response header of /metrics answers that
	// carries the process's metrics start as ggml_time_us(): monotonic
	// microseconds since the host booted, not Unix time. Equal for every
	// answer of one process, different for the next.
	startHeader string
}

// llamaBuildOf is the build an engine spec's version names: "b4748-…"
// (its /props build_info) gives b4748's page; any other version the
// mainline's.
func llamaBuildOf(spec EngineSpec) llamaBuild {
	if spec.Format != FormatLlamaCpp {
		return llamaBuild{}
	}
	if b, ok := llamaBuilds[strings.SplitN(spec.Version, "-", 2)[0]]; ok {
		return b
	}
	return llamaBuild{}
}

// llamaBuilds are the builds whose pages were read from a real server.
var llamaBuilds = map[string]llamaBuild{
	// b4748 (c392e5094, 2025-02-20), as recorded in
	// real-runs/llamacpp-b4748: n_busy_slots_per_decode typed counter
	// though it is the lifetime average busy slots per llama_decode()
	// (n_busy_slots_total / n_decode_total), so it falls when fewer slots
	// are busy per decode; the KV gauges kv_cache_usage_ratio and
	// kv_cache_tokens; no n_tokens_max; the Process-Start-Time-Unix header.
	"b4748": {name: "b4748", page: (*Engine).buildLlamaCppB4748, promptAtDone: true, startHeader: "Process-Start-Time-Unix"},
}

// buildLlamaCppB4748 builds the template of a b4748 server's /metrics:
// its families, types, help texts and order, as the real page has them.
func (e *Engine) buildLlamaCppB4748() template {
	b := &tmplBuilder{}
	m := b.llamaFamily
	m("prompt_tokens_total", "counter", "Number of prompt tokens processed.", fmtInt, xEvalPrompt)
	m("prompt_seconds_total", "counter", "Prompt process time", fmtG6, cPromptSec)
	m("tokens_predicted_total", "counter", "Number of generation tokens processed.", fmtInt, cPredicted)
	m("tokens_predicted_seconds_total", "counter", "Predict process time", fmtG6, cGenSec)
	m("n_decode_total", "counter", "Total number of llama_decode() calls", fmtInt, cSteps)
	m("n_busy_slots_per_decode", "counter", "Average number of busy slots per llama_decode() call", fmtG6, xBusy)
	m("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.", fmtG6, xPromptTPS)
	m("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.", fmtG6, xPredTPS)
	m("kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 means 100 percent usage.", fmtG6, xKV)
	m("kv_cache_tokens", "gauge", "KV-cache tokens.", fmtInt, xKVTok)
	m("requests_processing", "gauge", "Number of requests processing.", fmtInt, xRunning)
	m("requests_deferred", "gauge", "Number of requests deferred.", fmtInt, xWaiting)
	return b.t
}

// uptimeAtStart is how long the simulated host has been up at offset 0:
// the base of a build's ggml_time_us() process-start header.
const uptimeAtStart = 31836 * time.Second

// startHeader is the process-start response header of an answer on path
// at offset off, "" when the engine sends none: the build's own (on
// /metrics only), else the scenario's process_start_header (Unix seconds,
// on every answer).
func (e *Engine) startHeader(off time.Duration, path string) (name, value string) {
	if h := e.build.startHeader; h != "" {
		if path != "/metrics" {
			return "", ""
		}
		since := e.ProcessStart(off) - (e.anchorSec - uptimeAtStart.Seconds())
		return h, strconv.FormatInt(int64(since*1e6), 10)
	}
	if h := e.spec.ProcessStartHeader; h != "" {
		return h, strconv.FormatFloat(e.ProcessStart(off), 'f', 2, 64)
	}
	return "", ""
}

// llamaFamily adds an unlabelled llama.cpp family of one sample: its HELP
// and TYPE lines and the value of acc index idx.
func (b *tmplBuilder) llamaFamily(name, typ, help string, kind fmtKind, idx int) {
	b.text("# HELP llamacpp:", name, " ", help, "\n# TYPE llamacpp:", name, " ", typ, "\nllamacpp:", name, " ")
	b.value(kind, 0, idx, 0)
	b.text("\n")
}
