package engine

import "github.com/llmrec/llmrec/internal/engines"

// NormalizeHint maps a configured engine name to an engine id
// (engines.NormalizeHint): "" for an empty or unknown hint.
func NormalizeHint(hint string) string { return engines.NormalizeHint(hint) }

// DetectSeries names the engine whose families these are
// (engines.DetectSeries); Generic when none matches.
func DetectSeries(families []string) string { return engines.DetectSeries(families) }
