package analyze

import (
	"github.com/llmrec/llmrec/analyze/clientcmp"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/analyze/sweep"
	"github.com/llmrec/llmrec/internal/engines"
	"github.com/llmrec/llmrec/record/capture"
)

// Schema names the version of the JSON document. It changes only when a
// field changes meaning or goes away; new fields and new top-level keys
// (incidents, fleet, ...) are added without a change, so readers must
// ignore what they do not know.
const Schema = "llmrec.analysis/1"

// Result is the analysis of one or more run folders: plain data meant for
// JSON. Slices are never nil.
type Result struct {
	Schema    string    `json:"schema"`
	Generator string    `json:"generator"` // "llmrec <version>"
	Gates     Gates     `json:"gates"`
	Inputs    []Input   `json:"inputs"`
	Problems  []Problem `json:"problems"` // files that could not be read; the rest was analysed
	// Spans are the counterfactual spans the polls were replayed under
	// besides the published one (gates.span), seconds.
	Spans []float64 `json:"spans"`
	// Caps are the plausibility caps of the rate cells.
	Caps []findings.Cap `json:"caps"`
	// Findings are the run's story: incidents, edges, settle, rollups,
	// fleet, seams, facts, drift and energy, as top-level keys.
	findings.Findings
	// Phases are the run's phases with their figures from the engines'
	// own counters, and the figures their published values disagree with
	// (phases, phase_disagreements, phase_problems).
	phases.Output
	// Answer is the run at a glance: a status and its reason per target
	// and for the fleet, beside their busy figures.
	Answer Answer `json:"answer"`
	// Sweep is the run's load levels as curves: per target and for the
	// fleet, each level's offered load, throughput, latencies and
	// saturation evidence, the knee, and each SLO's attainment and
	// boundary (package sweep).
	Sweep   sweep.Sweep `json:"sweep"`
	Targets []Target    `json:"targets"`
	// Client is each client file (Options.Clients) beside the engines'
	// figures over its phases, and where they disagree; absent without one.
	Client *clientcmp.Output `json:"client,omitempty"`
	// ClientInputs are the client files and the phases cut from them, as
	// the client section was computed from (names as in Phases): llmrec
	// diff reads their per-request records. Not in JSON.
	ClientInputs []clientcmp.Input `json:"-"`
}

// Gates are the estimator's settings the analysis ran with; a gate that is
// off is null.
type Gates struct {
	Span          rate.Num `json:"span"`           // seconds of history a window may reach back
	MinWindow     rate.Num `json:"min_window"`     // the floor, seconds
	CeilingFactor rate.Num `json:"ceiling_factor"` // the ceiling, in spans
	JumpFactor    rate.Num `json:"jump_factor"`
	JumpFloor     rate.Num `json:"jump_floor"` // per second
	StaleFraction rate.Num `json:"stale_fraction"`
	// SpanByKind is true when no span was asked for: counters an engine
	// moves on every step span their target's interval, the others Span.
	SpanByKind bool `json:"span_by_kind"`
	// CompletionSpans are, by target (sorted by name), the spans chosen
	// from the data for the counters its engine moves once per request,
	// when SpanByKind and its interval is known: the typical request
	// duration bounded by [interval, 60 s], with how and from which series
	// it was measured. Span stays their counterfactual (Result.Spans).
	CompletionSpans []CompletionSpan `json:"completion_spans"`
	// Floors are, by target (sorted by name), the floors lowered to half
	// the target's interval when no floor was asked for and that half is
	// under MinWindow: a cadence near or under the floor would have its
	// windows refused.
	Floors []TargetFloor `json:"floors"`
}

// TargetFloor is one target's own floor.
type TargetFloor struct {
	Target    string  `json:"target"`
	MinWindow float64 `json:"min_window"` // seconds
	Interval  float64 `json:"interval"`   // the target's poll interval, seconds
}

