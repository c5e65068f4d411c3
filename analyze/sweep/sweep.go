// Package sweep reads a run's load levels as a curve: each level (a named
// phase, else a steady phase found at the load edges) a point of offered
// load, throughput and latency from the engine's own counters; the
// evidence of saturation at each level and the knee where it begins; the
// attainment of service-level objectives at each level and the boundary
// between the highest level that meets them and the first that does not.
//
// It is plain data and statistics: package analyze fills the points from
// the phases' figures, and nothing here formats or draws.
package sweep

import (
	"github.com/llmrec/llmrec/analyze/rate"
)

// Sweep is the run's levels as curves, per target and for the fleet.
type Sweep struct {
	// Basis says what a level is: "named" (a --phases file, marks, the
	// client's stages) or "found" (each target's steady phases).
	Basis string `json:"basis"`
	// SLOs are the objectives each level is judged by; empty when none
	// were given.
	SLOs []SLO `json:"slos"`
	// GPUs and GPUHourUSD are what a level's per-GPU throughput and cost
	// are computed with; null when not given.
	GPUs       rate.Num `json:"gpus"`
	GPUHourUSD rate.Num `json:"gpu_hour_usd"`
	// Curves are one per target (by name), then the fleet's (target "")
	// when levels are named and there are two targets or more.
	Curves []Curve `json:"curves"`
	// Reason says why there is no curve (no level measured).
	Reason string `json:"reason,omitempty"`
}

// Curve is one target's (or the fleet's) levels in order of offered load.
type Curve struct {
	Target string  `json:"target"` // "" for the fleet
	Points []Point `json:"points"`
	// Knee is where saturation begins.
	Knee Knee `json:"knee"`
	// Boundaries are one per SLO, then one for all of them at once
	// (Name "all"); empty without SLOs.
	Boundaries []Boundary `json:"boundaries"`
	// Slots is the engine's request slot count (llama.cpp's --parallel,
	// from the recorded /slots or /props), SlotsSource where it was read;
	// null where the engine states none.
	Slots       rate.Num `json:"slots"`
	SlotsSource string   `json:"slots_source,omitempty"`
}

// Value is one number of a point with its provenance; null with the
// reason why.
type Value struct {
	Value  rate.Num    `json:"value"`
	Source string      `json:"source"`
	Reason string      `json:"reason,omitempty"`
	Bucket rate.Bucket `json:"bucket,omitzero"`
	// Mean is set when the histogram's exact mean (Δsum/Δcount) stands in
	// for a quantile its buckets cannot resolve, with why.
	Mean string `json:"mean,omitempty"`
}

// Point is one level.
type Point struct {
	Phase  string  `json:"phase"`
	Source string  `json:"source"` // file, mark, client, found
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
	// Status is the answer's status of the level (ok, degraded, withheld).
	Status string `json:"status"`
	// Offered is the load offered: the client's mean requests in flight
	// where a client record names the level, else the engine's mean
	// running + waiting. Running is the engine's mean requests in the
	// batch: the load it achieved.
	Offered Value `json:"offered"`
	Running Value `json:"running"`
	// Engine is the engine's mean running + waiting: what it saw of the
	// load (the offered load itself when no client record names the
	// level).
	Engine Value `json:"engine_concurrency"`
	// Decode and Prompt are tokens/s from the engine's counters across
	// the level (the answer's figures).
	Decode Value `json:"decode_tokens_per_second"`
	Prompt Value `json:"prompt_tokens_per_second"`
	// The latencies, seconds: histogram quantiles of the bucket Δs across
	// the level, or the exact mean where the quantile cannot be resolved
	// (Value.Mean says so).
	TTFTp50 Value `json:"ttft_p50"`
	TTFTp99 Value `json:"ttft_p99"`
	ITLp50  Value `json:"itl_p50"`
	ITLp99  Value `json:"itl_p99"`
	E2Ep50  Value `json:"e2e_p50"`
	E2Ep99  Value `json:"e2e_p99"`
	// Waiting is the mean waiting gauge, WaitingMax its largest value, KV
	// the largest KV-cache usage (a ratio), Preemptions per second,
	// CapacityWaiting the mean requests waiting on capacity (where the
	// engine states why requests wait).
	Waiting         Value `json:"waiting"`
	WaitingMax      Value `json:"waiting_max"`
	KV              Value `json:"kv_usage_max"`
	Preemptions     Value `json:"preemptions_per_second"`
	CapacityWaiting Value `json:"capacity_waiting"`
	// WaitingSlope is the waiting gauge's trend inside the level; null
	// with fewer than MinSlopePoints polls.
	WaitingSlope *Slope `json:"waiting_slope"`
	// PerUser is the decode tokens/s one request sees; PerGPU the decode
	// tokens/s per GPU (with GPUs); CostPerMTokens the US dollars per
	// million generated tokens (with GPUHourUSD and GPUs).
	PerUser        Value `json:"tokens_per_second_per_user"`
	PerGPU         Value `json:"tokens_per_second_per_gpu"`
	CostPerMTokens Value `json:"usd_per_million_output_tokens"`
	// Pareto is true when no other level of the curve gives more decode
	// tokens/s per GPU and per user at once.
	Pareto bool `json:"pareto"`
	// Saturation is the evidence of saturation at the level; Saturated
	// is true when there is any, but a decode rate below the offered
	// load's rise only when flat (Evidence.Flat).
	Saturation []Evidence `json:"saturation"`
	Saturated  bool       `json:"saturated"`
	// SLOs is the attainment of each SLO at the level.
	SLOs []Attainment `json:"slos"`
	// Goodput is the client's requests that met every SLO, when a client
	// record names the level and SLOs are given; null otherwise.
	Goodput *Goodput `json:"goodput"`
}

