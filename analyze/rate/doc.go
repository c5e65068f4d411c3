// Package rate turns recorded counter samples into rates, ratios of deltas
// and windowed histograms that say what they measured, or why they could not.
//
// It is pure computation over plain data: no I/O, no clock, no goroutines.
// The caller makes one [Estimator] per target and span, feeds it that target's
// polls in time order with [Estimator.Observe], and after each poll asks for
// cells with [Estimator.Rate], [Estimator.Ratio] and [Estimator.Histogram].
// A cell describes the poll just observed.
//
// # Inputs
//
// A [Poll] is one scrape. T is the time its first byte arrived (Unix seconds):
// samples are stamped then, because that is the latest moment the engine can
// have rendered the body. Start is when the request was sent; the body was
// rendered somewhere in [Start, T], so T−Start is the sample's timing
// uncertainty. ProcessStart is the target's process_start_time_seconds when
// it exports one. Samples are the counters of the scrape (histogram _bucket,
// _count and _sum series included, gauges excluded), each keyed by series
// name and canonical label set ([Key], [Labels]) and carrying its _created
// time when the engine exports one. Zero means unknown for Start,
// ProcessStart and Created.
//
// # Windows
//
// Each key keeps the samples of its last span. The window of a poll runs from
// the oldest sample inside the span (T−span ≤ t, with 1 ms of tolerance for
// float stamps) to T; when no sample is inside, from the previous sample. So
// a span equal to the poll cadence measures one interval, and a poll landing a
// little late still measures the real gap between the two scrapes.
//
// # Gates
//
// Every key is gated on every poll, in this order. A refusal is a null cell
// whose Reason names the gate; "re-bases" means the key's history is dropped
// and the current sample becomes the base of the next window.
//
//   - order: a poll not later than the previous one measures no time. Every
//     cell of that poll is refused and nothing is recorded.
//   - no_baseline: a key's first sample has nothing to be diffed against.
//   - reset: a counter that decreased, or whose _created or the target's
//     process start time changed since its last sample, restarted. Null for
//     that poll with no window, re-based: never a spike, never negative.
//     A poll flagged Restart (the caller saw another counter of the target
//     fall, or the engine answer that it was loading) resets every key; a
//     key absent from it is reset when it comes back, its last sample
//     being the old process's.
//   - ceiling: a window longer than CeilingFactor × span (default 2) is a
//     stall, not a measurement. Null with no window (it measured none),
//     re-based.
//   - floor: a window shorter than MinWindow (default 0.5 s) is a catch-up
//     poll right behind a slow one; its Δ/Δt is mostly timing noise. Null, its
//     window and source kept, re-based so the next honest poll reads the
//     engine again.
//   - stale: a window resting on a sample whose uncertainty exceeds
//     StaleFraction (default 0.25) of the window is refused, window kept. The
//     sample stays in the history; as the window over it widens it passes.
//   - jump (rates only): a rate above JumpFactor (default 8) × the key's last
//     accepted rate, the latter raised to at least JumpFloor (default 10/s),
//     is held. It stays held while windows rest on the same base sample, whose
//     reading is the usual culprit; the first window anchored on a different
//     base sample confirms or replaces it and is published. So does a window
//     from the held poll's own sample, when it too is above the gate: early
//     in a run or after a reset the window cannot slide yet, and without it a
//     real load start would be held for a whole span. A key with no accepted
//     rate yet is not gated.
//
// Ratios and histograms get every gate but the jump gate: a jump compares a
// rate with the previous one, and a hit ratio or a latency distribution may
// move by any factor from one window to the next.
//
// # Label sets
//
// A cell sums the label sets of its series that the match function accepts
// (nil accepts all). A set without a baseline contributes 0, noted. If a set
// that was present at the previous poll is refused, the whole cell is
// refused with that set's reason: a sum missing one term is not the sum. The
// cell's window is the widest window a contributing set used. A set that
// vanished contributes nothing and is noted. A cell with no set at all in
// the poll is null with reason absent: absent is never 0.
//
// A measured zero is a value: counters that did not move read 0, which is
// what an idle engine is doing. Callers must not replace it with an engine's
// own throughput gauge, which keeps the speed of its last request.
//
// # Cells
//
// A [Cell] carries its provenance: Value (null or a number), Source (the
// series, computed:Δ<series>/Δt, or the formula), Derived, Window (seconds,
// for anything computed over a window), Severity where defined, Reason
// whenever Value is null, and Notes about label sets. [Num] is the nullable
// number both Value and Window use; it marshals to null or a JSON number and
// costs no allocation. [KVCell] and [KVSeverity] give a KV-cache gauge its
// verdict on a percent scale.
//
// An Estimator is not safe for concurrent use. It remembers every key it has
// seen, so make one per target and recording.
package rate