// CompletionSpan is the span chosen for one target's completion counters.
type CompletionSpan struct {
	Target string `json:"target"`
	engine.ChosenSpan
}

// CompletionSpanWindow is the trailing window a target's request duration
// is measured over, seconds, and the longest span it may choose.
const CompletionSpanWindow = 60.0

func gatesOf(c rate.Config) Gates {
	n := func(v float64, offIsZero bool) rate.Num {
		// A gate that is off has no number.
		if (offIsZero && v == 0) || v > 1e300 {
			return rate.Num{}
		}
		return rate.Some(v)
	}
	return Gates{
		Span: rate.Some(c.Span), MinWindow: n(c.MinWindow, true), CeilingFactor: n(c.CeilingFactor, false),
		JumpFactor: n(c.JumpFactor, false), JumpFloor: rate.Some(c.JumpFloor), StaleFraction: n(c.StaleFraction, false),
	}
}

// Input is one run folder.
type Input struct {
	Dir       string             `json:"dir"`
	Sessions  []string           `json:"sessions"`         // run ids, in start order
	Segments  int                `json:"segments"`         // closed Parquet segments read
	Journals  int                `json:"journals"`         // live journals read (a recording still running)
	Crashed   int                `json:"crashed_journals"` // journals of crashed sessions, recovered in memory
	Recovered []capture.Recovery `json:"recovered"`
	Foreign   []string           `json:"foreign"` // files llmrec did not write: not read
	// Recordings say how each session recorded, from its manifest.
	Recordings []Recording `json:"recordings"`
}

// Recording is what a session's manifest says about how it recorded: its
// targets with their cadence, and the effective configuration (secrets
// removed by the recorder).
type Recording struct {
	RunID   string                   `json:"run_id"`
	Start   string                   `json:"start"`
	End     *string                  `json:"end"` // null: still recording, or killed
	Version string                   `json:"llmrec_version"`
	Targets []capture.ManifestTarget `json:"targets"`
	Config  any                      `json:"config"`
	// Import says the session was imported from a metrics store; absent
	// for a recording.
	Import *capture.Import `json:"import,omitempty"`
	// Warnings are what the recorder warned of at start (a target whose
	// TLS certificate was not checked: insecure_skip_verify); absent when
	// none.
	Warnings []string `json:"warnings,omitempty"`
}

// Problem is a file that could not be read, or could be read only in part.
type Problem struct {
	File  string `json:"file"`
	Error string `json:"error"`
	// Kind is ProblemSkipped, ProblemPartial or ProblemSeals.
	Kind     string `json:"kind"`
	RowsRead int64  `json:"rows_read"` // rows of the file analysed, before the damage
}

// The kinds of Problem.
const (
	// ProblemSkipped: none of the file's rows were analysed. It differs
	// from its seal (size, CRC-32C, row count: see docs/capture-format.md),
	// or failed before its first row.
	ProblemSkipped = "skipped"
	// ProblemPartial: the rows before the damage were analysed, the rest
	// of the file was not. Only a file without a seal (recorded before the
	// ledger existed) or a live journal is read in part.
	ProblemPartial = "partial"
	// ProblemSeals: a line of a folder's seal ledger is damaged; the files
	// it sealed were read unverified.
	ProblemSeals = "seals"
)

