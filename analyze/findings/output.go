package findings

import (
	"encoding/json"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Findings are the run's story, plain data meant for JSON (the top-level
// keys of the analysis document). Slices are never nil.
type Findings struct {
	// Incidents are where the measurement could not be trusted and why,
	// in time order.
	Incidents []Incident `json:"incidents"`
	// Edges are the load starts and ends found on each target's decode
	// counter, with how many polls the published numbers took to catch
	// up, under the published span and each counterfactual one.
	Edges []Edge `json:"edges"`
	// Settle summarises the edges per span, the published one first.
	Settle []Settle `json:"settle"`
	// Rollups are the per-minute max and mean of every rate cell, with
	// the plausibility caps.
	Rollups []Rollup `json:"rollups"`
	// Fleet totals the engine targets per poll.
	Fleet Fleet `json:"fleet"`
	// Seams are where adding the engines up compares different things.
	Seams []Seam `json:"seams"`
	// Facts are what the engines said about themselves, per target.
	Facts []TargetFacts `json:"facts"`
	// Drift is what each engine's version should publish and did not.
	Drift []TargetDrift `json:"drift"`
	// Energy is joules per generated token over busy windows; absent when
	// no energy or power source was recorded.
	Energy *Energy `json:"energy,omitempty"`
}

// Incident kinds.
const (
	KindGap        = "gap"         // a target's polls more than 1.5 intervals apart
	KindHostStall  = "host_stall"  // every target's polls stalled at once: the recording host
	KindMissedTick = "missed_tick" // ticks skipped because the target's previous scrape still ran
	KindScrapeErr  = "scrape_error"
	KindSlow       = "slow_scrape" // a first byte late enough to blur the sample's stamp
	KindRefused    = "refused"     // windows the gates refused, grouped
	KindRestart    = "restart"
	KindDown       = "target_down"
	KindUp         = "target_up"
	KindLabelJoin  = "label_join"
	KindLabelLeave = "label_leave"
	// KindEngineStall: the engine's progress counter (decode, or its step
	// counter) frozen for at least 2 s and 2 polls while requests ran and
	// scrapes answered: the engine stalled, not the recorder or the scrape.
	KindEngineStall = "engine_stall"
	// KindTargetJoin and KindTargetLeave: discovery (file_sd, DNS) added
	// a target to the recorder's target set, or removed one. A target's
	// time away is no gap, and counts nothing: the fleet names it absent.
	KindTargetJoin  = "target_join"
	KindTargetLeave = "target_leave"
)

// Incident is one place the measurement could not be trusted, and why.
type Incident struct {
	Kind string `json:"kind"`
	// Target is null when the incident concerns every target; Targets
	// lists those involved.
	Target  Name     `json:"target"`
	Targets []string `json:"targets"`
	// T is the moment of a point incident; Start and End bound one with a
	// duration (Unix seconds).
	T     rate.Num `json:"t,omitzero"`
	Start rate.Num `json:"start,omitzero"`
	End   rate.Num `json:"end,omitzero"`
	// Cells are the published cells affected.
	Cells []CellRef `json:"cells"`
	// Gate is the estimator gate that fired (floor, ceiling, stale, jump,
	// reset, order, no_baseline); null when none did.
	Gate Name `json:"gate"`
	// Counterfactual says what a naive Δ/Δt would have printed, and what
	// was published instead; Naive is the naive value quoted.
	Counterfactual string   `json:"counterfactual"`
	Naive          rate.Num `json:"naive,omitzero"`
	// Cause names what happened: for a hole, the rows inside it
	// (scrape_error, missed_tick, recorder_stalled, not_recording, ...).
	Cause string `json:"cause,omitempty"`
	// Rows counts the rows of the incident by outcome, Errors their
	// distinct error texts.
	Rows   map[string]int `json:"rows,omitempty"`
	Errors map[string]int `json:"errors,omitempty"`
	// ProcessStart is the restarted process's start time (restart only),
	// null when the engine does not publish one.
	ProcessStart *rate.Num `json:"process_start,omitempty"`
	// Labels is the label set that joined or left.
	Labels string `json:"labels,omitempty"`
	// Detail is one sentence for a reader.
	Detail string `json:"detail"`
}

// CellRef is a published cell at one poll.
type CellRef struct {
	Target string   `json:"target"`
	T      float64  `json:"t"`
	Cell   string   `json:"cell"`
	Value  rate.Num `json:"value"`
	Window rate.Num `json:"window,omitzero"`
	Reason string   `json:"reason,omitempty"`
}

// Name is a string that is null in JSON when empty.
type Name string

// MarshalJSON writes the string, or null when it is empty.
func (n Name) MarshalJSON() ([]byte, error) {
	if n == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(n))
}

