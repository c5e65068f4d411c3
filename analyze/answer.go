package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
)

// AnswerFigures are the figures of the answer, in order: each target's busy
// figures (Summary.Busy) and the fleet's (FleetBusy) under these names.
var AnswerFigures = []string{
	engine.DecodeTokensPerSecond, engine.PromptTokensPerSecond,
	engine.TTFT + "__p50", engine.TTFT + "__p99", engine.ITL + "__p50", engine.ITL + "__p99",
	"requests_waiting__max", "kv_cache_usage_ratio__max",
}

// Answer is the run's answer at a glance: a row per target, then one for
// the fleet, each with a status word and its reason. The figures of a row
// are the target's busy figures (Target.Summary.Busy), the fleet's
// FleetBusy; the answer adds what a reader judges them by.
type Answer struct {
	Rows []AnswerRow `json:"rows"`
}

// AnswerRow is one row of the answer.
type AnswerRow struct {
	Target string `json:"target"` // "" for the fleet's row, which is last
	Status string `json:"status"` // one of the Status constants
	// Reason says why, in words: the incidents that left intervals out,
	// the figures that disagree with the published values, why there are
	// no figures.
	Reason string `json:"reason"`
	// Incidents counts the incidents of the target, those of every target
	// at once included; the fleet's row counts them all.
	Incidents int `json:"incidents"`
}

// Statuses of an answer row.
const (
	StatusOK       = "ok"              // measured over steady phases; nothing that bears on the figures went wrong
	StatusDegraded = "degraded"        // measured, but incidents left intervals out, or the published values disagree
	StatusNoSteady = "no_steady_phase" // the target never ran at one level: no busy figures
	StatusWithheld = "withheld"        // there were steady phases, but too few good polls in them to measure
)

// degrading are the incident kinds that bear on a target's figures: each
// leaves out intervals or marks a stretch nothing is known of.
var degrading = map[string]bool{
	findings.KindGap: true, findings.KindHostStall: true, findings.KindScrapeErr: true, findings.KindRestart: true,
	findings.KindDown: true, findings.KindEngineStall: true, findings.KindMissedTick: true,
}

// answer judges each target's busy figures and the fleet's.
func (r *Result) answer() Answer {
	a := Answer{Rows: []AnswerRow{}}
	worse := []string{}
	for i := range r.Targets {
		t := &r.Targets[i]
		row := targetAnswer(t, r.Incidents)
		if row.Status != StatusOK {
			worse = append(worse, t.Name+" "+strings.ReplaceAll(row.Status, "_", " "))
		}
		a.Rows = append(a.Rows, row)
	}
	fleet := AnswerRow{Status: StatusOK, Incidents: len(r.Incidents), Reason: fmt.Sprintf("all %d targets ok", len(r.Targets))}
	switch {
	case len(r.Targets) == 0:
		fleet.Status, fleet.Reason = StatusWithheld, "no target recorded"
	case len(worse) == len(r.Targets):
		fleet.Status, fleet.Reason = StatusDegraded, "no target ok"
	case len(worse) > 0:
		fleet.Status, fleet.Reason = StatusDegraded, strings.Join(worse, ", ")
	}
	if len(r.Seams) > 0 {
		fleet.Reason += fmt.Sprintf("; sums cross %d seam(s)", len(r.Seams))
	}
	a.Rows = append(a.Rows, fleet)
	return a
}

// targetAnswer is one target's row; an import that is partial is never
// ok, and says so whatever its status.
func targetAnswer(t *Target, incidents []findings.Incident) AnswerRow {
	row := statusOf(t, incidents)
	// Rule: what a partial import lacks was never read: no verdict of "ok".
	if t.Imported != nil && t.Imported.Partial != "" {
		partial := "the import is partial: " + t.Imported.Partial
		if row.Status == StatusOK {
			row.Status, row.Reason = StatusDegraded, partial
			return row
		}
		row.Reason += "; " + partial
	}
	return row
}

// neverAnswered says that t never answered: its attempts, and the error
// its down incidents counted most often.
func neverAnswered(t *Target, incidents []findings.Incident) string {
	attempts := 0
	for _, n := range t.Scrapes {
		attempts += n
	}
	errs := map[string]int{}
	for _, in := range incidents {
		if string(in.Target) == t.Name && in.Kind == findings.KindDown {
			for e, n := range in.Errors {
				errs[e] += n
			}
		}
	}
	text := fmt.Sprintf("never answered: %d attempt(s)", attempts)
	// Rule: no error text recorded (e.g. no attempt at all), nothing to quote.
	if len(errs) == 0 {
		return text
	}
	top := slices.MinFunc(slices.Collect(maps.Keys(errs)), func(a, b string) int {
		return cmp.Or(cmp.Compare(errs[b], errs[a]), strings.Compare(a, b))
	})
	return fmt.Sprintf("%s; error (×%d): %s", text, errs[top], top)
}

