package analyze

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/clientcmp"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/internal/par"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/record/capture"
)

// engineID is the engine the target's polls are read as, "" until it is
// decided.
func (st *targetState) engineID() string {
	id, how := st.tr.Engine()
	if how == "" {
		return ""
	}
	return id
}

// phases cuts the run into phases (the named ones given and marked, the
// ones found at each target's load edges) and measures each from the
// engines' own counters; each target's busy figures are its headline.
func (a *analyzer) phases(res *Result, marks []capture.Mark, problems []string) {
	end := math.Inf(-1)
	for _, st := range a.targets {
		if ps := &st.fw.t.Polls; ps.Len() > 0 {
			end = max(end, ps.Last())
		}
	}
	var marked []phases.Phase
	if len(marks) > 0 && !math.IsInf(end, -1) {
		ps, bad := phases.FromMarks(marks, end)
		marked, problems = ps, append(problems, bad...)
	}
	// A file and marks naming the same phases are one set.
	named := phases.OneSet(a.opts.Phases, marked)
	// Each engine's phases are cut at its own edges, on every core.
	var engines []*findings.Target
	for _, st := range a.targets {
		// A target that is not an engine has no load to cut phases at.
		if t := st.fw.t; t.Engine != engine.Generic {
			engines = append(engines, t)
		}
	}
	cut := make([][]phases.Phase, len(engines))
	par.For(len(engines), func(_, i int) { cut[i] = phases.Found(engines[i], res.Edges) })
	found := map[string][]phases.Phase{}
	for i, t := range engines {
		found[t.Name] = cut[i]
	}
	lo, hi, why := runBounds(a, found)
	clients := clientPhases(a.withinRecording(a.opts.Clients), named, lo, hi, why)
	for _, c := range clients {
		named = append(named, client.AsPhases(c.Phases)...)
	}
	res.ClientInputs = clients
	restarts := map[string][]float64{}
	for _, inc := range res.Incidents {
		if inc.Kind == findings.KindRestart && inc.End.Valid {
			restarts[string(inc.Target)] = append(restarts[string(inc.Target)], inc.End.V)
		}
	}
	var ins []*phases.Input
	a.inputs = map[string]*phases.Input{}
	for _, st := range a.targets {
		t := st.fw.t
		in := &phases.Input{Target: t, Log: st.ph, Restarts: restarts[t.Name], Blocks: a.opts.Blocks}
		ins = append(ins, in)
		a.inputs[t.Name] = in
	}
	res.Output = phases.Compute(named, found, ins, problems)
	if len(clients) > 0 {
		cadences := []float64{}
		for _, st := range a.targets {
			if iv := st.fw.t.Interval; iv > 0 {
				cadences = append(cadences, iv)
			}
		}
		slices.Sort(cadences)
		cadence := 0.0
		if len(cadences) > 0 {
			cadence = cadences[len(cadences)/2]
		}
		engines := map[string]string{}
		for _, st := range a.targets {
			engines[st.fw.t.Name] = st.fw.t.Engine
		}
		urls := map[string]string{}
		for _, in := range res.Inputs {
			for _, rec := range in.Recordings {
				for _, t := range rec.Targets {
					urls[t.Name] = t.URL
				}
			}
		}
		out := clientcmp.Compare(clients, res.Output.Phases, res.Edges, cadence, engines, urls)
		res.Client = &out
	}
	for _, b := range res.Output.Busy {
		for i := range res.Targets {
			if res.Targets[i].Name == b.Target {
				res.Targets[i].Summary.Busy = b
			}
		}
	}
}

// ticksHint is how many polls the manifests let a target expect, bounded
// (see maxTicksHint); 0 unknown.
func (a *analyzer) ticksHint(name string) int {
	if m := a.metas[name]; m != nil {
		return min(m.ticks, maxTicksHint)
	}
	return 0
}

// clientPhases cuts each client file's phases. Named phases from explicit
// sources win: a client phase named like one of them is renamed
// "client: NAME"; with several files that cut phases (telemetry cuts
// none) each name is prefixed by its file's.
//
// A summary-only file is placed by run bounds (client.SummaryPhases): its
// summaries' own, else [lo, hi] (why says what they are).
func clientPhases(runs []*client.Run, explicit []phases.Phase, lo, hi float64, why string) []clientcmp.Input {
	taken := map[string]bool{}
	for _, p := range explicit {
		taken[p.Name] = true
	}
	// Telemetry files cut no phases: they do not make names ambiguous.
	phased := 0
	for _, run := range runs {
		if run.Meta.Level != client.LevelTelemetry {
			phased++
		}
	}
	var out []clientcmp.Input
	for _, run := range runs {
		ps, how := client.Phases(run)
		if sps, shows := client.SummaryPhases(run, lo, hi, why); shows != "" {
			ps, how = sps, shows
		}
		for i := range ps {
			if phased > 1 {
				ps[i].Name = filepath.Base(run.Meta.File) + ": " + ps[i].Name
			}
			if taken[ps[i].Name] {
				ps[i].Why += fmt.Sprintf(" (renamed: a named phase %q was given)", ps[i].Name)
				ps[i].Name = "client: " + ps[i].Name
			}
		}
		out = append(out, clientcmp.Input{Run: run, Phases: ps, How: how})
	}
	return out
}

// runBounds are the recording's busy span (the first steady phase's start
// to the last one's end over the engines), else its whole span (the first
// poll to the last), with which they are; why is "" when there are none.
func runBounds(a *analyzer, found map[string][]phases.Phase) (lo, hi float64, why string) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, ps := range found {
		for _, p := range ps {
			if p.Kind == phases.KindSteady {
				lo, hi = min(lo, p.Start), max(hi, p.End)
			}
		}
	}
	if hi > lo {
		return lo, hi, "the recording's busy span (its engines' first steady phase's start to the last one's end)"
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, st := range a.targets {
		if ps := &st.fw.t.Polls; ps.Len() > 0 {
			lo, hi = min(lo, ps.T(0)), max(hi, ps.Last())
		}
	}
	if hi > lo {
		return lo, hi, "the whole recording (no steady phase was found)"
	}
	return 0, 0, ""
}
