package findings

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
)

// expected lists, per engine, the canonical cells every build of it
// publishes; since, where set, is the first version that has them.
var expected = map[string][]expect{
	engine.VLLM: {
		{cell: engine.DecodeTokensPerSecond}, {cell: engine.PromptTokensPerSecond},
		{cell: engine.RequestsRunning}, {cell: engine.RequestsWaiting}, {cell: engine.KVCacheUsageRatio},
		{cell: engine.PreemptionsTotal}, {cell: engine.RequestsFinishedTotal},
		{cell: engine.PrefixCacheHitRatioLifetime}, {cell: engine.KVCacheCapacityTokens},
		{cell: engine.TTFT + engine.SuffixCount}, {cell: engine.E2E + engine.SuffixCount},
		{cell: engine.Queue + engine.SuffixCount}, {cell: engine.TPOT + engine.SuffixCount},
		{cell: engine.ITL + engine.SuffixCount, since: "0.11"},
	},
	engine.VLLMV0: {
		{cell: engine.DecodeTokensPerSecond}, {cell: engine.PromptTokensPerSecond},
		{cell: engine.RequestsRunning}, {cell: engine.RequestsWaiting}, {cell: engine.KVCacheUsageRatio},
		{cell: engine.TTFT + engine.SuffixCount}, {cell: engine.E2E + engine.SuffixCount},
		{cell: engine.TPOT + engine.SuffixCount}, {cell: engine.RequestsFinishedTotal},
	},
	engine.NIM: {
		{cell: engine.DecodeTokensPerSecond}, {cell: engine.PromptTokensPerSecond},
		{cell: engine.RequestsRunning}, {cell: engine.RequestsWaiting}, {cell: engine.KVCacheUsageRatio},
		{cell: engine.RequestsFinishedTotal},
	},
	engine.LlamaCpp: {
		{cell: engine.DecodeTokensPerSecond}, {cell: engine.PromptTokensPerSecond},
		{cell: engine.RequestsRunning}, {cell: engine.RequestsWaiting},
		{cell: engine.PerRequestDecodeTokensPerSecondLifetime},
	},
	engine.SGLang: {
		{cell: engine.DecodeTokensPerSecond}, {cell: engine.PromptTokensPerSecond},
		{cell: engine.RequestsRunning}, {cell: engine.RequestsWaiting}, {cell: engine.KVCacheUsageRatio},
		{cell: engine.TTFT + engine.SuffixCount}, {cell: engine.ITL + engine.SuffixCount},
		{cell: engine.E2E + engine.SuffixCount}, {cell: engine.RequestsFinishedTotal},
	},
	engine.TGI: {
		{cell: engine.DecodeTokensPerSecond}, {cell: engine.PromptTokensPerSecond},
		{cell: engine.RequestsRunning}, {cell: engine.RequestsWaiting},
		{cell: engine.TPOT + engine.SuffixCount}, {cell: engine.E2E + engine.SuffixCount},
		{cell: engine.Queue + engine.SuffixCount}, {cell: engine.RequestsFinishedTotal},
	},
	engine.TRTLLM: {
		{cell: engine.RequestsRunning}, {cell: engine.KVCacheUsageRatio}, {cell: engine.MaxRunningRequests},
	},
	engine.Triton: {{cell: engine.RequestsFinishedTotal}},
}

type expect struct {
	cell  string
	since string // first version publishing it; "" always
}

// renames are series an engine renamed: old → new, with the versions that
// deprecated, hid and removed the old name ("" unknown).
var renames = map[string][]rename{
	engine.VLLM: {
		{"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc", "0.9", "0.10", "0.12"},
		{"vllm:gpu_prefix_cache_queries_total", "vllm:prefix_cache_queries_total", "0.9", "0.10", "0.12"},
		{"vllm:gpu_prefix_cache_hits_total", "vllm:prefix_cache_hits_total", "0.9", "0.10", "0.12"},
		{"vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds", "0.11", "0.12", "0.13"},
	},
	engine.SGLang: {
		{"sglang:time_per_output_token_seconds", "sglang:inter_token_latency_seconds", "", "", ""},
	},
	engine.LlamaCpp: {
		{"llamacpp:n_past_max", "llamacpp:n_tokens_max", "", "", ""},
	},
}

type rename struct{ old, new, deprecated, hidden, removed string }

