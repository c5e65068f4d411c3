package findings

import (
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Run is what the findings are computed from: every target's rows and
// polls, replayed once by package analyze.
type Run struct {
	Targets []*Target
	// Gates are the estimator's settings of the published cells, defaults
	// filled in (rate.Config.WithDefaults).
	Gates rate.Config
	// Spans are the counterfactual spans, seconds, in the order of
	// Poll.Spans.
	Spans []float64
	// Caps are the plausibility caps of the rate cells.
	Caps []Cap
	// KeepPolls keeps the fleet's per-poll totals (Fleet.Polls).
	KeepPolls bool
}

// Cap is a plausibility cap: no published value of Cell on a target of
// Engine ("" for every engine) should exceed Max.
type Cap struct {
	Engine string  `json:"engine,omitempty"`
	Cell   string  `json:"cell"`
	Max    float64 `json:"max"`
}

// Target is one recorded target.
type Target struct {
	Name   string
	Engine string // an engine id of package engine
	// Interval is the target's cadence in seconds; 0 when the recording
	// does not say (the median spacing of its ticks is used).
	Interval float64
	// DecodeSpan is the span of its published decode cell, seconds: the
	// interval where the engine counts decode tokens on every step (spans
	// by counter kind), else the configured span; 0 means Run.Gates.Span.
	DecodeSpan float64
	// Version is the engine's version as it reported it when recording
	// (vLLM /version, llama.cpp /props build_info), and VersionSource the
	// endpoint it came from; both "" when unknown.
	Version, VersionSource string
	// Model is the served model (from the recorded /v1/models, /props or
	// a model_name label); "" when unknown.
	Model string
	// Slots is llama.cpp's slot count (--parallel) from the recorded
	// /props total_slots or the length of /slots, SlotsSource which; 0
	// when unknown.
	Slots       int
	SlotsSource string
	// Rows are the target's /metrics attempts, ok or not, in tick order.
	Rows []Row
	// Polls are its ok rows, replayed.
	Polls PollList
	// Histograms maps each histogram family to the bucket bounds (le) its
	// series carried.
	Histograms map[string][]float64
	// Cells counts, per canonical cell, the polls that had a value and
	// those where the series was absent.
	Cells map[string]CellCount
	// Unknown are the families the engine's reader does not know.
	Unknown []string
	// Families are every family the target published.
	Families []string
	// Counters are the watched counters (see Watched), by series name.
	Counters map[string]*Counter
	// Sources are the sources of the fact cells (kv_cache_capacity_tokens,
	// prefix_caching_enabled) as last published.
	Sources map[string]string
	// Info holds the label sets of the watched info series
	// (vllm:cache_config_info), by series name, as last read.
	Info map[string][]map[string]string
	// Presence are the intervals the recorder had the target in its
	// target set, when discovery (file_sd, DNS) decided it; empty when it
	// was a target for the whole of every session.
	Presence []Presence
}

// Presence is one interval a discovered target was scraped.
type Presence struct {
	// Join and Leave in Unix seconds; Leave 0 while it was present when
	// its session ended.
	Join, Leave float64
	// AtStart is set when it was a target from its session's start: no
	// join happened.
	AtStart bool
	// URL is the address scraped then, when another than the target's
	// first (redacted); "" when the same.
	URL string
}

// CellCount is what one canonical cell was over a target's polls.
type CellCount struct {
	Valued int // polls with a value
	Absent int // polls where its series was not in the body
	Other  int // polls null for another reason (no baseline, a gate, ...)
}

// Row is one /metrics attempt.
type Row struct {
	Run     string
	Seq     int64
	Outcome string // ok, parse_error, http_error, error, missed
	// Times in Unix seconds; 0 when the moment did not happen (a missed
	// tick was never sent) or the recording lacks it.
	Scheduled, Start, FirstByte, End float64
	Error                            string // the recorder's error text, "" when none
}

// Rate cells, in the order of Poll.Rates: the canonical cells measured as
// Δcounter/Δt.
var RateCells = [NRates]string{
	engine.DecodeTokensPerSecond, engine.PromptTokensPerSecond, engine.PromptTokensComputedPerSecond,
	engine.PreemptionsPerSecond, engine.RequestsFinishedPerSecond,
}

// TotalCells are the lifetime counters a naive Δ/Δt of each rate cell
// would difference ("" where there is none), in the order of Poll.Totals.
var TotalCells = [NRates]string{
	engine.GenerationTokensTotal, engine.PromptTokensTotal, "", engine.PreemptionsTotal, engine.RequestsFinishedTotal,
}

// Indexes of RateCells.
const (
	Decode = iota
	Prompt
	PromptComputed
	Preemptions
	RequestsFinished
	NRates
)

// Value is a published cell reduced to what the findings use.
type Value struct {
	V      rate.Num
	Window rate.Num
	Reason string // why V is null
}

// Poll is one ok /metrics row, replayed.
type Poll struct {
	T     float64 // the first byte: the samples' stamp
	Start float64 // the request went out; 0 unknown
	Row   int     // its row in Target.Rows
	// Rates are the published rate cells (RateCells).
	Rates [NRates]Value
	// DecodeNotes are the decode cell's label-set notes ("no_baseline
	// {...}": a set joined; "absent {...}": a set left).
	DecodeNotes []string
	// Interval is the decode rate over the interval since the previous
	// poll, every gate off but reset: the per-interval series the load
	// edges are found on. A label set without a baseline adds 0.
	Interval Value
	// Spans are the decode cell as each counterfactual span publishes it
	// (Run.Spans).
	Spans []rate.Num
	// Totals are the lifetime counters of TotalCells as read.
	Totals [NRates]rate.Num
	// Gauges and facts as read.
	Running, Waiting, KV, TokensTotal rate.Num
	Capacity, Deferred                rate.Num // waiting by reason; null when not published
	KVCapacity, PrefixCaching         rate.Num
	ProcessStart                      rate.Num // process_start_time_seconds
	// Restart is the evidence that the target restarted since its
	// previous poll ("" none): a counter of it that fell, a new process
	// start, an engine's "loading" answer in between. Every window
	// across it was refused (reason reset).
	Restart string
	// Steps is the target's engine-step counter as read, summed over its
	// label sets (see StepCounters); null when it publishes none.
	Steps rate.Num
	// Energy is the joules the target's energy counter rose since its
	// first poll (resets counted from 0), Power its power gauges' watts
	// summed; null when it publishes none (see EnergySources).
	Energy, Power rate.Num
}

// StepCounters count engine steps: they move on every step while the
// engine is busy, whatever requests finish. On an engine whose decode
// counter moves only when a request completes they tell busy from idle.
var StepCounters = map[string]bool{
	"llamacpp:n_decode_total": true, // one per llama_decode() call, prompt batches included
}
