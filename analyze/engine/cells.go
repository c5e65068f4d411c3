package engine

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Canonical cell names. Every reader of a known engine publishes every one of
// them on every poll, in the order of [Canonical]; a quantity the engine does
// not export is null with reason [ReasonNotExported].
const (
	// Throughput over the window: Δcounter/Δt, summed over label sets.
	DecodeTokensPerSecond         = "decode_tokens_per_second"
	PromptTokensPerSecond         = "prompt_tokens_per_second"          // prompt tokens as the engine counts them (see cell notes)
	PromptTokensComputedPerSecond = "prompt_tokens_computed_per_second" // prompt tokens actually evaluated, cache hits excluded
	PreemptionsPerSecond          = "preemptions_per_second"
	RequestsFinishedPerSecond     = "requests_finished_per_second"

	// State gauges, as read.
	RequestsRunning   = "requests_running"
	RequestsWaiting   = "requests_waiting"
	WaitingByReason   = "waiting_by_reason"    // value: the sum; by: reason → requests
	KVCacheUsageRatio = "kv_cache_usage_ratio" // 0..1, with a severity

	// Ratios of deltas over the window, and the same over the counters' life.
	PrefixCacheHitRatio         = "prefix_cache_hit_ratio"
	PrefixCacheHitRatioLifetime = "prefix_cache_hit_ratio_lifetime"
	SpecAcceptRatio             = "spec_accept_ratio"
	SpecAcceptRatioLifetime     = "spec_accept_ratio_lifetime"

	// Per-request decode speed: 1 / mean time per output token.
	PerRequestDecodeTokensPerSecond         = "per_request_decode_tokens_per_second"
	PerRequestDecodeTokensPerSecondLifetime = "per_request_decode_tokens_per_second_lifetime"

	// Histogram bases: each gives five cells, base + "__count", "__mean",
	// "__p50", "__p95" and "__p99", over the window (see [HistCells]).
	TTFT  = "time_to_first_token_seconds"
	TPOT  = "time_per_output_token_seconds"
	ITL   = "inter_token_latency_seconds"
	E2E   = "e2e_request_latency_seconds"
	Queue = "request_queue_time_seconds"

	// Lifetime counters, as read (summed over label sets).
	TokensTotal             = "tokens_total" // prompt (cache hits included) + generated
	PromptTokensTotal       = "prompt_tokens_total"
	PromptTokensCachedTotal = "prompt_tokens_cached_total"
	GenerationTokensTotal   = "generation_tokens_total"
	RequestsFinishedTotal   = "requests_finished_total"
	PreemptionsTotal        = "preemptions_total"

	// The engine's own throughput and ratio gauges: stale, windowed or reset
	// by scraping, so never the headline.
	DecodeTokensPerSecondNative = "decode_tokens_per_second_native"
	PromptTokensPerSecondNative = "prompt_tokens_per_second_native"
	PrefixCacheHitRatioNative   = "prefix_cache_hit_ratio_native"
	SpecAcceptRatioNative       = "spec_accept_ratio_native"

	// Configuration facts an engine states in its series.
	KVCacheCapacityTokens = "kv_cache_capacity_tokens"
	PrefixCachingEnabled  = "prefix_caching_enabled" // 1 or 0
	MaxRunningRequests    = "max_running_requests"
)

// Histogram cell suffixes, in output order.
const (
	SuffixCount = "__count"
	SuffixMean  = "__mean"
	SuffixP50   = "__p50"
	SuffixP95   = "__p95"
	SuffixP99   = "__p99"
)

// Histograms lists the canonical histogram bases in output order.
var Histograms = []string{TTFT, TPOT, ITL, E2E, Queue}

// HistCells returns the five cell names of histogram base.
func HistCells(base string) [5]string {
	return [5]string{base + SuffixCount, base + SuffixMean, base + SuffixP50, base + SuffixP95, base + SuffixP99}
}

// Canonical lists every canonical cell name in output order.
var Canonical = func() []string {
	out := []string{
		DecodeTokensPerSecond, PromptTokensPerSecond, PromptTokensComputedPerSecond,
		RequestsRunning, RequestsWaiting, WaitingByReason, KVCacheUsageRatio,
		PreemptionsPerSecond, RequestsFinishedPerSecond,
		PrefixCacheHitRatio, PrefixCacheHitRatioLifetime, SpecAcceptRatio, SpecAcceptRatioLifetime,
		PerRequestDecodeTokensPerSecond, PerRequestDecodeTokensPerSecondLifetime,
	}
	for _, h := range Histograms {
		hc := HistCells(h)
		out = append(out, hc[:]...)
	}
	return append(out,
		TokensTotal, PromptTokensTotal, PromptTokensCachedTotal, GenerationTokensTotal,
		RequestsFinishedTotal, PreemptionsTotal,
		DecodeTokensPerSecondNative, PromptTokensPerSecondNative, PrefixCacheHitRatioNative, SpecAcceptRatioNative,
		KVCacheCapacityTokens, PrefixCachingEnabled, MaxRunningRequests,
	)
}()

// Headline cells: what a summary shows first.
var Headline = []string{
	DecodeTokensPerSecond, PromptTokensPerSecond, PromptTokensComputedPerSecond,
	RequestsRunning, RequestsWaiting, KVCacheUsageRatio,
	TTFT + SuffixP50, TPOT + SuffixMean, PerRequestDecodeTokensPerSecond, PrefixCacheHitRatio,
}

// Reasons a cell is null, besides those of package rate.
const (
	// ReasonNotExported: the engine's reader maps no series to this cell; the
	// engine does not publish the quantity (or llmrec does not know how).
	ReasonNotExported = "not_exported"
	// ReasonDisabled: the engine publishes the series with a value that says
	// the feature is off (vLLM V0's −1 prefix-cache hit rate).
	ReasonDisabled = "disabled"
)

// Cell is one published value with its provenance: a [rate.Cell] (value,
// source, derived, window, reason, severity, notes), plus a breakdown for
// cells that have one.
type Cell struct {
	rate.Cell
	// By splits the value by a label (waiting_by_reason: reason → requests).
	By map[string]float64 `json:"by,omitempty"`
}

// Named is a cell with its name.
type Named struct {
	Name string
	Cell Cell
}

// Cells is one poll's cells in output order. Its JSON form is an object
// {name: cell}, keys in that order.
type Cells []Named

// Get returns the cell called name.
func (cs Cells) Get(name string) (Cell, bool) {
	for i := range cs {
		if cs[i].Name == name {
			return cs[i].Cell, true
		}
	}
	return Cell{}, false
}

// MarshalJSON writes the cells as one object, in order.
func (cs Cells) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range cs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(cs[i].Name) // a string always encodes
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(&cs[i].Cell)
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", cs[i].Name, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object of cells, keeping its key order.
func (cs *Cells) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*cs = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("cells: want an object, got %v", tok)
	}
	out := Cells{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		var c Cell
		if err := dec.Decode(&c); err != nil {
			return fmt.Errorf("cell %s: %w", name, err)
		}
		out = append(out, Named{Name: name, Cell: c})
	}
	*cs = out
	return nil
}
