// Package analyze replays recorded captures offline: it reads every segment
// of one or more run folders, per target in time order, and turns each
// target's polls into cells that say what they measured or why they could
// not (see package engine for the cells and package rate for the estimator).
//
// The pipeline is reader → tracker → estimator → cells:
//
//   - Reading. [Analyze] opens each folder with capture.Open, which recovers
//     the journal of a crashed session into a closed segment first. Closed
//     segments are read column by column (never the body column); a live
//     journal, the open segment of a recording still running, is read last.
//     Sessions are ordered by their manifest's start, then run id; segments
//     by number. A file that cannot be read is a [Problem] naming it and what
//     is wrong, and the rest is analysed.
//   - Replay. Each ok /metrics row is a poll stamped at its first byte, with
//     its request start as the stamp's uncertainty. Each target has one
//     engine.Tracker: it detects the engine (the configured hint wins), feeds
//     the counters to a rate.Estimator and lets the engine's reader build the
//     canonical cells.
//   - Findings. The same read keeps each target's rows (every outcome, with
//     its times and error) and a compact record of each poll, and replays
//     the polls twice more: over each poll interval with the gates off (the
//     series load edges are found on) and under each counterfactual span
//     ([Options.Spans]). Package findings turns them into incidents, load
//     edges and their settle polls, per-minute rollups against the caps,
//     fleet totals and seams, facts, drift and energy.
//   - Result. A [Result] is plain data meant for JSON, schema [Schema]:
//     targets, each with its engine, the unknown series, outcome counts, a
//     summary (headline medians with their windows, nulls by reason) and the
//     polls with their cells; and the findings as top-level keys.
//     docs/analysis-format.md documents it.
//
// analyze imports the capture format (record/capture) but never the scraper
// (package record), and never HTML or rendering code.
package analyze
