package analyze

import (
	"math"
	"slices"

	"github.com/llmrec/llmrec/analyze/client"
)

// withinRecording are the client runs with the records that lie far
// outside the recording (client.StragglerMargin past its first and last
// poll) left out and counted in each run's Meta.Skipped: such a record
// would stretch a client phase over time nothing was recorded in. The
// runs given are not changed; a run with nothing left out is itself.
func (a *analyzer) withinRecording(runs []*client.Run) []*client.Run {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, st := range a.targets {
		if ps := &st.fw.t.Polls; ps.Len() > 0 {
			lo, hi = min(lo, ps.T(0)), max(hi, ps.Last())
		}
	}
	// No poll: nothing to place the records against.
	if !(hi >= lo) {
		return runs
	}
	out := make([]*client.Run, len(runs))
	for i, run := range runs {
		out[i] = run
		m := client.StragglerMargin(lo, hi)
		if !slices.ContainsFunc(run.Requests, func(r client.Request) bool { return r.Start < lo-m || client.LastSeen(&r) > hi+m }) {
			continue
		}
		cp := *run
		cp.Requests = slices.Clone(run.Requests)
		cp.Meta.Skipped = slices.Clone(run.Meta.Skipped)
		cp.Meta.Notes = slices.Clone(run.Meta.Notes)
		client.LeaveOut(&cp, lo, hi, "the recording (its first poll to its last)")
		out[i] = &cp
	}
	return out
}