// statusOf is one target's row: its status by the first rule that holds.
func statusOf(t *Target, incidents []findings.Incident) AnswerRow {
	row := AnswerRow{Target: t.Name}
	kinds := map[string]int{}
	for _, in := range incidents {
		if string(in.Target) == t.Name || in.Target == "" && slices.Contains(in.Targets, t.Name) {
			row.Incidents++
			kinds[in.Kind]++
		}
	}
	b := &t.Summary.Busy
	// No poll at all: nothing was measured; say how often it was asked.
	if t.Summary.Polls == 0 {
		row.Status, row.Reason = StatusWithheld, neverAnswered(t, incidents)
		return row
	}
	// A target that is not an engine has no load, so no phases.
	if b.Bounds.Reason == phases.ReasonNoSteady && t.Engine == engine.Generic {
		row.Status, row.Reason = StatusNoSteady, "not an inference engine: no load to find phases in"
		return row
	}
	if b.Bounds.Reason == phases.ReasonNoSteady {
		row.Status, row.Reason = StatusNoSteady, "the engine never ran at one level: idle or ramping throughout"
		return row
	}
	if d, ok := b.Get(engine.DecodeTokensPerSecond); !ok || !d.Value.Valid {
		why := b.Bounds.Reason
		if why == "" && ok {
			why = d.Reason
		}
		row.Status, row.Reason = StatusWithheld, "decode not measured: "+strings.ReplaceAll(why, "_", " ")
		return row
	}
	var why []string
	inside := map[string]int{}
	for _, in := range incidents {
		if (string(in.Target) == t.Name || in.Target == "" && slices.Contains(in.Targets, t.Name)) &&
			degrading[in.Kind] && overlaps(&in, b.Bounds.Windows) {
			inside[in.Kind]++
		}
	}
	if n := max(inside[findings.KindRestart], len(b.Bounds.RestartsLeftOut)); n > 0 {
		why = append(why, fmt.Sprintf("%d %s in its steady phases (the intervals across left out)", n, IncidentNoun(findings.KindRestart, n)))
	}
	delete(inside, findings.KindRestart)
	if len(inside) > 0 {
		why = append(why, IncidentWords(inside)+" in its steady phases (counted across, unseen by any poll)")
	}
	if c := b.Bounds.Coverage; c.Valid && c.V < minCoverage {
		why = append(why, fmt.Sprintf("its counters cover only %.0f %% of its steady phases", 100*c.V))
	}
	if len(why) > 0 {
		row.Status, row.Reason = StatusDegraded, strings.Join(why, "; ")
		return row
	}
	row.Status = StatusOK
	row.Reason = "nothing went wrong in its steady phases"
	if len(kinds) > 0 {
		row.Reason += " (elsewhere: " + IncidentWords(kinds) + ")"
	}
	return row
}

// minCoverage is the least share of its steady phases a target's
// counters must be differenced over for its row to be ok.
const minCoverage = 0.9

// overlaps says whether incident in touches one of the windows.
func overlaps(in *findings.Incident, ws []phases.Window) bool {
	from, to := in.T, in.T
	if in.Start.Valid {
		from, to = in.Start, in.End
	}
	// An incident with no time cannot be placed: count it.
	if !from.Valid || !to.Valid {
		return true
	}
	for _, w := range ws {
		if from.V <= w.End && to.V >= w.Start {
			return true
		}
	}
	return false
}

// IncidentWords counts incidents by kind in words: "1 restart, 2 gaps".
func IncidentWords(kinds map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		parts = append(parts, fmt.Sprintf("%d %s", kinds[k], IncidentNoun(k, kinds[k])))
	}
	return strings.Join(parts, ", ")
}

// incidentNouns name the incident kinds in words, singular and plural.
var incidentNouns = map[string][2]string{
	findings.KindGap: {"gap", "gaps"}, findings.KindHostStall: {"stall of the recording host", "stalls of the recording host"},
	findings.KindMissedTick: {"spell of missed ticks", "spells of missed ticks"}, findings.KindScrapeErr: {"spell of failed scrapes", "spells of failed scrapes"},
	findings.KindSlow: {"slow scrape spell", "slow scrape spells"}, findings.KindRefused: {"spell of refused windows", "spells of refused windows"},
	findings.KindRestart: {"restart", "restarts"}, findings.KindDown: {"time down", "times down"}, findings.KindUp: {"return", "returns"},
	findings.KindLabelJoin: {"label set joining", "label sets joining"}, findings.KindLabelLeave: {"label set leaving", "label sets leaving"},
	findings.KindEngineStall: {"engine stall", "engine stalls"},
	findings.KindTargetJoin:  {"target joining", "targets joining"}, findings.KindTargetLeave: {"target leaving", "targets leaving"},
}

// IncidentNoun names n incidents of kind in words.
func IncidentNoun(kind string, n int) string {
	w, ok := incidentNouns[kind]
	if !ok {
		return strings.ReplaceAll(kind, "_", " ")
	}
	if n == 1 {
		return w[0]
	}
	return w[1]
}
