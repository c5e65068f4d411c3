package render

import (
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
)

// CellName is how the page names a canonical cell: a short human name for
// legends and tooltips, and its unit. The canonical name stays in the
// analysis JSON and on hover, beside the human one.
type CellName struct {
	Name string // "TTFT p50"
	Unit string // "s", "tokens/s", "requests", "ratio" (0..1, shown as %), "tokens", ""
}

// Units of cells.
const (
	UnitSeconds  = "s"
	UnitTokensPS = "tokens/s"
	UnitPerS     = "/s"
	UnitRequests = "requests"
	UnitRatio    = "ratio" // 0..1, drawn as a percentage
	UnitTokens   = "tokens"
)

// cellNames maps every canonical cell to its human name and unit; the
// histogram cells are named from histNames and the suffix.
var cellNames = map[string]CellName{
	engine.DecodeTokensPerSecond:                   {"decode", UnitTokensPS},
	engine.PromptTokensPerSecond:                   {"prompt", UnitTokensPS},
	engine.PromptTokensComputedPerSecond:           {"prompt computed", UnitTokensPS},
	engine.PreemptionsPerSecond:                    {"preemptions", UnitPerS},
	engine.RequestsFinishedPerSecond:               {"finished", "requests/s"},
	engine.RequestsRunning:                         {"running", UnitRequests},
	engine.RequestsWaiting:                         {"waiting", UnitRequests},
	engine.WaitingByReason:                         {"waiting by reason", UnitRequests},
	engine.KVCacheUsageRatio:                       {"KV-cache usage", UnitRatio},
	engine.PrefixCacheHitRatio:                     {"prefix-cache hits", UnitRatio},
	engine.PrefixCacheHitRatioLifetime:             {"prefix-cache hits, lifetime", UnitRatio},
	engine.SpecAcceptRatio:                         {"spec. acceptance", UnitRatio},
	engine.SpecAcceptRatioLifetime:                 {"spec. acceptance, lifetime", UnitRatio},
	engine.PerRequestDecodeTokensPerSecond:         {"decode per request", UnitTokensPS},
	engine.PerRequestDecodeTokensPerSecondLifetime: {"decode per request, lifetime", UnitTokensPS},
	engine.TokensTotal:                             {"tokens", UnitTokens},
	engine.PromptTokensTotal:                       {"prompt tokens", UnitTokens},
	engine.PromptTokensCachedTotal:                 {"cached prompt tokens", UnitTokens},
	engine.GenerationTokensTotal:                   {"generated tokens", UnitTokens},
	engine.RequestsFinishedTotal:                   {"finished requests", UnitRequests},
	engine.PreemptionsTotal:                        {"preemptions, total", ""},
	engine.DecodeTokensPerSecondNative:             {"decode (engine's own)", UnitTokensPS},
	engine.PromptTokensPerSecondNative:             {"prompt (engine's own)", UnitTokensPS},
	engine.PrefixCacheHitRatioNative:               {"prefix-cache hits (engine's own)", UnitRatio},
	engine.SpecAcceptRatioNative:                   {"spec. acceptance (engine's own)", UnitRatio},
	engine.KVCacheCapacityTokens:                   {"KV-cache capacity", UnitTokens},
	engine.PrefixCachingEnabled:                    {"prefix caching on", ""},
	engine.MaxRunningRequests:                      {"max running", UnitRequests},
}

// histNames are the short names of the latency histograms.
var histNames = map[string]string{
	engine.TTFT:  "TTFT",
	engine.TPOT:  "TPOT",
	engine.ITL:   "ITL",
	engine.E2E:   "E2E",
	engine.Queue: "queue",
}

var histSuffixes = map[string]CellName{
	engine.SuffixP50:   {" p50", UnitSeconds},
	"__p90":            {" p90", UnitSeconds}, // phase figures' quantile
	engine.SuffixP95:   {" p95", UnitSeconds},
	engine.SuffixP99:   {" p99", UnitSeconds},
	engine.SuffixMean:  {" mean", UnitSeconds},
	engine.SuffixCount: {" count", UnitRequests},
}

// NameOf returns the human name and unit of a canonical cell
// ("time_to_first_token_seconds__p50" → "TTFT p50", "s"), and false for a
// name the table does not hold: then the name is the cell's own with its
// underscores as spaces, and the unit "".
func NameOf(cell string) (CellName, bool) {
	if n, ok := cellNames[cell]; ok {
		return n, true
	}
	if base, suffix, ok := strings.Cut(cell, "__"); ok {
		if h, ok := histNames[base]; ok {
			if s, ok := histSuffixes["__"+suffix]; ok {
				return CellName{Name: h + s.Name, Unit: s.Unit}, true
			}
		}
		// A phase figure's statistic of a gauge: "requests_waiting__max".
		if g, ok := cellNames[base]; ok && (suffix == "mean" || suffix == "max") {
			return CellName{Name: g.Name + " " + suffix, Unit: g.Unit}, true
		}
	}
	return CellName{Name: strings.TrimSpace(strings.ReplaceAll(cell, "_", " "))}, false
}

// nameCell is a table cell naming a canonical cell: its human name, the
// canonical one on hover.
func nameCell(cell string) Cell { return Cell{Text: HumanName(cell), Prov: cell} }

// HumanName is NameOf(cell).Name.
func HumanName(cell string) string {
	n, _ := NameOf(cell)
	return n.Name
}

// Scale is how a chart shows values of a unit: values are multiplied by
// Factor and labelled with Unit.
type Scale struct {
	Factor float64
	Unit   string
}

// ScaleFor returns how to show values of unit whose largest magnitude is
// maxAbs: seconds below one second as milliseconds (ticks of 3 ms, not
// 0.003 s); anything else as it is.
func ScaleFor(unit string, maxAbs float64) Scale {
	if unit == UnitSeconds && maxAbs < 1 {
		return Scale{Factor: 1000, Unit: "ms"}
	}
	return Scale{Factor: 1, Unit: unit}
}
