package analyze

import (
	"slices"

	"github.com/llmrec/llmrec/analyze/engine"
)

// unreadInSummary are the canonical cells a replay without its polls
// (Options.SkipPolls) reads nowhere: not a headline (record), not a cell
// the findings keep or count for a finding (findingsState.end, drift's
// expected cells, the fleet's seams), not a published figure of the
// phases (phases.PubCells). The engine's reader skips them there
// (engine.Tracker.Want): they are null with reason not_computed and are
// never printed, since the polls are not.
//
// Of the histograms' cells a summary reads each count (drift counts its
// valued polls), the p50s, TTFT's p99 and TPOT's mean (the phases'
// published figures and the headlines): the other quantiles and means
// are not made, nor the monotonic pass and the sums only they need.
var unreadInSummary = []string{
	engine.SpecAcceptRatio, engine.SpecAcceptRatioLifetime, engine.PromptTokensCachedTotal,
	engine.DecodeTokensPerSecondNative, engine.PromptTokensPerSecondNative,
	engine.PrefixCacheHitRatioNative, engine.SpecAcceptRatioNative,
	engine.TTFT + engine.SuffixMean, engine.TTFT + engine.SuffixP95,
	engine.TPOT + engine.SuffixP50, engine.TPOT + engine.SuffixP95, engine.TPOT + engine.SuffixP99,
	engine.ITL + engine.SuffixMean, engine.ITL + engine.SuffixP95, engine.ITL + engine.SuffixP99,
	engine.E2E + engine.SuffixMean, engine.E2E + engine.SuffixP95, engine.E2E + engine.SuffixP99,
	engine.Queue + engine.SuffixMean, engine.Queue + engine.SuffixP95, engine.Queue + engine.SuffixP99,
}

// summaryCells are the canonical cells a replay without its polls wants.
var summaryCells = slices.DeleteFunc(slices.Clone(engine.Canonical), func(c string) bool {
	return slices.Contains(unreadInSummary, c)
})

// wantSummary is whether a replay without its polls tells the trackers
// the cells it reads (a test turns it off to compare).
var wantSummary = true
