// Package findings tells a recorded run's story from its replay: where the
// measurement could not be trusted and why, how quickly the published
// numbers caught up with each change of load, what the fleet did as a whole
// and where adding engines up compares different things, and what the
// engines said about themselves.
//
// It is pure computation over plain data. Package analyze reads a run once
// and hands over a [Run]: per target its /metrics rows (every outcome, with
// their times and error texts) and a [Poll] per ok row holding the
// published rate cells, the per-interval decode rate (the same polls
// replayed with every gate off but reset, over the interval since the
// previous poll), the decode rate under each counterfactual span, the
// lifetime counters, gauges, and the watched counters and info series.
// [Analyze] returns [Findings], plain data meant for JSON; [Findings.WriteText]
// renders them as text.
//
// # Rules
//
// Each rule is stated where it is applied; in short:
//
//   - Holes. Polls more than [HoleFactor] intervals apart leave a hole. A
//     hole every recorded target has at once because of the recorder (its
//     own "recorder stalled" missed ticks, or no rows at all) is one
//     host_stall. Otherwise it is a gap, or target_down and target_up when
//     it is failed scrapes only for [DownIntervals] intervals.
//   - Refusals. Polls whose rate cells a gate refused are grouped into one
//     refused incident, except where another incident or an edge explains
//     them. A reset is a restart; a decode label set without a baseline
//     after the first poll is a label_join, never a restart.
//   - Naive. A naive Δ/Δt differences the lifetime counter summed over
//     label sets between consecutive polls: what a dashboard without gates
//     would print. Every incident says what it would have printed.
//   - Edges. On the per-interval decode series a start is a growing
//     interval after a flat one, an end the reverse. An engine whose
//     decode counter moves only at request completion is read from its
//     step counter, else with its running requests (see signalOf). Poll 1 is the first
//     poll after the edge; an edge is judged when polls 2 to [SteadyPolls]
//     read the new level. Its settle poll is the first whose published
//     value is within |ln| [SettleLn] of the level (exactly 0 for an end).
//   - Fleet. Sums are over the engines that answered the tick; KV pressure
//     is the fullest engine, never a sum.
//   - Absent is never 0: a fact is stated only from what the target
//     published, and a withheld number says why.
package findings
