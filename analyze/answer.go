package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
)

// AnswerFigures are the figures of the answer, in order: each target's busy
// figures (Summary.Busy) and the fleet's (FleetBusy) under these names.
// The quantiles are as fine as the engine's buckets; the exact means
// (Δsum/Δcount) of ITL and e2e stand beside them.
var AnswerFigures = []string{
	engine.DecodeTokensPerSecond, engine.PromptTokensPerSecond,
	engine.TTFT + "__p50", engine.TTFT + "__p99", engine.ITL + "__p50", engine.ITL + "__p99",
	engine.ITL + engine.SuffixMean, engine.E2E + engine.SuffixMean,
	"requests_waiting__max", "kv_cache_usage_ratio__max",
}

// Answer is the run's answer at a glance: a row per target, then one for
// the fleet, each with a status word and its reason. The figures of a row
// are the target's busy figures (Target.Summary.Busy), the fleet's
// FleetBusy; the answer adds what a reader judges them by.
type Answer struct {
	Rows []AnswerRow `json:"rows"`
	// Phases has a row per named phase (a --phases file, marks, else the
	// client's stages) and target, in time order, each judged over its
	// phase alone: where phases are named they answer, every load level
	// its own row, and the busy figures of Rows (every steady phase
	// blended) are not the answer. Empty when nothing is named.
	Phases []PhaseRow `json:"phases"`
}

// PhaseRow is the answer of one target over one named phase: its status
// judged over the phase, with the phase's concurrency. Its figures are
// the target's in the phase's entry of the phases list.
type PhaseRow struct {
	AnswerRow
	Phase  string  `json:"phase"`
	Source string  `json:"source"` // where the phase was named: file, mark, client
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
	// Concurrency is the engine's mean requests running plus waiting over
	// the phase (its gauges at the good polls); null when it publishes
	// neither. ClientConcurrency is the client's mean requests in flight
	// over the same phase, when a client record names it; null without.
	Concurrency       rate.Num `json:"concurrency"`
	ClientConcurrency rate.Num `json:"client_concurrency"`
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
	a.Phases = r.phaseRows()
	return a
}

// phaseRows are the answer's rows per named phase and target, in time
// order. The client's phases answer only when no file or mark names any:
// a client phase named like one of those is the same stage again.
func (r *Result) phaseRows() []PhaseRow {
	out := []PhaseRow{}
	given := slices.ContainsFunc(r.Output.Phases, func(m phases.Measured) bool {
		return m.Kind == phases.KindNamed && m.Source != client.Source
	})
	for _, m := range r.Output.Phases {
		// Found phases are the busy rows' own; client phases yield to given ones.
		if m.Kind != phases.KindNamed || (given && m.Source == client.Source) {
			continue
		}
		for k := range m.Targets {
			figs := &m.Targets[k]
			t := r.target(figs.Target)
			if t == nil {
				continue
			}
			row := PhaseRow{Phase: m.Name, Source: m.Source, Start: m.Start, End: m.End,
				Concurrency: concurrency(figs), ClientConcurrency: r.clientConcurrency(m.Name, m.Start, m.End)}
			row.AnswerRow = judge(t, figs, r.Incidents, "the phase")
			out = append(out, row)
		}
	}
	return out
}

// target is the target named name; nil when none is.
func (r *Result) target(name string) *Target {
	for i := range r.Targets {
		if r.Targets[i].Name == name {
			return &r.Targets[i]
		}
	}
	return nil
}

// concurrency is the mean requests running plus waiting of figs; null
// when neither gauge was read, the one read alone when the other is null.
func concurrency(figs *phases.Figures) rate.Num {
	run, ok1 := figs.Get("requests_running__mean")
	wait, ok2 := figs.Get("requests_waiting__mean")
	switch {
	case ok1 && run.Value.Valid && ok2 && wait.Value.Valid:
		return rate.Some(run.Value.V + wait.Value.V)
	case ok1 && run.Value.Valid:
		return run.Value
	}
	return rate.Num{}
}

