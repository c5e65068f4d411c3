// Package diff compares a candidate's recordings with a baseline's: per
// aligned phase, per target (and the fleet) and per quantity, the baseline
// and candidate values with their spread, the change with its confidence
// interval, a significance test and a verdict. It returns plain data for
// JSON; rendering it is package render's job.
//
// Phases are aligned by name (named phases, given by a file or marked while
// recording, on both sides), else by order of each target's steady phases
// when both sides have as many at matching load levels (mean running
// requests within a factor LevelFactor), else over each target's busy time
// (its steady phases together). Targets are matched by name, or with
// MatchEngine by engine: the k-th target of an engine on one side with the
// k-th of the same engine on the other, by name.
//
// The samples compared are never overlapping polls: with at least two run
// folders (repeats) on each side, one value per repeat (the phase figure of
// each, from the engine's own counters across the phase); with one on
// either side, the phase's non-overlapping blocks (phases.Figure.Blocks,
// computed like the figure over consecutive windows of the phase), pooled
// over the repeats. Package stat compares them: medians, Mann-Whitney U, and
// the change's Hodges-Lehmann interval.
//
// The verdict of a row (see Verdict):
//   - insufficient: the samples cannot support a verdict (fewer than
//     stat.MinValues values on a side, a quantity one side does not
//     publish); the row says what is missing;
//   - unlike: a seam makes the two sides different things (another
//     engine, engine version or model): the numbers are shown, no verdict
//     is issued across it;
//   - better or worse: the test is significant at Alpha AND the change's
//     whole confidence interval lies beyond the quantity's noise threshold
//     on one side (higher is better for throughputs and ratios, lower for
//     latencies, preemptions and KV usage);
//   - ~: anything else, with the interval.
//
// A quantile whose figures on both sides fell in one histogram bucket is
// insufficient ("inside (a, b]") whatever the samples said: inside a bucket
// the value is an interpolation, and the quantity's mean row (Δsum/Δcount,
// exact) decides.
//
// Requiring both keeps the false-positive rate of A/A comparisons at most
// Alpha (the test alone controls it; the threshold only removes verdicts).
package diff

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/diff/stat"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Schema names the version of the JSON document (docs/diff-format.md).
const Schema = "llmrec.diff/1"

// Verdicts of a row.
const (
	Better       = "better"
	Worse        = "worse"
	Same         = "~"
	Insufficient = "insufficient"
	Unlike       = "unlike"
)

// Ways phases are aligned.
const (
	ByName  = "name"  // named phases of the same name
	ByOrder = "order" // the k-th steady phase of each side, at a matching load level
	ByBusy  = "busy"  // each target's busy time: its steady phases together
)

// Ways targets are matched.
const (
	MatchName   = "name"
	MatchEngine = "engine"
)

// FleetTarget is the target name of the fleet's rows (named phases only).
const FleetTarget = "fleet"

// LevelFactor is how far apart two steady phases' mean running requests
// may be and still be one load level.
const LevelFactor = 1.25

// Defaults of Options.
const (
	DefaultAlpha = 0.05
	DefaultConf  = 0.95
)

// Side is one side of the comparison: one analysis per run folder, each a
// repeat of one configuration.
type Side struct {
	Dirs []string
	Runs []*analyze.Result
	// Polls are the first run's per-poll values of the quantities' cells,
	// for the charts; nil: no charts.
	Polls *Polls
}

// Options shape a comparison.
type Options struct {
	// Phase keeps only the aligned phase of this name ("" every one).
	Phase string
	// Match is MatchName (default) or MatchEngine.
	Match string
	// Thresholds are the noise thresholds; nil: DefaultThreshold for
	// every quantity.
	Thresholds *Thresholds
	// Alpha is the test's level (default 0.05), Conf the intervals'
	// confidence (default 0.95).
	Alpha, Conf float64
	Generator   string
}

// Report is the comparison, plain data for JSON (docs/diff-format.md).
// Slices are never nil.
type Report struct {
	Schema    string   `json:"schema"`
	Generator string   `json:"generator"`
	Settings  Settings `json:"settings"`
	Baseline  SideInfo `json:"baseline"`
	Candidate SideInfo `json:"candidate"`
	// Seams are what makes the two sides unlike, at the top: a blocking
	// one leaves the rows it concerns without a verdict.
	Seams []Seam `json:"seams"`
	// Phases are the aligned phases, per target pair.
	Phases []Aligned `json:"phases"`
	Rows   []Row     `json:"rows"`
	// NotCompared are quantities neither side published, by phase and
	// target: "TTFT p50 on llama: not published on either side"; and the
	// client's cuts of marked phases, compared under the marks' names.
	NotCompared []string `json:"not_compared"`
	// Sweeps are the first runs' sweep curves side by side, per target
	// pair (and the fleet) where both sides have two levels or more.
	Sweeps []SweepDiff `json:"sweeps"`
	// Charts are the per-quantity series drawn on the page (not in JSON).
	Charts []Chart `json:"-"`
}

// Settings are the options the comparison ran with.
type Settings struct {
	Alpha      float64    `json:"alpha"`
	Conf       float64    `json:"conf"`
	Thresholds Thresholds `json:"thresholds"`
	Match      string     `json:"match"`
	Phase      string     `json:"phase,omitempty"`
	// Samples says what the compared values are: "repeats" (one value
	// per run folder) or "blocks" (non-overlapping blocks of each phase).
	Samples string `json:"samples"`
	Rule    string `json:"rule"`
}

// Rule is the verdict rule in words.
const Rule = "better or worse only when the test is significant at alpha and the change's whole confidence interval lies beyond the quantity's threshold on one side; unlike across an engine, version or model seam; insufficient when a side has too few values, or a quantile falls in one histogram bucket on both sides (the mean row decides); ~ otherwise"

// SideInfo describes one side.
type SideInfo struct {
	Dirs    []string `json:"dirs"`
	Repeats int      `json:"repeats"`
	Targets []string `json:"targets"`
}

