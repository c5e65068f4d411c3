package diff

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/analyze/sweep"
)

// FailBoundary is the --fail-on word that fails a diff when the
// candidate's SLO boundary is lower than the baseline's.
const FailBoundary = "boundary"

// SweepDiff is one target pair's sweep curves set side by side (the first
// run of each side): the change at each level both have, and each SLO
// boundary's shift.
type SweepDiff struct {
	Target     string `json:"target"` // the baseline's name; "" for the fleet
	CandTarget string `json:"candidate_target"`
	// Levels are matched by phase name, else by offered load within
	// LevelMatch of each other, in the baseline's order of load.
	Levels     []LevelChange   `json:"levels"`
	Boundaries []BoundaryShift `json:"boundaries"`
	// Baseline and Candidate are the curves, for the page's overlaid
	// charts (each side's analysis has them in its JSON).
	Baseline  sweep.Curve `json:"-"`
	Candidate sweep.Curve `json:"-"`
}

// LevelMatch is how far apart two levels' offered loads may be, as a
// fraction of the baseline's, to be matched when their names differ.
const LevelMatch = 0.15

// LevelChange is one level on both sides.
type LevelChange struct {
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Offered are the two offered loads; Decode, TTFTp99 and ITLp99 the
	// relative change (candidate ÷ baseline − 1) of each, null when a
	// side has none.
	BaseOffered rate.Num `json:"baseline_offered"`
	CandOffered rate.Num `json:"candidate_offered"`
	Decode      rate.Num `json:"decode_tokens_per_second"`
	TTFTp99     rate.Num `json:"ttft_p99"`
	ITLp99      rate.Num `json:"itl_p99"`
	// Saturated says whether each side was saturated at the level.
	BaseSaturated bool `json:"baseline_saturated"`
	CandSaturated bool `json:"candidate_saturated"`
}

// BoundaryShift is one SLO's boundary on both sides.
type BoundaryShift struct {
	SLO       string         `json:"slo"`
	Baseline  sweep.Boundary `json:"baseline"`
	Candidate sweep.Boundary `json:"candidate"`
	// Shift is the candidate's fitted crossing less the baseline's
	// (offered load), null unless both have one; Lo and Hi bound it by
	// the levels each crossing lies between (the candidate's passing
	// level less the baseline's failing one, its failing less the
	// baseline's passing).
	Shift rate.Num `json:"shift"`
	Lo    rate.Num `json:"lo"`
	Hi    rate.Num `json:"hi"`
	// Lower is true when the candidate passes to a lower level than the
	// baseline: its highest passing level (below its first failure) is
	// lower, or it fails where the baseline passes every level.
	Lower bool   `json:"lower"`
	Text  string `json:"text"`
}

// sweeps sets the first runs' curves side by side, per target pair and
// for the fleet.
func (rep *Report) sweeps(b, c *sweep.Sweep, pairs []pair) {
	curve := func(s *sweep.Sweep, name string, fleet bool) *sweep.Curve {
		for i := range s.Curves {
			if (fleet && s.Curves[i].Target == "") || (!fleet && s.Curves[i].Target == name && name != "") {
				return &s.Curves[i]
			}
		}
		return nil
	}
	for _, p := range pairs {
		bc, cc := curve(b, p.base.Name, false), curve(c, p.cand.Name, false)
		if bc != nil && cc != nil && len(bc.Points) > 1 && len(cc.Points) > 1 {
			rep.Sweeps = append(rep.Sweeps, sweepDiff(p.base.Name, p.cand.Name, bc, cc))
		}
	}
	if bc, cc := curve(b, "", true), curve(c, "", true); bc != nil && cc != nil && len(bc.Points) > 1 && len(cc.Points) > 1 {
		rep.Sweeps = append(rep.Sweeps, sweepDiff("", "", bc, cc))
	}
}