// UnmarshalJSON reads a string or null.
func (n *Name) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*n = ""
	if s != nil {
		*n = Name(*s)
	}
	return nil
}

// Edge kinds.
const (
	EdgeStart = "start" // the decode counter went from flat to growing
	EdgeEnd   = "end"   // from growing to flat
	// EdgeLevel: the decode level changed while busy (a load of 2 clients
	// became 8), by more than LevelLn (see levelEdges).
	EdgeLevel = "level"
)

// Edge is a change of load on one target and how the published numbers
// caught up with it.
type Edge struct {
	Target string `json:"target"`
	Kind   string `json:"kind"`
	// T is the edge's estimated time: inside the poll interval Between,
	// where the interval's partial tokens put it at the adjacent level.
	T       float64    `json:"t"`
	Between [2]float64 `json:"between"`
	// Poll1 is the first poll after the edge.
	Poll1 float64 `json:"poll1"`
	// Level is the new level in tokens per second (0 for an end), From
	// the old one, each the median of the per-interval rates of the
	// regime's first full polls; LevelSource says which.
	Level       rate.Num `json:"level"`
	From        rate.Num `json:"from"`
	LevelSource string   `json:"level_source"`
	// Signal is what the busy state was read from: the decode counter,
	// an engine-step counter (llama.cpp n_decode_total), or the decode
	// counter with the running requests (an engine whose decode counter
	// moves only when requests complete).
	Signal string `json:"signal"`
	// Judged is true when the new regime holds steady for at least 5
	// polls (poll 1 carries the edge, polls 2-5 read the new level);
	// Why says why not.
	Judged bool   `json:"judged"`
	Why    string `json:"why,omitempty"`
	// Under the published span:
	EdgeSpan
	// Counterfactual are the same numbers under each counterfactual span.
	Counterfactual []EdgeSpan `json:"counterfactual"`
	// Held counts polls 1-5 of a start where the jump gate held a rate
	// cell: a load start is what a jump is, so they are noted here rather
	// than as refused incidents.
	Held int `json:"held,omitempty"`
}

// EdgeSpan is how one span's published decode caught up with an edge.
type EdgeSpan struct {
	Span float64 `json:"span"`
	// SettlePoll is the first poll after the edge whose published rate is
	// within |ln(value/level)| ≤ 0.1 of the new level (exactly 0 for an
	// end), counting poll 1 as 1; null when none before the next edge, or
	// when the edge is not judged. SettleAfter is its time after the edge.
	SettlePoll  *int     `json:"settle_poll"`
	SettleAfter rate.Num `json:"settle_after"`
	// LnErrPoll2 is |ln(value/level)| at poll 2 (start edges; null for an
	// end, where the level is 0); ResidualPoll2 is an end's value at poll
	// 2 as a fraction of the old level.
	LnErrPoll2    rate.Num `json:"ln_err_poll2"`
	ResidualPoll2 rate.Num `json:"residual_poll2,omitzero"`
	// Values are the published values of polls 1-5.
	Values []rate.Num `json:"values"`
}

// Settle summarises the judged edges under one span.
type Settle struct {
	// Span is the span, seconds; for the published one, 0 when its edges
	// were published under different spans (by counter kind: each edge's
	// EdgeSpan.Span says which).
	Span      float64 `json:"span"`
	Published bool    `json:"published"` // the span of the published cells
	Edges     int     `json:"edges"`     // edges found
	Judged    int     `json:"judged"`
	Settled   int     `json:"settled"`
	Unsettled int     `json:"unsettled"`
	// ByPoll2 counts judged edges settled by poll 2.
	ByPoll2          int      `json:"settled_by_poll2"`
	MedianSettlePoll rate.Num `json:"median_settle_poll"`
	MaxSettlePoll    rate.Num `json:"max_settle_poll"`
	// MedianLnErrPoll2 is over the judged start edges (Starts of them).
	MedianLnErrPoll2 rate.Num `json:"median_ln_err_poll2"`
	Starts           int      `json:"starts"`
	Text             string   `json:"text"`
}