// Kinds of saturation evidence.
const (
	// EvWaitingRising: the waiting gauge rose inside the level (a slope
	// test: t ≥ SlopeT and a rise of a request or more).
	EvWaitingRising = "waiting_rising"
	// EvQueued: requests waited throughout the level (mean waiting ≥ 1)
	// and more than at the level below.
	EvQueued = "queued"
	// EvKVFull: the KV cache was KVFull or more used.
	EvKVFull = "kv_full"
	// EvPreemptions: the engine preempted requests, more often than at
	// the level below.
	EvPreemptions = "preemptions_rising"
	// EvBelowOffered: the decode rate rose by less than ScaleShare of the
	// load's rise from the level below (achieved below offered): an ideal
	// batch still gains about half (each step longer by its requests).
	EvBelowOffered = "achieved_below_offered"
	// EvCapacity: the engine says requests waited on capacity.
	EvCapacity = "capacity_queueing"
	// EvHiddenQueue: the client had more requests in flight than the
	// engine held running and waiting (under HiddenShare of them): the
	// rest waited before the engine, where no gauge of its counts them.
	EvHiddenQueue = "hidden_queue"
)

// Thresholds of the evidence.
const (
	SlopeT      = 3.0
	KVFull      = 0.95
	ScaleShare  = 0.2
	QueuedFloor = 1.0
	HiddenShare = 0.8
	FlatShare   = 0.05
	// SlotsFull is the share of the engine's slots the mean running must
	// reach for a level to have held them all.
	SlotsFull = 0.9
)

// Evidence is one sign of saturation at a level, in words with its
// numbers.
type Evidence struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Flat is set on achieved_below_offered when the decode rate rose by
	// under FlatShare of the load's rise: alone, only a flat rate is
	// saturation.
	Flat bool `json:"flat,omitempty"`
}

// Knee is where saturation begins along the curve.
type Knee struct {
	// Last is the highest level before the first saturated one (the
	// engine's capacity as measured); First the first saturated level.
	// Empty when there is none.
	Last  string `json:"last"`
	First string `json:"first"`
	// LastOffered and FirstOffered are their offered loads.
	LastOffered  rate.Num `json:"last_offered"`
	FirstOffered rate.Num `json:"first_offered"`
	// Capacity is the highest decode tokens/s of the curve, at level
	// CapacityAt.
	Capacity   rate.Num `json:"capacity_decode_tokens_per_second"`
	CapacityAt string   `json:"capacity_at"`
	// Evidence is the first saturated level's.
	Evidence []Evidence `json:"evidence"`
	// AtSlots are the levels, in curve order, at which the mean running
	// held the engine's slots (at least SlotsFull of Curve.Slots).
	AtSlots []string `json:"at_slots,omitempty"`
	// Fact is the engine's capacity-queueing fact when it published one
	// (the ceiling seen from the server).
	Fact string `json:"fact,omitempty"`
	// Text says where the knee is, or why none is named.
	Text string `json:"text"`
}

// Verdicts of an SLO at a level.
const (
	Pass       = "pass"
	Fail       = "fail"
	Unresolved = "unresolved" // the threshold's bucket holds the quantile: it may pass or fail
	Unknown    = "unknown"    // nothing measured
)

// Attainment is one SLO at one level.
type Attainment struct {
	SLO string `json:"slo"`
	// Share is the share of observations at or under the threshold, from
	// the histogram's bucket Δs across the level: exact (Lo = Hi) when the
	// threshold is a bucket bound, else bracketed by the bounds around it.
	Lo     rate.Num `json:"lo"`
	Hi     rate.Num `json:"hi"`
	Exact  bool     `json:"exact"`
	Source string   `json:"source"`
	Reason string   `json:"reason,omitempty"`
	// Verdict from the share: pass when Lo ≥ the quantile, fail when Hi
	// is under it, else unresolved.
	Verdict string `json:"verdict"`
	// Margin is (threshold − the quantile's estimate) ÷ threshold: what
	// the boundary interpolates; null without an estimate.
	Margin rate.Num `json:"margin"`
	// Client is the share of the client's requests at or under the
	// threshold (its own latencies; ITL per request, a mean of its
	// gaps); null without a client record of the level.
	Client rate.Num `json:"client"`
}

// Goodput is the client's requests that met every SLO at once.
type Goodput struct {
	Requests          int      `json:"requests"`
	Good              int      `json:"good"`
	RequestsPerSecond rate.Num `json:"requests_per_second"`
	TokensPerSecond   rate.Num `json:"output_tokens_per_second"`
	Source            string   `json:"source"`
}

// Boundary is where an SLO stops being met along the curve.
type Boundary struct {
	SLO string `json:"slo"` // an SLO's name, or "all"
	// Pass is the highest level that passes below the first that fails
	// (Fail); empty when none does or none fails.
	Pass        string   `json:"pass"`
	Fail        string   `json:"fail"`
	PassOffered rate.Num `json:"pass_offered"`
	FailOffered rate.Num `json:"fail_offered"`
	// At is the offered load where the fitted margin crosses 0 (isotonic
	// regression of the margins, then a monotone PCHIP through them);
	// null when there is no crossing or no margin to fit.
	At rate.Num `json:"at"`
	// Shape is "smooth" or "cliff" (the margin falls across the boundary
	// at CliffFactor times the steepest rate below it or more), with How.
	Shape string `json:"shape,omitempty"`
	How   string `json:"how"`
	Text  string `json:"text"`
}

// CliffFactor is how much steeper than anywhere below the margin must
// fall across a boundary for it to be a cliff.
const CliffFactor = 3.0
