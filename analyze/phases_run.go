package analyze

import (
	"math"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
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
		if n := len(st.fw.t.Polls); n > 0 {
			end = max(end, st.fw.t.Polls[n-1].T)
		}
	}
	named := append([]phases.Phase{}, a.opts.Phases...)
	if len(marks) > 0 && !math.IsInf(end, -1) {
		ps, bad := phases.FromMarks(marks, end)
		named, problems = append(named, ps...), append(problems, bad...)
	}
	restarts := map[string][]float64{}
	for _, inc := range res.Incidents {
		if inc.Kind == findings.KindRestart && inc.End.Valid {
			restarts[string(inc.Target)] = append(restarts[string(inc.Target)], inc.End.V)
		}
	}
	found := map[string][]phases.Phase{}
	var ins []*phases.Input
	for _, st := range a.targets {
		t := st.fw.t
		// A target that is not an engine has no load to cut phases at.
		if t.Engine != engine.Generic {
			found[t.Name] = phases.Found(t, res.Edges)
		}
		ins = append(ins, &phases.Input{Target: t, Log: st.ph, Restarts: restarts[t.Name], Blocks: a.opts.Blocks})
	}
	res.Output = phases.Compute(named, found, ins, problems)
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