// drift compares what the target published with what its engine and
// version should.
func (v *view) drift() TargetDrift {
	t := v.t
	d := TargetDrift{Target: t.Name, Engine: t.Engine, Version: t.Version, VersionSource: t.VersionSource,
		Missing: []Missing{}, Renamed: []Renamed{}, Lookalikes: []Lookalike{}}
	ver, known := parseVersion(t.Version)
	fams, _ := engine.Catalog(t.Engine)
	for _, e := range expected[t.Engine] {
		// A quantity added in a later version than the one recorded is not missing.
		if e.since != "" && (!known || less(ver, mustVersion(e.since))) {
			continue
		}
		c, ok := t.Cells[e.cell]
		// Published at least once, or never even looked at: not missing.
		if !ok || c.Valued > 0 || c.Other > 0 || c.Absent == 0 {
			continue
		}
		m := Missing{Cell: e.cell, Series: []string{}}
		base := strings.TrimSuffix(strings.TrimSuffix(e.cell, engine.SuffixCount), "_lifetime")
		for _, k := range fams {
			if feeds(k.Feeds, e.cell) || feeds(k.Feeds, base) {
				m.Series = append(m.Series, k.Family)
			}
		}
		if e.since != "" {
			m.Note = fmt.Sprintf("published since %s; this is %s", e.since, t.Version)
		}
		d.Missing = append(d.Missing, m)
	}
	has := map[string]bool{}
	for _, f := range t.Families {
		has[f] = true
	}
	for _, r := range renames[t.Engine] {
		// Only the old name published is drift; the new one alone is current.
		if !has[r.old] {
			continue
		}
		rn := Renamed{Old: r.old, New: r.new, Published: "old"}
		if has[r.new] {
			rn.Published = "both"
		}
		rn.Note = renameNote(r, ver, known)
		d.Renamed = append(d.Renamed, rn)
	}
	for _, m := range d.Missing {
		for _, want := range m.Series {
			for _, u := range t.Unknown {
				if similar(u, want) {
					d.Lookalikes = append(d.Lookalikes, Lookalike{Series: u, Like: want})
				}
			}
		}
	}
	return d
}

// renameNote says what publishing the old name means for the version.
func renameNote(r rename, ver []int, known bool) string {
	if r.deprecated == "" {
		return fmt.Sprintf("renamed to %s", r.new)
	}
	life := fmt.Sprintf("deprecated in %s, hidden in %s, removed in %s", r.deprecated, r.hidden, r.removed)
	switch {
	case !known:
		return life + "; the engine's version is unknown"
	case !less(ver, mustVersion(r.removed)):
		return life + ": published by a version that removed it (a patched build, or the wrong version)"
	case !less(ver, mustVersion(r.hidden)):
		return life + ": this version shows it only with --show-hidden-metrics-for-version"
	case !less(ver, mustVersion(r.deprecated)):
		return life + ": deprecated in this version"
	}
	return life + ": the current name in this version"
}

// parseVersion reads "0.10.1.1" or "v0.9.2rc1" as numbers; known is false
// when there is no leading number.
func parseVersion(s string) (v []int, known bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	for _, part := range strings.Split(s, ".") {
		end := 0
		for end < len(part) && part[end] >= '0' && part[end] <= '9' {
			end++
		}
		if end == 0 {
			break
		}
		n, _ := strconv.Atoi(part[:end])
		v = append(v, n)
		if end < len(part) {
			break
		}
	}
	return v, len(v) > 0
}

func mustVersion(s string) []int {
	v, _ := parseVersion(s)
	return v
}

// less compares versions numerically, missing parts as 0.
func less(a, b []int) bool {
	for i := range max(len(a), len(b)) {
		x, y := at(a, i), at(b, i)
		if x != y {
			return x < y
		}
	}
	return false
}

func at(v []int, i int) int {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// similar reports whether two series names share most of their words
// (split at _ and :, the engine prefix and unit suffixes ignored).
func similar(a, b string) bool {
	wa, wb := words(a), words(b)
	if len(wa) == 0 || len(wb) == 0 {
		return false
	}
	common := 0
	for _, w := range wa {
		if slices.Contains(wb, w) {
			common++
		}
	}
	union := len(wa) + len(wb) - common
	return float64(common)/float64(union) >= 0.5
}

var noise = map[string]bool{"vllm": true, "sglang": true, "llamacpp": true, "tgi": true, "total": true, "seconds": true,
	"bucket": true, "count": true, "sum": true, "created": true, "nv": true}

func words(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '_' || r == ':' })
	out := f[:0]
	for _, w := range f {
		if !noise[w] {
			out = append(out, w)
		}
	}
	return out
}