// Target is one recorded target, across every folder and session that has
// it.
type Target struct {
	Name       string `json:"name"`
	Engine     string `json:"engine"`      // an engine id of package engine, "generic" when none was recognised
	DetectedBy string `json:"detected_by"` // "hint" (the configured engine), "series", or "" (none)
	Hint       string `json:"hint,omitempty"`
	// Model is the served model and Version the engine's version, as the
	// engine reported them (its info endpoints fetched when recording, the
	// model_name label); "" unknown.
	Model   string `json:"model,omitempty"`
	Version string `json:"version,omitempty"`
	// Notes say what cells mean for this engine (the seams between
	// engines), by cell name; "engine" describes the variant detected.
	Notes map[string]string `json:"notes"`
	// UnknownSeries are the families the engine's reader does not know:
	// recorded, not analysed, never silently dropped.
	UnknownSeries []string `json:"unknown_series"`
	// MistypedSeries are the families the engine types counter that count
	// nothing (a lifetime average, a running maximum), with what they
	// really are: never fed to rate() or an edge, and a lifetime
	// average's fall is no restart. Empty when none.
	MistypedSeries []engines.Declaration `json:"mistyped_series"`
	// Scrapes counts the target's /metrics rows by outcome; only ok rows
	// are polls. OtherEndpoints counts the rows of its other endpoints.
	Scrapes        map[string]int `json:"scrapes"`
	OtherEndpoints map[string]int `json:"other_endpoints"`
	Summary        Summary        `json:"summary"`
	Polls          []Poll         `json:"polls"` // empty when the options skip or spool them
	// Imported, when the target's rows came from a metrics store (llmrec
	// import), says so and which checks cannot apply; absent otherwise.
	Imported *Imported `json:"imported,omitempty"`
	spool    *spool    // the polls, when spooled: WriteJSON copies them
}

// Poll is one ok scrape and its cells.
type Poll struct {
	T   float64 `json:"t"`   // first byte of the response, Unix seconds: the samples' stamp
	Run string  `json:"run"` // the session
	Seq int64   `json:"seq"` // the tick, as in `llmrec export --seq`
	// Break says why a line drawn through the target's polls must break
	// before this one: BreakGap, BreakRestart or BreakAway; "" for none.
	Break string       `json:"break,omitempty"`
	Cells engine.Cells `json:"cells"`
}

// Reasons a line breaks before a poll.
const (
	// BreakGap: the previous poll of the target is more than
	// findings.HoleFactor intervals earlier; nothing is known in between.
	BreakGap = "gap"
	// BreakRestart: the engine restarted before this poll (engine.Tracker's
	// Restart: a counter fell, a new process start, a loading answer):
	// values before and after are two processes'.
	BreakRestart = "restart"
	// BreakAway: discovery removed the target from the recorder's target
	// set after the previous poll (file_sd, DNS); it was away, not in a
	// gap.
	BreakAway = "away"
)

// Summary condenses a target's polls.
type Summary struct {
	Polls int     `json:"polls"`
	First float64 `json:"first"` // t of the first and last poll, 0 without polls
	Last  float64 `json:"last"`
	// Busy is the headline: the target's figures over all its steady
	// phases together, from its own counters (see package phases).
	Busy phases.Figures `json:"busy"`
	// Headlines are the whole recording's medians, idle included: a
	// secondary table. They are the medians of the headline cells over the polls that
	// have a value, with the median window they were measured over.
	Headlines []Headline `json:"headlines"`
	// Refusals counts the headline cells the estimator's gates refused
	// (order, no_baseline, reset, ceiling, floor, stale, jump), by reason,
	// over all polls; Headlines[].Nulls has every null by reason.
	Refusals map[string]int `json:"refusals"`
	// Withheld are the refusals that hid a value a reader needed, by
	// headline cell and reason; Normal counts those that are a normal part
	// of measuring, by reason: the first poll's no_baseline (nothing to
	// diff yet) and a jump hold released at the next poll (a load start
	// confirmed one poll later). The verdict reads Withheld.
	Withheld map[string]map[string]int `json:"withheld"`
	Normal   map[string]int            `json:"normal"`
}

// Headline is one headline cell over a target's polls.
type Headline struct {
	Cell   string         `json:"cell"`
	Median rate.Num       `json:"median"`
	Window rate.Num       `json:"window"` // median window, seconds; null for gauges
	Values int            `json:"values"` // polls with a value
	Nulls  map[string]int `json:"nulls"`  // polls without one, by reason
}