// clientConcurrency is the client's mean requests in flight over the
// phase named name with these bounds (its own, or renamed "client: NAME"
// where a file or marks named it too); null when no client record has it.
func (r *Result) clientConcurrency(name string, start, end float64) rate.Num {
	if r.Client == nil {
		return rate.Num{}
	}
	for _, f := range r.Client.Files {
		for _, sd := range f.Sides {
			if (sd.Phase != name && sd.Phase != "client: "+name) || !phases.Same(sd.Start, sd.End, start, end) {
				continue
			}
			for _, row := range sd.Rows {
				if row.Quantity == client.FConcMean && row.Client.Value.Valid {
					return row.Client.Value
				}
			}
		}
	}
	return rate.Num{}
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
			kinds[IncidentKey(&in)]++
		}
	}
	b := &t.Summary.Busy
	// No poll at all: nothing was measured; say how often it was asked.
	if t.Summary.Polls == 0 {
		row.Status, row.Reason = StatusWithheld, neverAnswered(t, incidents)
		// Answered, but every page was stored unparsed: up, unparsed.
		if n := t.Scrapes["parse_error"]; n > 0 {
			row.Reason = fmt.Sprintf("up, unparsed: %d page(s) answered and stored unparsed (over a parse limit, or malformed: llmrec inspect names why)", n)
		}
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
	j := judge(t, b, incidents, "its steady phases")
	row.Status, row.Reason = j.Status, j.Reason
	if row.Status == StatusOK && len(kinds) > 0 {
		row.Reason += " (elsewhere: " + IncidentWords(kinds) + ")"
	}
	return row
}

// judge is the status of target t's figures b measured over where ("its
// steady phases", "the phase"), by the first rule that holds, with the
// incidents of t inside them counted.
func judge(t *Target, b *phases.Figures, incidents []findings.Incident, where string) AnswerRow {
	row := AnswerRow{Target: t.Name}
	inside := map[string]int{}
	for _, in := range incidents {
		if !(string(in.Target) == t.Name || in.Target == "" && slices.Contains(in.Targets, t.Name)) || !overlaps(&in, b.Bounds.Windows) {
			continue
		}
		row.Incidents++
		if degrading[in.Kind] {
			inside[in.Kind]++
		}
	}
	// No good poll in the windows: nothing was measured.
	if d, ok := b.Get(engine.DecodeTokensPerSecond); !ok || !d.Value.Valid {
		why := b.Bounds.Reason
		if why == "" && ok {
			why = d.Reason
		}
		row.Status, row.Reason = StatusWithheld, "decode not measured: "+strings.ReplaceAll(why, "_", " ")
		return row
	}
	var why []string
	left, zero := len(b.Bounds.RestartsLeftOut), len(b.Bounds.FromZero)
	if n := max(inside[findings.KindRestart], left+zero); n > 0 {
		how := "the intervals across left out"
		switch {
		case zero > 0 && left == 0:
			how = "each process differenced on its own, the new one counted from 0"
		case zero > 0:
			how = fmt.Sprintf("%d interval(s) across left out, %d new process(es) counted from 0", left, zero)
		}
		why = append(why, fmt.Sprintf("%d %s in %s (%s)", n, IncidentNoun(findings.KindRestart, n), where, how))
	}
	delete(inside, findings.KindRestart)
	if len(inside) > 0 {
		why = append(why, IncidentWords(inside)+" in "+where+" (counted across, unseen by any poll)")
	}
	if c := b.Bounds.Coverage; c.Valid && c.V < minCoverage && !cadenceOnly(&b.Bounds) {
		why = append(why, fmt.Sprintf("its counters cover only %.0f %% of %s", 100*c.V, where))
	}
	if len(why) > 0 {
		row.Status, row.Reason = StatusDegraded, strings.Join(why, "; ")
		return row
	}
	row.Status, row.Reason = StatusOK, "nothing went wrong in "+where
	return row
}

// minCoverage is the least share of its steady phases a target's
// counters must be differenced over for its row to be ok.
const minCoverage = 0.9