// Rollup is one rate cell of one target per minute.
type Rollup struct {
	Target string `json:"target"`
	Cell   string `json:"cell"`
	// Cap is the plausibility cap; null when none is configured.
	Cap rate.Num `json:"cap"`
	// Values counts published values, AboveCap those above the cap (it
	// must be 0); Naive counts naive Δ/Δt values (null where the engine
	// has no lifetime counter to difference), NaiveAboveCap those above.
	Values        int      `json:"values"`
	AboveCap      int      `json:"above_cap"`
	Naive         int      `json:"naive"`
	NaiveAboveCap int      `json:"naive_above_cap"`
	Max           rate.Num `json:"max"`
	NaiveMax      rate.Num `json:"naive_max"`
	MinuteMeanMax rate.Num `json:"minute_mean_max"` // the largest per-minute mean: what a 1 m rollup shows
	Minutes       []Minute `json:"minutes"`
}

// Minute is one calendar minute of a rate cell.
type Minute struct {
	T        float64  `json:"t"` // the minute's start, Unix seconds
	N        int      `json:"n"` // published values
	Max      rate.Num `json:"max"`
	Mean     rate.Num `json:"mean"`
	NaiveMax rate.Num `json:"naive_max"`
}

// Fleet is the engine targets added up per poll.
type Fleet struct {
	// Targets are the engine targets totalled; Other are the targets left
	// out (no engine recognised: energy exporters and the like).
	Targets []string     `json:"targets"`
	Other   []string     `json:"other"`
	Summary FleetSummary `json:"summary"`
	// Polls are the totals at every tick (empty when polls are not kept).
	Polls []FleetPoint `json:"polls"`
}

// FleetPoint is the fleet at one tick. A sum is over the engines that
// answered the tick (Live of Total) and had a value (the _of count);
// a KV pressure is the fullest engine, never a sum; null when no engine
// contributed.
type FleetPoint struct {
	T           float64  `json:"t"` // the tick, Unix seconds
	Live        int      `json:"live"`
	Total       int      `json:"total"`
	Decode      rate.Num `json:"decode"`
	DecodeOf    int      `json:"decode_of"`
	Prompt      rate.Num `json:"prompt"`
	PromptOf    int      `json:"prompt_of"`
	Running     rate.Num `json:"running"`
	Waiting     rate.Num `json:"waiting"`
	KVMax       rate.Num `json:"kv_max"`
	TokensTotal rate.Num `json:"tokens_total"` // lifetime, each engine's processes summed
	// Missing are live engines whose decode was null, with the reason.
	Missing []string `json:"missing,omitempty"`
	// Absent are the engines not in the recorder's target set at the
	// tick (discovery had not added them yet, or had removed them): not
	// in Total, neither live nor missing, their absence counts no tokens.
	Absent []string `json:"absent,omitempty"`
}

// FleetSummary condenses the fleet's points.
type FleetSummary struct {
	Points       int      `json:"points"`
	AllLive      int      `json:"all_live"` // ticks every engine answered
	MinLive      int      `json:"min_live"`
	DecodeMedian rate.Num `json:"decode_median"`
	DecodeMax    rate.Num `json:"decode_max"`
	WaitingMax   rate.Num `json:"waiting_max"`
	KVMax        rate.Num `json:"kv_max"`
	// TokensTotal is the engines' lifetime tokens at the last tick, each
	// engine's processes summed (a restarted engine's new count added to
	// the old process's last one); TokensRun the tokens over the run,
	// each process's rise, a restarted one counted from 0.
	TokensTotal rate.Num `json:"tokens_total"`
	TokensRun   rate.Num `json:"tokens_run"`
	// Joins and Leaves count the engines discovery added to and removed
	// from the target set while recording; AbsentPoints the ticks at
	// which at least one engine was absent (TokensTotal then sums the
	// engines present: it falls when one leaves).
	Joins        int `json:"joins,omitempty"`
	Leaves       int `json:"leaves,omitempty"`
	AbsentPoints int `json:"absent_points,omitempty"`
}

