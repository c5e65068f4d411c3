package diff

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/analyze/sweep"
)

// curveOf is a curve of levels at loads with decode rates and one SLO's
// margins (negative fails), judged as analyze judges it.
func curveOf(names []string, loads, decode, margins []float64) sweep.Curve {
	c := sweep.Curve{}
	for i := range loads {
		v := sweep.Pass
		if margins[i] < 0 {
			v = sweep.Fail
		}
		c.Points = append(c.Points, sweep.Point{Phase: names[i], Offered: sweep.Value{Value: rate.Some(loads[i])},
			Decode: sweep.Value{Value: rate.Some(decode[i])},
			SLOs:   []sweep.Attainment{{SLO: "ttft_p99", Verdict: v, Margin: rate.Some(margins[i])}}})
	}
	c.Finish([]sweep.SLO{{Name: "ttft_p99", Metric: "ttft", Quantile: 0.99, Threshold: 0.5}})
	return c
}

// Levels are matched by name, else by load within 15 %; the change at
// each is the candidate's over the baseline's; a candidate that fails an
// objective from a lower level has a lower boundary (what --fail-on
// boundary gates on), one that fails at the same level has not, and the
// shift of the fitted crossing is bounded by the levels around each.
func TestSweepDiffBoundary(t *testing.T) {
	names := []string{"c2", "c4", "c8", "c16", "c32"}
	loads := []float64{2, 4, 8, 16, 32}
	base := curveOf(names, loads, []float64{100, 200, 380, 520, 530}, []float64{0.9, 0.85, 0.8, 0.7, -1})
	// The candidate's levels are named otherwise and offered a little less.
	cn := []string{"x2", "x4", "x8", "x16", "x32"}
	cl := []float64{2.1, 3.8, 7.5, 15, 30}
	worse := curveOf(cn, cl, []float64{90, 180, 350, 470, 480}, []float64{0.9, 0.8, 0.6, -0.5, -2})
	d := sweepDiff("e", "e", &base, &worse)
	var matched []string
	for _, l := range d.Levels {
		matched = append(matched, l.Baseline+"="+l.Candidate)
	}
	if want := []string{"c2=x2", "c4=x4", "c8=x8", "c16=x16", "c32=x32"}; !slices.Equal(matched, want) {
		t.Fatalf("levels %v, want %v", matched, want)
	}
	if c := d.Levels[0].Decode; !c.Valid || c.V > -0.099 || c.V < -0.101 {
		t.Errorf("decode change at c2 %v, want -10 %%", c)
	}
	if len(d.Boundaries) != 1 || !d.Boundaries[0].Lower {
		t.Fatalf("boundaries %+v: want the candidate's lower", d.Boundaries)
	}
	b := d.Boundaries[0]
	if !b.Shift.Valid || b.Shift.V >= 0 || !b.Lo.Valid || b.Lo.V > b.Shift.V || b.Hi.V < b.Shift.V {
		t.Errorf("shift %v in [%v, %v]: want negative and inside", b.Shift, b.Lo, b.Hi)
	}
	rep := &Report{Sweeps: []SweepDiff{d}}
	if fails := sweepFails(rep); len(fails) != 1 {
		t.Errorf("--fail-on boundary: %v", fails)
	}
	same := curveOf(cn, cl, []float64{100, 200, 380, 520, 530}, []float64{0.9, 0.85, 0.8, 0.6, -0.8})
	d = sweepDiff("e", "e", &base, &same)
	if d.Boundaries[0].Lower {
		t.Errorf("same levels pass and fail, yet lower: %s", d.Boundaries[0].Text)
	}
	rep = &Report{Sweeps: []SweepDiff{d}}
	if fails := sweepFails(rep); len(fails) != 0 {
		t.Errorf("--fail-on boundary with no lower boundary: %v", fails)
	}
}

// sweepFails are the --fail-on boundary failures of rep's sweeps (a
// report of sweeps alone has no rows, which fails on its own).
func sweepFails(rep *Report) []string {
	var out []string
	for _, f := range rep.FailOn([]string{FailBoundary}) {
		if strings.HasPrefix(f, "sweep on ") {
			out = append(out, f)
		}
	}
	return out
}