// cadenceOnly reports whether what the counters do not cover of the
// windows is no more than the polling cadence leaves out: up to an
// interval at each end of each window, before its first good poll and
// after its last (a short named phase at a long interval).
func cadenceOnly(b *phases.Bounds) bool {
	// No interval measured: nothing to weigh the cadence by.
	// A restart's interval left out is not the cadence's.
	if b.Intervals == 0 || !b.Coverage.Valid || b.Coverage.V <= 0 || len(b.RestartsLeftOut) > 0 {
		return false
	}
	length := b.Seconds / b.Coverage.V
	return length-b.Seconds <= 2*float64(len(b.Windows))*b.Seconds/float64(b.Intervals)
}

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

// refusedAs names a spell of refused windows by its gate's reason.
var refusedAs = map[string]string{
	rate.ReasonJump: "refused as jumps", rate.ReasonStale: "refused as stale", rate.ReasonFloor: "refused under the floor",
	rate.ReasonCeiling: "refused over the ceiling",
}

// IncidentKey is the key an incident is counted under in words
// (IncidentWords): its kind, and for a spell of refused windows the
// gate's reason as well ("refused:jump"), so that it is named for what
// refused it, never taken for a restart.
func IncidentKey(in *findings.Incident) string {
	if in.Kind == findings.KindRefused && in.Gate != "" {
		return in.Kind + ":" + string(in.Gate)
	}
	return in.Kind
}

// IncidentNoun names n incidents of kind (an IncidentKey) in words.
func IncidentNoun(kind string, n int) string {
	if gate, ok := strings.CutPrefix(kind, findings.KindRefused+":"); ok {
		as := refusedAs[gate]
		if as == "" {
			as = "refused (" + strings.ReplaceAll(gate, "_", " ") + ")"
		}
		if n == 1 {
			return "spell of windows " + as
		}
		return "spells of windows " + as
	}
	w, ok := incidentNouns[kind]
	if !ok {
		return strings.ReplaceAll(kind, "_", " ")
	}
	if n == 1 {
		return w[0]
	}
	return w[1]
}

// incidentEffects say what an incident kind does to the figures of a phase
// it falls in (the phase figures are the counters' Δ between good polls).
var incidentEffects = map[string]string{
	findings.KindRestart:     "the interval across a restart is left out, the counters differenced per process",
	findings.KindGap:         "a gap, a stall or failed scrapes are counted across: the counters' Δ spans them, nothing was seen inside",
	findings.KindHostStall:   "a gap, a stall or failed scrapes are counted across: the counters' Δ spans them, nothing was seen inside",
	findings.KindMissedTick:  "a gap, a stall or failed scrapes are counted across: the counters' Δ spans them, nothing was seen inside",
	findings.KindScrapeErr:   "a gap, a stall or failed scrapes are counted across: the counters' Δ spans them, nothing was seen inside",
	findings.KindDown:        "a gap, a stall or failed scrapes are counted across: the counters' Δ spans them, nothing was seen inside",
	findings.KindEngineStall: "an engine stall is in the figures: the engine made no progress for a while",
	findings.KindRefused:     "refused windows withhold only the values published per poll: the phase figures difference the counters across them",
	findings.KindSlow:        "slow scrapes blur their polls' stamps: a poll not sure to a quarter interval ends no phase figure",
	findings.KindLabelJoin:   "a label set joined or left: the sums change their members there",
	findings.KindLabelLeave:  "a label set joined or left: the sums change their members there",
	findings.KindTargetJoin:  "the target was out of the target set for a while: its counters are differenced across the time away",
	findings.KindTargetLeave: "the target was out of the target set for a while: its counters are differenced across the time away",
}

// IncidentEffects says, once each, what incidents of these kinds (or
// IncidentKeys) do to the figures of a phase they fall in, in the order of
// the kinds' names.
func IncidentEffects(kinds map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		k, _, _ = strings.Cut(k, ":")
		if e := incidentEffects[k]; e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return strings.Join(out, "; ")
}