// Seam is a place where engines' similar numbers count different things.
type Seam struct {
	ID    string   `json:"id"`
	Cells []string `json:"cells"`
	// Targets groups the targets involved by what their number means.
	Targets map[string][]string `json:"targets"`
	Note    string              `json:"note"`
}

// TargetFacts are what one engine said about itself.
type TargetFacts struct {
	Target string `json:"target"`
	Engine string `json:"engine"`
	Facts  []Fact `json:"facts"`
}

// Fact names.
const (
	FactCeiling        = "queue_ceiling" // the first capacity queueing
	FactQueueReason    = "queue_reason"  // the queue by reason over the run
	FactPrefillStream  = "prefill_tokens_per_second_per_stream"
	FactPrefixCaching  = "prefix_caching" // enabled 1, disabled 0
	FactCachedFraction = "cached_fraction"
	FactKVPool         = "kv_pool_tokens"
	FactFLOPs          = "flops"
	FactSpecAccept     = "spec_accept_ratio_run"
	FactSpecLength     = "spec_mean_accept_length_run"
	// FactHiddenQueue: llama.cpp's every slot busy while requests_deferred
	// read 0: requests may wait in its HTTP threads, counted nowhere.
	FactHiddenQueue = "hidden_queue"
)

// Fact is one thing an engine published about itself, with provenance: a
// withheld value says why.
type Fact struct {
	Name    string             `json:"name"`
	Value   rate.Num           `json:"value"`
	Unit    string             `json:"unit,omitempty"`
	T       rate.Num           `json:"t,omitzero"` // when it was first seen, where that matters
	Source  string             `json:"source"`
	Derived bool               `json:"derived"`
	Window  rate.Num           `json:"window,omitzero"` // seconds the value covers
	Status  string             `json:"status,omitempty"`
	Reason  string             `json:"reason,omitempty"`
	By      map[string]float64 `json:"by,omitempty"`
	Text    string             `json:"text"`
}

// TargetDrift is what one target's engine and version should publish and
// did not.
type TargetDrift struct {
	Target        string `json:"target"`
	Engine        string `json:"engine"`
	Version       string `json:"version"`
	VersionSource string `json:"version_source"`
	// Missing are canonical quantities the engine publishes in every
	// version that applies, absent from every poll.
	Missing []Missing `json:"missing"`
	// Renamed are series published under a name the engine has renamed.
	Renamed []Renamed `json:"renamed"`
	// Lookalikes are unknown series whose names resemble a missing one.
	Lookalikes []Lookalike `json:"lookalikes"`
}

// Missing is a canonical quantity not published.
type Missing struct {
	Cell   string   `json:"cell"`
	Series []string `json:"series"` // the names it is read from
	Note   string   `json:"note,omitempty"`
}

// Renamed is a series published under an old name.
type Renamed struct {
	Old       string `json:"old"`
	New       string `json:"new"`
	Published string `json:"published"` // "old" or "both"
	Note      string `json:"note"`
}

// Lookalike is an unknown series that may be a renamed one.
type Lookalike struct {
	Series string `json:"series"`
	Like   string `json:"like"`
}

// Energy is joules per generated token over the busy windows.
type Energy struct {
	// Sources are the targets that published energy or power, Series the
	// series read, Method "counter" (Δ of an energy counter) or "power"
	// (power gauges integrated over time).
	Sources []string `json:"sources"`
	Series  []string `json:"series"`
	Method  string   `json:"method"`
	// Busy is the seconds of the busy windows: from each judged start
	// edge to the next end (any engine target).
	Busy           float64  `json:"busy"`
	Joules         rate.Num `json:"joules"`
	Tokens         rate.Num `json:"tokens"`
	JoulesPerToken rate.Num `json:"joules_per_token"`
	Source         string   `json:"source"`
	Derived        bool     `json:"derived"`
	Reason         string   `json:"reason,omitempty"`
	Notes          []string `json:"notes"`
}
