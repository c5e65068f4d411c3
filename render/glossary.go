package render

// glossary explains the report's terms in a few words each, in the order
// a reader meets them; the appendix lists them and the page's notes and
// hovers say the same where each first appears.
var glossary = [][2]string{
	{"busy figures", "a target's figures over its steady phases together: the numbers to quote for it (the headline)"},
	{"phase", "a stretch of the run: idle, ramp (from a load change until the counters run at the new level) or steady (one load level), found at each target's load edges; or named, given by a file or marked while recording"},
	{"steady phase", "a phase where the engine ran at one load level; the answer's figures are measured over these"},
	{"load edge", "a change of load found on the engine's decode counter (or its step counter): a start or an end"},
	{"good poll", "a poll whose stamp is sure: its answer came within a quarter of the cadence; phase figures are differenced between good polls"},
	{"window", "the stretch of time a rate was measured over, shown as Δ and seconds (Δ2.0s)"},
	{"span", "how far back the rate estimator may reach for a window's start"},
	{"gate", "a check of the rate estimator that refuses a window it cannot trust: floor (too short), ceiling (longer than twice the span), stale (the body was old), jump (8× the last rate without confirmation), reset (a counter fell), order (an answer out of order), no_baseline (the first poll)"},
	{"refused / withheld", "a value a gate refused: published as null with its reason, never interpolated; withheld when a reader needed it (not the normal first poll or a confirmed jump)"},
	{"incident", "a stretch where the measurement could not be trusted (a gap, a stall of the recording host, failed or slow scrapes, a restart, refused windows), with what a naive Δ/Δt would have printed instead (its counterfactual)"},
	{"settle poll", "the first poll after a load change whose published rate is within 10 % of the new level; poll 1 is the first poll after the change"},
	{"|ln| error", "how far a published value is from the level it should show, as |ln(value/level)|: 0.1 is about 10 % off, 0.69 a factor of 2"},
	{"seam", "a quantity two engines count differently (tokenizers, prompt cache hits, when a counter moves), so that adding them up compares different things"},
	{"fleet", "every engine target together: sums where figures add, the fullest engine for maxima"},
	{"ceiling", "the load past which requests wait for KV-cache capacity: more load becomes queue, not throughput"},
	{"drift", "series an engine of its version should publish and does not, or publishes under an older name"},
	{"provenance", "where a number comes from: the series or formula, the window, and whether it was read or derived; shown on hover"},
}

// glossarySection is the appendix's glossary.
func glossarySection() Section {
	t := Table{Title: "Terms used in this report", Columns: []Column{{Title: "term"}, {Title: "meaning"}}}
	for _, g := range glossary {
		t.Rows = append(t.Rows, []Cell{text(g[0]), text(g[1])})
	}
	return Section{ID: "glossary", Title: "Glossary", Tables: []Table{t}}
}
