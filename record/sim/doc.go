// Package sim is a simulated LLM inference engine for tests, demos and
// benchmarks.
//
// A [Scenario] describes one or more engines, each exporting Prometheus
// /metrics in the text format of a real engine: vLLM V1 ([FormatVLLM]) or the
// llama.cpp server ([FormatLlamaCpp]). Each engine follows a timeline of load
// phases (token rates, queue, KV usage) and events (a restart that resets the
// counters, a second label set joining, hung, slow, stale or failing HTTP
// responses). Scenarios are written in TOML; see [ParseScenario] and
// [DefaultScenarioTOML] for the format.
//
// Three ways to use it:
//
//   - [Engine.Render] renders the exposition body for an offset from the
//     scenario start, deterministically, and [Engine.Truth] gives the true
//     counter values and rates behind that body.
//   - [Serve] serves every engine on its own loopback listener, on the real
//     wall clock, and keeps a truth log of every request it answered. Each
//     engine also serves real requests on OpenAI-compatible completion
//     endpoints: they join its batch (see [ServeSpec]) and its /metrics
//     count them on top of the scenario's phases.
//   - [Generate] produces a long recording (for example 24 hours of 8 engines
//     scraped every 2 s, see [LongScenario]) without sleeping.
//
// # How counters advance
//
// The timeline of an engine is cut into pieces at every phase start, restart
// and label join. Within a piece of duration dt run under a phase, a counter
// with rate r grows by floor(r*dt); pieces add up. So with a single phase of
// decode_tps = 100 starting at 0, generation_tokens_total is exactly 1000 at
// 10 s. Requests finish every output_len generated tokens of a piece, so the
// finished-request count of a piece is floor(generated/output_len); aborts and
// length-capped finishes are split off by floor as well. All other series
// (histogram counts, sums and buckets, llama.cpp's per-request seconds) are
// derived from these integers, so every invariant a real engine keeps holds
// exactly and no counter ever decreases except at a restart:
//
//   - histogram _count equals the +Inf bucket, and buckets never decrease;
//   - vLLM time_per_output_token_seconds_count = generation_tokens - requests;
//   - vLLM iteration_tokens_total_sum = prompt_tokens + generation_tokens;
//   - vLLM prompt_tokens_total = prefix_cache_queries_total;
//   - llama.cpp tokens_predicted_total moves only when requests finish, and
//     prompt_tokens_total excludes the prefix-cached tokens.
//
// # Formats
//
// vLLM bodies follow prometheus_client: HELP and TYPE lines, counters with a
// _total suffix and a separate _created gauge family beside each counter and
// histogram, python_ and process_ series, sorted labels (engine, model_name,
// ...) and Python float formatting ("246.0", "1.7710424574207425e+09"). The
// histogram bucket bounds are those of vLLM V1. llama.cpp bodies have no
// labels, print integer counters as integers and other values with six
// significant digits.
package sim