// sweepDiff compares two curves.
func sweepDiff(bn, cn string, b, c *sweep.Curve) SweepDiff {
	d := SweepDiff{Target: bn, CandTarget: cn, Levels: []LevelChange{}, Boundaries: []BoundaryShift{}, Baseline: *b, Candidate: *c}
	used := map[int]bool{}
	for i := range b.Points {
		bp := &b.Points[i]
		j := slices.IndexFunc(c.Points, func(q sweep.Point) bool { return q.Phase == bp.Phase })
		if j < 0 || used[j] {
			j = nearest(c.Points, bp.Offered.Value, used)
		}
		// No candidate level at this load.
		if j < 0 {
			continue
		}
		used[j] = true
		cp := &c.Points[j]
		d.Levels = append(d.Levels, LevelChange{Baseline: bp.Phase, Candidate: cp.Phase, BaseOffered: bp.Offered.Value,
			CandOffered: cp.Offered.Value, Decode: relChange(bp.Decode.Value, cp.Decode.Value),
			TTFTp99: relChange(bp.TTFTp99.Value, cp.TTFTp99.Value), ITLp99: relChange(bp.ITLp99.Value, cp.ITLp99.Value),
			BaseSaturated: bp.Saturated, CandSaturated: cp.Saturated})
	}
	for _, bb := range b.Boundaries {
		k := slices.IndexFunc(c.Boundaries, func(x sweep.Boundary) bool { return x.SLO == bb.SLO })
		if k < 0 {
			continue
		}
		d.Boundaries = append(d.Boundaries, shift(bb, c.Boundaries[k]))
	}
	return d
}

// nearest is the unused level whose offered load is within LevelMatch
// of x; -1 when none is.
func nearest(ps []sweep.Point, x rate.Num, used map[int]bool) int {
	best, gap := -1, math.Inf(1)
	for j := range ps {
		y := ps[j].Offered.Value
		if used[j] || !x.Valid || !y.Valid || x.V <= 0 {
			continue
		}
		if g := math.Abs(y.V-x.V) / x.V; g <= LevelMatch && g < gap {
			best, gap = j, g
		}
	}
	return best
}

// relChange is c ÷ b − 1; null when either is missing or b is 0.
func relChange(b, c rate.Num) rate.Num {
	if !b.Valid || !c.Valid || b.V == 0 {
		return rate.Num{}
	}
	return rate.Some(c.V/b.V - 1)
}

// reach is how far along the load a boundary passes: its highest passing
// level below the first failure; +Inf when nothing fails, 0 when nothing
// passes.
func reach(b sweep.Boundary) float64 {
	switch {
	case b.Fail == "" && b.Pass != "":
		return math.Inf(1)
	case b.Pass == "" || !b.PassOffered.Valid:
		return 0
	}
	return b.PassOffered.V
}

// shift compares one SLO's boundaries.
func shift(b, c sweep.Boundary) BoundaryShift {
	s := BoundaryShift{SLO: b.SLO, Baseline: b, Candidate: c}
	if b.At.Valid && c.At.Valid {
		s.Shift = rate.Some(c.At.V - b.At.V)
	}
	if b.PassOffered.Valid && b.FailOffered.Valid && c.PassOffered.Valid && c.FailOffered.Valid {
		s.Lo, s.Hi = rate.Some(c.PassOffered.V-b.FailOffered.V), rate.Some(c.FailOffered.V-b.PassOffered.V)
	}
	rb, rc := reach(b), reach(c)
	// Unjudged on a side: no shift to speak of.
	if (b.Pass == "" && b.Fail == "") || (c.Pass == "" && c.Fail == "") {
		s.Text = fmt.Sprintf("%s: not judged on both sides (baseline: %s; candidate: %s)", b.SLO, b.Text, c.Text)
		return s
	}
	s.Lower = rc < rb*(1-LevelMatch)
	s.Text = fmt.Sprintf("%s: baseline passes to %s, candidate to %s", b.SLO, reachText(b, rb), reachText(c, rc))
	if s.Shift.Valid {
		s.Text += fmt.Sprintf("; the fitted crossing moved %+.3g (offered load)", s.Shift.V)
		if s.Lo.Valid {
			s.Text += fmt.Sprintf(", between %+.3g and %+.3g by the levels", s.Lo.V, s.Hi.V)
		}
	}
	if s.Lower {
		s.Text += ": the candidate's boundary is lower"
	}
	return s
}

// reachText names a boundary's reach.
func reachText(b sweep.Boundary, r float64) string {
	switch {
	case math.IsInf(r, 1):
		return "every level (" + b.Pass + ")"
	case r == 0:
		return "no level (fails from " + b.Fail + ")"
	}
	return b.Pass + " (offered " + strconv.FormatFloat(r, 'g', 3, 64) + ")"
}

// boundaryFails lists the lower boundaries, for --fail-on boundary.
func (rep *Report) boundaryFails() []string {
	var out []string
	for _, d := range rep.Sweeps {
		name := d.Target
		if name == "" {
			name = "fleet"
		}
		for _, s := range d.Boundaries {
			if s.Lower {
				out = append(out, "sweep on "+name+": "+s.Text)
			}
		}
	}
	return out
}
