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
var unreadInSummary = []string{
	engine.SpecAcceptRatio, engine.SpecAcceptRatioLifetime, engine.PromptTokensCachedTotal,
	engine.DecodeTokensPerSecondNative, engine.PromptTokensPerSecondNative,
	engine.PrefixCacheHitRatioNative, engine.SpecAcceptRatioNative,
}

// summaryCells are the canonical cells a replay without its polls wants.
var summaryCells = slices.DeleteFunc(slices.Clone(engine.Canonical), func(c string) bool {
	return slices.Contains(unreadInSummary, c)
})

// wantSummary is whether a replay without its polls tells the trackers
// the cells it reads (a test turns it off to compare).
var wantSummary = true