// Seam kinds.
const (
	SeamEngine    = "engine"
	SeamVersion   = "version"
	SeamModel     = "model"
	SeamTokenizer = "tokenizer"
	SeamGates     = "gates"
	SeamSpan      = "span"
	SeamCadence   = "cadence"
	SeamEngines   = "engines"   // the number of engines
	SeamTarget    = "target"    // a target on one side only
	SeamPhase     = "phase"     // a phase on one side only, or an alignment fallen back
	SeamIncidents = "incidents" // incidents inside a compared phase
	SeamSource    = "source"    // imported from a metrics store on one side only
)

// Seam is one way the two sides differ.
type Seam struct {
	Kind      string `json:"kind"`
	Target    string `json:"target,omitempty"`
	Phase     string `json:"phase,omitempty"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Blocks is true when no verdict is issued across the seam: the rows
	// of Target (every target when "") are unlike.
	Blocks bool   `json:"blocks"`
	Detail string `json:"detail"`
}

// Aligned is one aligned phase of a target pair.
type Aligned struct {
	Name       string `json:"name"`
	CandName   string `json:"candidate_name"`
	By         string `json:"aligned_by"`
	Target     string `json:"target"`
	CandTarget string `json:"candidate_target"`
	// Baseline and Candidate are the phase's bounds in the first run of
	// each side, Unix seconds (for busy: the first steady phase's start
	// and the last one's end).
	Baseline  [2]float64 `json:"baseline"`
	Candidate [2]float64 `json:"candidate"`
	// Incidents inside the phase on each side's first run, by kind.
	BaselineIncidents  map[string]int `json:"baseline_incidents"`
	CandidateIncidents map[string]int `json:"candidate_incidents"`
}

// Row is one quantity of one aligned phase and target.
type Row struct {
	Phase      string `json:"phase"`
	Target     string `json:"target"`
	CandTarget string `json:"candidate_target"`
	// Origin says who measured the row: "server" (the engines' counters)
	// or "client" (the load generator's own record; target "client").
	Origin   string `json:"origin"`
	Quantity string `json:"quantity"`
	Label    string `json:"label"`
	Unit     string `json:"unit"`
	Better   string `json:"better"`
	// Baseline and Candidate are each side's phase figure (the first
	// run's, from the engine's own counters across the phase) and the
	// samples' median and interval.
	Baseline  Value `json:"baseline"`
	Candidate Value `json:"candidate"`
	// Change is candidate/baseline − 1 of the samples, with its interval
	// at Conf; null where undefined.
	Change   rate.Num `json:"change"`
	ChangeLo rate.Num `json:"change_lo"`
	ChangeHi rate.Num `json:"change_hi"`
	P        rate.Num `json:"p"`
	Method   string   `json:"method"`
	// Samples is "repeats", "blocks" or, for the client's latency and
	// error rows, "requests".
	Samples string `json:"samples"`
	// Threshold is the quantity's noise threshold: a fraction of the
	// baseline, or for a ratio compared in points (Quantity.Points) the
	// points themselves (0.05: 5 points).
	Threshold float64 `json:"threshold"`
	// Shift is the change in the quantity's own unit (candidate −
	// baseline, the Hodges-Lehmann shift) with its interval, for a ratio
	// compared in points; null for the others.
	Shift   rate.Num `json:"shift"`
	ShiftLo rate.Num `json:"shift_lo"`
	ShiftHi rate.Num `json:"shift_hi"`
	// NeedSeconds, for a row insufficient because a side's phase was too
	// short for blocks, is the length between good polls the phase would
	// need at its cadence (phases.Blocks.NeedSeconds, the longer side's);
	// 0 otherwise.
	NeedSeconds float64 `json:"need_seconds,omitempty"`
	Verdict     string  `json:"verdict"`
	// Why says what the verdict rests on, or what is missing.
	Why string `json:"why"`
	// Notes name the seams and incidents that touch the row.
	Notes []string `json:"notes"`
}

// Value is one side of a row.
type Value struct {
	Figure rate.Num `json:"figure"`
	Source string   `json:"source"`
	Reason string   `json:"reason,omitempty"`
	N      int      `json:"n"`
	Median rate.Num `json:"median"`
	Lo     rate.Num `json:"lo"`
	Hi     rate.Num `json:"hi"`
	// Bucket is, for a quantile, the histogram bucket the first run's
	// figure fell in and its flags.
	Bucket rate.Bucket `json:"bucket,omitzero"`
}

// Chart is one quantity of one aligned phase on both sides, on a
// phase-relative time axis (seconds from the phase's start).
type Chart struct {
	Phase, Target, CandTarget string
	Quantity                  Quantity
	Verdict                   string
	// Change is the row's, for the chart's title: relative, or in points
	// (Shift) for a ratio compared in points.
	Change              rate.Num
	Points              bool
	Baseline, Candidate []Point
	// Incidents of each side inside the phase, phase-relative.
	BaselineIncidents, CandidateIncidents []Span
}

// Point is one poll's published value, T seconds from the phase's start.
type Point struct {
	T    float64
	Cell rate.Cell
}

// Span is an incident, phase-relative.
type Span struct {
	From, To float64
	Label    string
}

// unit is an aligned phase with a way to find its figures in any run.
type unit struct {
	Aligned
	base, cand func(r *analyze.Result) *phases.Figures
	fleet      bool
	// client: a named phase the client's file cut (phases' Source
	// "client"); repeats: the unit covers the same stretch of the same
	// target as another named phase, so its charts would repeat that
	// one's (see markRepeats).
	client, repeats bool
}

// Compare compares cand with base. An error is a phase asked for that no
// aligned phase has, or a side with no run.
func Compare(base, cand Side, o Options) (*Report, error) {
	if len(base.Runs) == 0 || len(cand.Runs) == 0 {
		return nil, fmt.Errorf("diff: a side has no run folder")
	}
	o.Alpha = cmp.Or(o.Alpha, DefaultAlpha)
	o.Conf = cmp.Or(o.Conf, DefaultConf)
	o.Match = cmp.Or(o.Match, MatchName)
	th := Thresholds{Default: DefaultThreshold, By: map[string]float64{}}
	if o.Thresholds != nil {
		th.Default = o.Thresholds.Default
		for k, v := range o.Thresholds.By {
			th.By[k] = v
		}
	}
	samples := "blocks"
	if len(base.Runs) >= 2 && len(cand.Runs) >= 2 {
		samples = "repeats"
	}
	b0, c0 := base.Runs[0], cand.Runs[0]
	rep := &Report{Schema: Schema, Generator: o.Generator,
		Settings: Settings{Alpha: o.Alpha, Conf: o.Conf, Thresholds: th, Match: o.Match, Phase: o.Phase, Samples: samples, Rule: Rule},
		Baseline: sideInfo(base), Candidate: sideInfo(cand),
		Seams: []Seam{}, Phases: []Aligned{}, Rows: []Row{}, NotCompared: []string{}, Sweeps: []SweepDiff{}, Charts: []Chart{}}
	pairs := rep.pairTargets(b0, c0, o.Match)
	rep.runSeams(b0, c0)
	units := rep.align(b0, c0, pairs)
	if o.Phase != "" {
		var names []string
		kept := units[:0]
		for _, u := range units {
			names = append(names, u.Name)
			if u.Name == o.Phase {
				kept = append(kept, u)
			}
		}
		if len(kept) == 0 {
			names = slices.Compact(slices.Sorted(slices.Values(names)))
			return nil, fmt.Errorf("diff: --phase %q: no aligned phase of that name%s (aligned: %s)", o.Phase, Suggest(o.Phase, names), strings.Join(names, ", "))
		}
		units = kept
	}
	markRepeats(units)
	for _, u := range units {
		// The client's cut of a marked phase covers the same polls: its
		// engine rows would be the marked phase's again, counted twice.
		u.BaselineIncidents = incidentsIn(b0, u.Target, u.Baseline, u.fleet)
		u.CandidateIncidents = incidentsIn(c0, u.CandTarget, u.Candidate, u.fleet)
		rep.Phases = append(rep.Phases, u.Aligned)
		if u.repeats {
			rep.NotCompared = append(rep.NotCompared, fmt.Sprintf("%s on %s: the client's cut of a marked phase over the same polls, compared once under the marked phase's name", u.Name, u.Target))
			continue
		}
		rep.incidentSeam(&u.Aligned)
		rep.rows(&u, base, cand, o, th, samples)
	}
	rep.clientRows(base, cand, o, th, samples)
	rep.sweeps(&b0.Sweep, &c0.Sweep, pairs)
	return rep, nil
}

func sideInfo(s Side) SideInfo {
	info := SideInfo{Dirs: slices.Clone(s.Dirs), Repeats: len(s.Runs), Targets: []string{}}
	if info.Dirs == nil {
		info.Dirs = []string{}
	}
	for _, t := range s.Runs[0].Targets {
		info.Targets = append(info.Targets, t.Name)
	}
	return info
}

// pair is a baseline target and the candidate target it is compared with.
type pair struct{ base, cand *analyze.Target }

// pairTargets matches the first runs' targets by name or by engine; a
// target left over is a seam.
func (rep *Report) pairTargets(b0, c0 *analyze.Result, match string) []pair {
	var out []pair
	usedC := map[string]bool{}
	if match == MatchEngine {
		byEngine := map[string][]*analyze.Target{}
		for i := range c0.Targets {
			t := &c0.Targets[i]
			byEngine[t.Engine] = append(byEngine[t.Engine], t)
		}
		for i := range b0.Targets {
			t := &b0.Targets[i]
			cs := byEngine[t.Engine]
			// No candidate target of this engine left.
			if len(cs) == 0 {
				rep.Seams = append(rep.Seams, Seam{Kind: SeamTarget, Target: t.Name, Baseline: t.Engine, Candidate: "none",
					Detail: fmt.Sprintf("the baseline's %s (%s) has no %s target on the candidate side to be compared with", t.Name, t.Engine, t.Engine)})
				continue
			}
			out = append(out, pair{t, cs[0]})
			usedC[cs[0].Name] = true
			byEngine[t.Engine] = cs[1:]
		}
	} else {
		for i := range b0.Targets {
			t := &b0.Targets[i]
			j := slices.IndexFunc(c0.Targets, func(c analyze.Target) bool { return c.Name == t.Name })
			if j < 0 {
				rep.Seams = append(rep.Seams, Seam{Kind: SeamTarget, Target: t.Name, Baseline: t.Name, Candidate: "none",
					Detail: fmt.Sprintf("target %s is on the baseline side only (match by engine with --match engine)", t.Name)})
				continue
			}
			out = append(out, pair{t, &c0.Targets[j]})
			usedC[t.Name] = true
		}
	}
	for _, c := range c0.Targets {
		if !usedC[c.Name] {
			rep.Seams = append(rep.Seams, Seam{Kind: SeamTarget, Target: c.Name, Baseline: "none", Candidate: c.Name,
				Detail: fmt.Sprintf("target %s is on the candidate side only", c.Name)})
		}
	}
	for _, p := range out {
		rep.pairSeams(p)
	}
	return out
}

// pairSeams are the seams between a matched pair: engine, version, model.
func (rep *Report) pairSeams(p pair) {
	b, c := p.base, p.cand
	name := b.Name
	if c.Name != b.Name {
		name = b.Name + " ↔ " + c.Name
	}
	if b.Engine != c.Engine {
		rep.Seams = append(rep.Seams, Seam{Kind: SeamEngine, Target: b.Name, Baseline: b.Engine, Candidate: c.Engine, Blocks: true,
			Detail: fmt.Sprintf("%s: engine %s on the baseline, %s on the candidate: their series count different things, so no verdict is issued", name, b.Engine, c.Engine)})
	}
	switch {
	case b.Version != "" && c.Version != "" && b.Version != c.Version:
		rep.Seams = append(rep.Seams, Seam{Kind: SeamVersion, Target: b.Name, Baseline: b.Version, Candidate: c.Version, Blocks: true,
			Detail: fmt.Sprintf("%s: engine version %s on the baseline, %s on the candidate: a version changes what its series count, so no verdict is issued across it (the numbers are shown)", name, b.Version, c.Version)})
	case (b.Version == "") != (c.Version == ""):
		rep.Seams = append(rep.Seams, Seam{Kind: SeamVersion, Target: b.Name, Baseline: cmp.Or(b.Version, "unknown"), Candidate: cmp.Or(c.Version, "unknown"),
			Detail: fmt.Sprintf("%s: the engine version is unknown on one side: compared as if it were the same", name)})
	}
	if (b.Imported == nil) != (c.Imported == nil) {
		bs, cs := sourceText(b), sourceText(c)
		rep.Seams = append(rep.Seams, Seam{Kind: SeamSource, Target: b.Name, Baseline: bs, Candidate: cs,
			Detail: fmt.Sprintf("%s: %s on the baseline, %s on the candidate: the imported side's polls carry the store's scrape times and no bodies, so the checks that read them (stale, slow scrapes, missed ticks, bodies) apply on one side only; the phase figures, from the counters across each phase, do not depend on them", name, bs, cs)})
	}
	switch {
	case b.Model != "" && c.Model != "" && b.Model != c.Model:
		rep.Seams = append(rep.Seams, Seam{Kind: SeamModel, Target: b.Name, Baseline: b.Model, Candidate: c.Model, Blocks: true,
			Detail: fmt.Sprintf("%s: model %s on the baseline, %s on the candidate: different models (and tokenizers, so a token is not the same unit), so no verdict is issued", name, b.Model, c.Model)})
	case b.Model == "" || c.Model == "":
		rep.Seams = append(rep.Seams, Seam{Kind: SeamTokenizer, Target: b.Name, Baseline: cmp.Or(b.Model, "unknown"), Candidate: cmp.Or(c.Model, "unknown"),
			Detail: fmt.Sprintf("%s: the model, and so the tokenizer, is unknown on a side: token counts are compared as if they were the same unit", name)})
	}
}

// sourceText says where a target's polls came from.
func sourceText(t *analyze.Target) string {
	if t.Imported == nil {
		return "recorded"
	}
	return "imported from " + t.Imported.Source
}

// runSeams are the seams of the whole runs: gates, span, cadence, the
// number of engines.
func (rep *Report) runSeams(b0, c0 *analyze.Result) {
	if len(b0.Targets) != len(c0.Targets) {
		rep.Seams = append(rep.Seams, Seam{Kind: SeamEngines, Baseline: fmt.Sprint(len(b0.Targets)), Candidate: fmt.Sprint(len(c0.Targets)),
			Detail: fmt.Sprintf("%d targets on the baseline, %d on the candidate: fleet sums add different numbers of engines, so fleet rows get no verdict", len(b0.Targets), len(c0.Targets))})
	}
	bg, cg := b0.Gates, c0.Gates
	if bg.Span != cg.Span || bg.SpanByKind != cg.SpanByKind {
		rep.Seams = append(rep.Seams, Seam{Kind: SeamSpan, Baseline: spanText(bg), Candidate: spanText(cg),
			Detail: "the published span differs: the per-poll values drawn differ in smoothing; the phase figures and blocks, from the counters across each window, do not depend on it"})
	}
	bg.Span, cg.Span, bg.SpanByKind, cg.SpanByKind = rate.Num{}, rate.Num{}, false, false
	// The completion counters' spans are chosen from each run's data, not
	// configured: not a seam of how the runs were read.
	bg.CompletionSpans, cg.CompletionSpans = nil, nil
	if !reflect.DeepEqual(bg, cg) {
		rep.Seams = append(rep.Seams, Seam{Kind: SeamGates, Baseline: gatesText(b0.Gates), Candidate: gatesText(c0.Gates),
			Detail: "the estimator's gates differ: the published per-poll values refuse different windows; the phase figures are read with every gate off and do not depend on them"})
	}
	bc, cc := cadences(b0), cadences(c0)
	if bc != cc {
		rep.Seams = append(rep.Seams, Seam{Kind: SeamCadence, Baseline: bc, Candidate: cc,
			Detail: "the recording cadence differs: a phase's blocks hold different numbers of polls and its boundary polls fall differently"})
	}
}

func spanText(g analyze.Gates) string {
	if g.SpanByKind {
		return "by counter kind"
	}
	return numText(g.Span) + " s"
}

func gatesText(g analyze.Gates) string {
	return fmt.Sprintf("min_window %s, ceiling %s, jump %s/%s, stale %s", numText(g.MinWindow), numText(g.CeilingFactor),
		numText(g.JumpFactor), numText(g.JumpFloor), numText(g.StaleFraction))
}

func numText(n rate.Num) string {
	if !n.Valid {
		return "off"
	}
	return fmt.Sprintf("%g", n.V)
}

// cadences lists the recorded intervals of a run's targets, distinct.
func cadences(r *analyze.Result) string {
	var xs []string
	for _, in := range r.Inputs {
		for _, rec := range in.Recordings {
			for _, t := range rec.Targets {
				xs = append(xs, fmt.Sprintf("%g s", float64(t.IntervalNs)/1e9))
			}
		}
	}
	slices.Sort(xs)
	return strings.Join(slices.Compact(xs), ", ")
}

// clientSource is the Source of the phases a client file cuts
// (analyze/client.Source).
const clientSource = "client"

// RepeatOverlap is how much of the longer of two named phases of one
// target their overlap must cover, on both sides, for the client's phase
// to repeat the other (a marked phase and the client's own cut of it,
// renamed "client: NAME").
const RepeatOverlap = 0.9

// markRepeats marks the client's named phases that cover the stretch of
// another named phase of the same target: only the other is compared
// (the page drew "client: concurrency 2" beside "concurrency 2", and the
// verdict counted its rows twice).
func markRepeats(units []unit) {
	for i := range units {
		u := &units[i]
		if !u.client {
			continue
		}
		for _, v := range units {
			if !v.client && v.By == ByName && v.Target == u.Target &&
				overlaps(u.Baseline, v.Baseline) && overlaps(u.Candidate, v.Candidate) {
				u.repeats = true
				break
			}
		}
	}
}

// overlaps reports whether a and b overlap by at least RepeatOverlap of
// the longer.
func overlaps(a, b [2]float64) bool {
	in := min(a[1], b[1]) - max(a[0], b[0])
	long := max(a[1]-a[0], b[1]-b[0])
	return long > 0 && in >= RepeatOverlap*long
}

// named are a run's named phases.
func named(r *analyze.Result) []*phases.Measured {
	var out []*phases.Measured
	for i := range r.Phases {
		if r.Phases[i].Kind == phases.KindNamed {
			out = append(out, &r.Phases[i])
		}
	}
	return out
}

// steady are a run's steady phases of target.
func steady(r *analyze.Result, target string) []*phases.Measured {
	var out []*phases.Measured
	for i := range r.Phases {
		if p := &r.Phases[i]; p.Kind == phases.KindSteady && p.Target == target {
			out = append(out, p)
		}
	}
	return out
}

func targetFigures(m *phases.Measured, target string) *phases.Figures {
	for i := range m.Targets {
		if m.Targets[i].Target == target {
			return &m.Targets[i]
		}
	}
	return nil
}

func fleetFigures(m *phases.Measured) *phases.Figures {
	if m.Fleet == nil {
		return nil
	}
	return &phases.Figures{Target: FleetTarget, Figures: m.Fleet.Figures}
}

// align aligns the phases of each pair: by name when both sides have named
// phases, else by order of steady phases, else busy time.
func (rep *Report) align(b0, c0 *analyze.Result, pairs []pair) []unit {
	bn, cn := named(b0), named(c0)
	if len(bn) > 0 && len(cn) > 0 {
		return rep.alignNamed(bn, cn, pairs)
	}
	if len(bn) > 0 || len(cn) > 0 {
		side := "baseline"
		if len(cn) > 0 {
			side = "candidate"
		}
		rep.Seams = append(rep.Seams, Seam{Kind: SeamPhase, Baseline: fmt.Sprintf("%d named", len(bn)), Candidate: fmt.Sprintf("%d named", len(cn)),
			Detail: fmt.Sprintf("named phases on the %s side only: phases are aligned by the steady phases found instead", side)})
	}
	var out []unit
	for _, p := range pairs {
		out = append(out, rep.alignOrder(b0, c0, p)...)
	}
	return out
}

func (rep *Report) alignNamed(bn, cn []*phases.Measured, pairs []pair) []unit {
	var out []unit
	for _, b := range bn {
		j := slices.IndexFunc(cn, func(c *phases.Measured) bool { return c.Name == b.Name })
		if j < 0 {
			rep.Seams = append(rep.Seams, Seam{Kind: SeamPhase, Phase: b.Name, Baseline: b.Name, Candidate: "none", Blocks: true,
				Detail: fmt.Sprintf("phase %s is on the baseline side only: not compared", b.Name)})
			continue
		}
		c := cn[j]
		name := b.Name
		for _, p := range pairs {
			bt, ct := p.base.Name, p.cand.Name
			out = append(out, unit{Aligned: Aligned{Name: name, CandName: name, By: ByName, Target: bt, CandTarget: ct,
				Baseline: [2]float64{b.Start, b.End}, Candidate: [2]float64{c.Start, c.End}}, client: b.Source == clientSource,
				base: func(r *analyze.Result) *phases.Figures { return namedFigures(r, name, bt) },
				cand: func(r *analyze.Result) *phases.Figures { return namedFigures(r, name, ct) }})
		}
		if len(pairs) > 1 {
			out = append(out, unit{Aligned: Aligned{Name: name, CandName: name, By: ByName, Target: FleetTarget, CandTarget: FleetTarget,
				Baseline: [2]float64{b.Start, b.End}, Candidate: [2]float64{c.Start, c.End}}, fleet: true,
				base: func(r *analyze.Result) *phases.Figures { return namedFigures(r, name, "") },
				cand: func(r *analyze.Result) *phases.Figures { return namedFigures(r, name, "") }})
		}
	}
	for _, c := range cn {
		if !slices.ContainsFunc(bn, func(b *phases.Measured) bool { return b.Name == c.Name }) {
			rep.Seams = append(rep.Seams, Seam{Kind: SeamPhase, Phase: c.Name, Baseline: "none", Candidate: c.Name, Blocks: true,
				Detail: fmt.Sprintf("phase %s is on the candidate side only: not compared", c.Name)})
		}
	}
	return out
}

// namedFigures are the figures of target ("": the fleet) over the named
// phase name of r; nil when r has no such phase.
func namedFigures(r *analyze.Result, name, target string) *phases.Figures {
	for _, m := range named(r) {
		if m.Name != name {
			continue
		}
		if target == "" {
			return fleetFigures(m)
		}
		return targetFigures(m, target)
	}
	return nil
}

// level is a steady phase's load level: its mean running requests.
func level(f *phases.Figures) rate.Num {
	if f == nil {
		return rate.Num{}
	}
	g, _ := f.Get("requests_running__mean")
	return g.Value
}

func (rep *Report) alignOrder(b0, c0 *analyze.Result, p pair) []unit {
	bt, ct := p.base.Name, p.cand.Name
	bs, cs := steady(b0, bt), steady(c0, ct)
	why := ""
	switch {
	case len(bs) == 0 || len(cs) == 0:
		why = fmt.Sprintf("%d steady phases on the baseline, %d on the candidate", len(bs), len(cs))
	case len(bs) != len(cs):
		why = fmt.Sprintf("%d steady phases on the baseline, %d on the candidate: not aligned by order", len(bs), len(cs))
	default:
		for k := range bs {
			lb, lc := level(targetFigures(bs[k], bt)), level(targetFigures(cs[k], ct))
			if !lb.Valid || !lc.Valid || lb.V <= 0 || lc.V <= 0 || math.Abs(math.Log(lc.V/lb.V)) > math.Log(LevelFactor) {
				why = fmt.Sprintf("steady phase %d runs %s requests on the baseline, %s on the candidate: not one load level", k+1, numText(lb), numText(lc))
				break
			}
		}
	}
	// Not aligned by order: the busy time of each, saying why.
	if why != "" {
		rep.Seams = append(rep.Seams, Seam{Kind: SeamPhase, Target: bt, Phase: "busy", Baseline: fmt.Sprintf("%d steady", len(bs)), Candidate: fmt.Sprintf("%d steady", len(cs)),
			Detail: fmt.Sprintf("%s: %s; compared over the busy time (the steady phases together)", bt, why)})
		u := unit{Aligned: Aligned{Name: "busy", CandName: "busy", By: ByBusy, Target: bt, CandTarget: ct,
			Baseline: busySpan(bs), Candidate: busySpan(cs)},
			base: func(r *analyze.Result) *phases.Figures { return busyFigures(r, bt) },
			cand: func(r *analyze.Result) *phases.Figures { return busyFigures(r, ct) }}
		return []unit{u}
	}
	var out []unit
	for k := range bs {
		out = append(out, unit{Aligned: Aligned{Name: bs[k].Name, CandName: cs[k].Name, By: ByOrder, Target: bt, CandTarget: ct,
			Baseline: [2]float64{bs[k].Start, bs[k].End}, Candidate: [2]float64{cs[k].Start, cs[k].End}},
			base: func(r *analyze.Result) *phases.Figures { return steadyFigures(r, bt, k) },
			cand: func(r *analyze.Result) *phases.Figures { return steadyFigures(r, ct, k) }})
	}
	return out
}

func busySpan(ms []*phases.Measured) [2]float64 {
	if len(ms) == 0 {
		return [2]float64{}
	}
	return [2]float64{ms[0].Start, ms[len(ms)-1].End}
}

func busyFigures(r *analyze.Result, target string) *phases.Figures {
	for i := range r.Targets {
		if r.Targets[i].Name == target {
			return &r.Targets[i].Summary.Busy
		}
	}
	return nil
}

// steadyFigures are the figures of target's k-th steady phase in r; nil
// when r has fewer.
func steadyFigures(r *analyze.Result, target string, k int) *phases.Figures {
	ss := steady(r, target)
	if k >= len(ss) {
		return nil
	}
	return targetFigures(ss[k], target)
}

// incidentsIn counts the incidents of target (any target for the fleet)
// that overlap span, by kind.
func incidentsIn(r *analyze.Result, target string, span [2]float64, fleet bool) map[string]int {
	out := map[string]int{}
	for _, inc := range r.Incidents {
		if !fleet && string(inc.Target) != target {
			continue
		}
		a, b := incidentSpan(&inc)
		if b < span[0] || a > span[1] {
			continue
		}
		out[analyze.IncidentKey(&inc)]++
	}
	return out
}

// incidentSpan is an incident's time range: [start, end], or its instant.
func incidentSpan(inc *findings.Incident) (float64, float64) {
	switch {
	case inc.Start.Valid && inc.End.Valid:
		return inc.Start.V, inc.End.V
	case inc.Start.Valid:
		return inc.Start.V, math.Inf(1)
	case inc.T.Valid:
		return inc.T.V, inc.T.V
	}
	return math.Inf(-1), math.Inf(-1)
}

// incidentSeam names the incidents inside an aligned phase.
func (rep *Report) incidentSeam(a *Aligned) {
	if len(a.BaselineIncidents) == 0 && len(a.CandidateIncidents) == 0 {
		return
	}
	rep.Seams = append(rep.Seams, Seam{Kind: SeamIncidents, Target: a.Target, Phase: a.Name,
		Baseline: kinds(a.BaselineIncidents), Candidate: kinds(a.CandidateIncidents),
		Detail: fmt.Sprintf("%s, %s: incidents inside the compared phase (baseline: %s; candidate: %s): %s",
			a.Name, a.Target, kinds(a.BaselineIncidents), kinds(a.CandidateIncidents), effects(a))})
}

// kinds lists counts by kind in words, "3 gaps, 1 restart"; "none".
func kinds(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	return analyze.IncidentWords(m)
}

// effects says what the incidents of both sides of a do to its figures.
func effects(a *Aligned) string {
	all := maps.Clone(a.BaselineIncidents)
	if all == nil {
		all = map[string]int{}
	}
	for k, n := range a.CandidateIncidents {
		all[k] += n
	}
	return analyze.IncidentEffects(all)
}

// rows compares every quantity of unit u.
func (rep *Report) rows(u *unit, base, cand Side, o Options, th Thresholds, samples string) {
	blocking := rep.blockingSeams(u)
	for _, q := range Quantities {
		bf, bxs, bb := gather(base.Runs, u.base, q.Figure, samples)
		cf, cxs, cb := gather(cand.Runs, u.cand, q.Figure, samples)
		// Neither side published it: no row, a line saying so.
		if !bf.Value.Valid && !cf.Value.Valid && len(bxs) == 0 && len(cxs) == 0 {
			if !u.fleet || slices.Contains(fleetKeys, q.Key) {
				rep.NotCompared = append(rep.NotCompared, fmt.Sprintf("%s on %s, %s: %s", q.Label, u.Target, u.Name, absentWhy(bf, cf)))
			}
			continue
		}
		r := stat.Compare(bxs, cxs, o.Conf)
		row := Row{Phase: u.Name, Target: u.Target, CandTarget: u.CandTarget, Origin: OriginServer, Quantity: q.Key, Label: q.Label, Unit: q.Unit, Better: q.Better,
			Baseline: value(bf, r.Base), Candidate: value(cf, r.Cand),
			Change: num(r.Change), ChangeLo: num(r.ChangeLo), ChangeHi: num(r.ChangeHi), P: num(r.P), Method: r.Method,
			Samples: samples, Threshold: th.For(q), Notes: []string{}}
		row.Verdict, row.Why = verdict(r, q, row.Threshold, o.Alpha, blocking, samples, u.fleet)
		row.Baseline.Bucket, row.Candidate.Bucket = bf.Bucket, cf.Bucket
		if v, why, ok := oneBucket(row.Verdict, q, bb, cb); ok {
			row.Verdict, row.Why = v, why+"; the samples: "+row.Why
		}
		// A ratio compared in points: its shift against ±Threshold points.
		if q.Points > 0 && r.Insufficient == "" {
			est, lo, hi := stat.Shift(bxs, cxs, o.Conf)
			row.Shift, row.ShiftLo, row.ShiftHi = num(est), num(lo), num(hi)
			if blocking == "" {
				row.Verdict, row.Why = pointsVerdict(r, est, lo, hi, q, row.Threshold, o.Alpha)
			}
		}
		// Too short for blocks: the length the phase would need.
		if row.Verdict == Insufficient && r.Insufficient != "" && samples == "blocks" && !u.fleet {
			row.NeedSeconds = max(needSeconds(bf), needSeconds(cf))
			if row.NeedSeconds > 0 {
				row.Why = fmt.Sprintf("%s (blocks of the phase: it needs at least %s between good polls at its cadence)", r.Insufficient, secondsText(row.NeedSeconds))
			}
		}
		if n := kinds(u.BaselineIncidents); n != "none" {
			row.Notes = append(row.Notes, "baseline incidents inside: "+n)
		}
		if n := kinds(u.CandidateIncidents); n != "none" {
			row.Notes = append(row.Notes, "candidate incidents inside: "+n)
		}
		if u.By != ByName && u.Name != u.CandName {
			row.Notes = append(row.Notes, fmt.Sprintf("baseline %s aligned with candidate %s by %s", u.Name, u.CandName, u.By))
		}
		rep.Rows = append(rep.Rows, row)
		if base.Polls != nil && cand.Polls != nil && q.Cell != "" && !u.fleet {
			change := row.Change
			if q.Points > 0 {
				change = row.Shift
			}
			rep.Charts = append(rep.Charts, Chart{Phase: u.Name, Target: u.Target, CandTarget: u.CandTarget, Quantity: q, Verdict: row.Verdict,
				Change: change, Points: q.Points > 0,
				Baseline:           base.Polls.points(u.Target, q.Cell, u.Baseline),
				Candidate:          cand.Polls.points(u.CandTarget, q.Cell, u.Candidate),
				BaselineIncidents:  spans(base.Runs[0], u.Target, u.Baseline, "baseline"),
				CandidateIncidents: spans(cand.Runs[0], u.CandTarget, u.Candidate, "candidate")})
		}
	}
}

// fleetKeys are the quantities a fleet figure exists for.
var fleetKeys = []string{"decode", "prompt", "requests", "preemptions"}

// blockingSeams are the seams that leave u's rows without a verdict, as one
// sentence; "" none.
func (rep *Report) blockingSeams(u *unit) string {
	var why []string
	for _, s := range rep.Seams {
		if !s.Blocks || s.Kind == SeamPhase {
			continue
		}
		if s.Target == "" || s.Target == u.Target || u.fleet {
			why = append(why, fmt.Sprintf("%s %s → %s", s.Kind, s.Baseline, s.Candidate))
		}
	}
	if u.fleet {
		for _, s := range rep.Seams {
			if s.Kind == SeamEngines || s.Kind == SeamTarget {
				why = append(why, fmt.Sprintf("%s %s → %s", s.Kind, s.Baseline, s.Candidate))
			}
		}
	}
	return strings.Join(slices.Compact(why), "; ")
}

// gather is the first run's figure and the samples of name over the runs:
// one value per run (repeats), or every run's blocks; and, for a
// quantile, the bucket every run's figure fell in (zero when they differ).
func gather(runs []*analyze.Result, figs func(*analyze.Result) *phases.Figures, name, samples string) (phases.Figure, []float64, rate.Bucket) {
	var first phases.Figure
	var xs []float64
	var bucket rate.Bucket
	one := true
	for i, r := range runs {
		fs := figs(r)
		if fs == nil {
			continue
		}
		f, ok := fs.Get(name)
		if !ok {
			continue
		}
		if i == 0 {
			first, bucket = f, f.Bucket
		}
		one = one && f.Bucket.Same(bucket)
		if samples == "repeats" {
			if f.Value.Valid {
				xs = append(xs, f.Value.V)
			}
			continue
		}
		xs = append(xs, blockValues(&f)...)
	}
	if first.Name == "" {
		first = phases.Figure{Name: name, Reason: "no such phase in the first run"}
	}
	if !one {
		bucket = rate.Bucket{}
	}
	return first, xs, bucket
}

// oneBucket is the verdict of a quantile row whose sides' figures all fell
// in one histogram bucket: insufficient, "inside (a, b]". Inside a bucket
// the value is an interpolation (vLLM's (10, 25] ms ITL bucket holds a 20 %
// slower decode on both sides, with a zero-width interval), and even a
// significant interpolated change has the size of an assumption, not of
// the data; the quantity's mean row (Δsum/Δcount, exact) decides. ok is
// false when the verdict stands as it is (other buckets, or a row already
// unlike or insufficient).
func oneBucket(v string, q Quantity, b, c rate.Bucket) (string, string, bool) {
	// Not one bucket on both sides, or another reason already withholds a verdict.
	if b.IsZero() || !b.Same(c) || v == Unlike || v == Insufficient {
		return "", "", false
	}
	in := b.Interval(func(x float64) string { return unitValue(x, q.Unit) })
	why := fmt.Sprintf("inside %s: both sides' %s fall in this one histogram bucket, where interpolated values cannot measure a change", in, q.Label)
	base := q.Figure[:max(0, strings.LastIndex(q.Figure, "__"))]
	if m := slices.IndexFunc(Quantities, func(x Quantity) bool { return x.Figure == base+"__mean" }); m >= 0 {
		why += "; the " + Quantities[m].Label + " row (Δsum/Δcount, exact) decides"
	}
	return Insufficient, why, true
}

// unitValue is x in unit u, seconds as ms below 1 s.
func unitValue(x float64, u string) string {
	if u == "s" && math.Abs(x) < 1 {
		return strconv.FormatFloat(x*1000, 'g', 4, 64) + " ms"
	}
	if u == "s" {
		return strconv.FormatFloat(x, 'g', 4, 64) + " s"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func absentWhy(b, c phases.Figure) string {
	if b.Reason == c.Reason && b.Reason != "" {
		return "null on both sides (" + b.Reason + ")"
	}
	return fmt.Sprintf("null on both sides (baseline %s, candidate %s)", cmp.Or(b.Reason, "no value"), cmp.Or(c.Reason, "no value"))
}

func value(f phases.Figure, e stat.Estimate) Value {
	return Value{Figure: f.Value, Source: f.Source, Reason: f.Reason, N: e.N, Median: num(e.Median), Lo: num(e.Lo), Hi: num(e.Hi)}
}

// num is x, null for NaN and infinities (JSON has neither).
func num(x float64) rate.Num {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return rate.Num{}
	}
	return rate.Some(x)
}

// verdict applies the rule of the package comment.
func verdict(r stat.Result, q Quantity, threshold, alpha float64, blocking, samples string, fleet bool) (string, string) {
	if r.Insufficient != "" {
		why := r.Insufficient
		switch {
		case samples == "repeats":
			why += " (one value per run folder: give at least 4 repeats a side, or one run a side to compare blocks of each phase)"
		case fleet:
			why += " (the fleet's blocks are its targets' summed block by block, only where every target has as many of about one length: else give at least 4 repeats a side)"
		default:
			why += " (blocks of the phase: a longer phase gives more)"
		}
		return Insufficient, why
	}
	ci := fmt.Sprintf("%s [%s, %s]", pct(r.Change), pct(r.ChangeLo), pct(r.ChangeHi))
	if blocking != "" {
		return Unlike, "not compared across " + blocking + "; the change would be " + ci
	}
	// No relative change (a zero baseline): the same when nothing differs,
	// else no verdict either way (a change from 0 has no size in %).
	if math.IsNaN(r.Change) {
		switch {
		case r.Base.Median == 0 && r.Cand.Median == 0:
			return Same, "the median is 0 on both sides"
		case !r.Significant(alpha):
			return Same, fmt.Sprintf("the baseline's median is 0, the candidate's %g; p=%.3g: not significant at %g", r.Cand.Median, r.P, alpha)
		}
		return Insufficient, fmt.Sprintf("the baseline's median is 0, the candidate's %g (p=%.3g): a change from 0 has no relative size; compare the values", r.Cand.Median, r.P)
	}
	dir := r.Beyond(threshold)
	sig := r.Significant(alpha)
	if !sig || dir == 0 {
		why := fmt.Sprintf("%s, p=%.3g", ci, r.P)
		switch {
		case !sig:
			why += fmt.Sprintf(": not significant at %g", alpha)
		default:
			why += fmt.Sprintf(": the interval reaches inside ±%g%%", 100*threshold)
		}
		return Same, why
	}
	good := (dir > 0) == (q.Better == Higher)
	why := fmt.Sprintf("%s, p=%.3g: beyond ±%g%%, %s is better", ci, r.P, 100*threshold, q.Better)
	if good {
		return Better, why
	}
	return Worse, why
}

// pointsVerdict is the rule of the package comment for a ratio compared
// in points: the test as for any row, and the shift's interval (est, lo,
// hi, in the ratio's 0–1 unit) against ±floor.
func pointsVerdict(r stat.Result, est, lo, hi float64, q Quantity, floor, alpha float64) (string, string) {
	ci := fmt.Sprintf("%s [%s, %s] points", points(est), points(lo), points(hi))
	dir := 0
	switch {
	case lo > floor:
		dir = 1
	case hi < -floor:
		dir = -1
	}
	sig := r.Significant(alpha)
	if !sig || dir == 0 {
		why := fmt.Sprintf("%s, p=%.3g", ci, r.P)
		if !sig {
			return Same, why + fmt.Sprintf(": not significant at %g", alpha)
		}
		return Same, why + fmt.Sprintf(": the interval reaches inside ±%g points (a ratio is compared in points)", 100*floor)
	}
	why := fmt.Sprintf("%s, p=%.3g: beyond ±%g points, %s is better", ci, r.P, 100*floor, q.Better)
	if (dir > 0) == (q.Better == Higher) {
		return Better, why
	}
	return Worse, why
}

// points formats a shift of a 0–1 ratio in signed points, "+0.2".
func points(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "?"
	}
	return fmt.Sprintf("%+.1f", 100*x)
}

// needSeconds is the phase length a figure's blocks would need; 0 when it
// has blocks or none were cut.
func needSeconds(f phases.Figure) float64 {
	if f.Blocks == nil {
		return 0
	}
	return f.Blocks.NeedSeconds
}

// secondsText is a length in whole seconds, "50 s", "250 s".
func secondsText(s float64) string {
	return fmt.Sprintf("%.0f s", math.Ceil(s))
}

// pct formats a fraction as a signed percentage.
func pct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "?"
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}

// spans are the incidents of target inside span on the run, phase-relative.
func spans(r *analyze.Result, target string, span [2]float64, side string) []Span {
	out := []Span{}
	for _, inc := range r.Incidents {
		if string(inc.Target) != target {
			continue
		}
		a, b := incidentSpan(&inc)
		if b < span[0] || a > span[1] {
			continue
		}
		a, b = max(a, span[0]), min(b, span[1])
		out = append(out, Span{From: a - span[0], To: b - span[0], Label: side + ": " + inc.Kind + ": " + inc.Detail})
	}
	return out
}

// FailOn says which rows fail a CI gate: list holds "worse" (every
// quantity), quantity keys (those quantities), and "unlike" or
// "insufficient" (a row that could not be compared fails too). It returns
// the failing rows, as lines; a side with nothing to compare fails any
// gate.
func (rep *Report) FailOn(list []string) []string {
	all := slices.Contains(list, Worse)
	var out []string
	if len(list) > 0 {
		out = rep.nothing()
	}
	for _, r := range rep.Rows {
		fail := false
		switch r.Verdict {
		case Worse:
			fail = all || slices.Contains(list, r.Quantity)
		case Unlike, Insufficient:
			fail = slices.Contains(list, r.Verdict)
		}
		if fail {
			out = append(out, fmt.Sprintf("%s, %s on %s: %s (%s)", r.Phase, r.Label, r.Target, r.Verdict, r.Why))
		}
	}
	if slices.Contains(list, FailBoundary) {
		out = append(out, rep.boundaryFails()...)
	}
	return out
}

// CheckFailOn checks a --fail-on list: "worse", "unlike", "insufficient"
// or quantity keys.
func CheckFailOn(list []string) error {
	words := append([]string{Worse, Unlike, Insufficient, FailBoundary}, QuantityKeys()...)
	for _, w := range list {
		if !slices.Contains(words, w) {
			return fmt.Errorf("--fail-on: %q is not worse, unlike, insufficient, boundary or a quantity%s (quantities: %s)", w, Suggest(w, words), strings.Join(QuantityKeys(), ", "))
		}
	}
	return nil
}
