// Package client reads what real load generators wrote about the requests
// they sent, into one model: per request its start, first token, end
// (Unix seconds), tokens in and out, status, redacted error text and phase;
// per file the tool, version, schema, time base, and what was left out and
// why. It also cuts the client's own phases (its phase field, explicit
// stages, else steady concurrency levels) and measures each from the
// client's records, every figure with the records, bounds and formula it
// came from.
//
// Formats (docs/client-format.md says what is read from each):
//
//   - AIPerf profile_export.jsonl (the early schema with
//     metadata.timestamp_ns and credit_phase, and the 0.3 schema with
//     request_start_ns/request_end_ns and benchmark_phase) and its
//     gpu_telemetry_export.jsonl (power samples, energy over bounds);
//   - GuideLLM benchmarks.json or .yaml (the old report schema with
//     requests.successful/errored/incomplete, and report version 2);
//   - a generic CSV or JSONL whose header (or Options.Columns) names the
//     columns and units;
//   - summary-only formats (inference-perf stage lifecycle metrics, llmperf
//     individual responses and summary, SGLang bench_serving JSONL): read as
//     run-level summaries placed in time by run bounds alone, and the
//     metadata says so;
//   - inference-perf per-request lifecycle metrics, whose times are a
//     monotonic clock: read only with an Anchor the caller gives.
//
// Nothing is silently dropped: a bad line is an error naming the file and
// line (and field); a record the reader skips is counted with its reason.
// The package reads only the file it is given and writes nothing; it never
// imports render.
package client
