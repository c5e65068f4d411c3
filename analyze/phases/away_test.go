package phases

import (
	"testing"

	"github.com/llmrec/llmrec/analyze/findings"
)

// A target's time out of its target set inside a window is the stretches
// from each leave to the next join, clipped to the window; a target that
// never left, or left only after its session, was never away.
func TestAwayWithin(t *testing.T) {
	back := []findings.Presence{{Join: 0, AtStart: true, Leave: 100}, {Join: 130, Leave: 200}, {Join: 260}}
	for _, c := range []struct {
		ps         []findings.Presence
		start, end float64
		want       float64
	}{
		{nil, 0, 500, 0},
		{[]findings.Presence{{Join: 0, AtStart: true}}, 0, 500, 0},
		{back, 0, 500, 30 + 60},
		{back, 110, 120, 10},  // inside an absence
		{back, 90, 140, 30},   // across one
		{back, 140, 190, 0},   // while present
		{back, 190, 1000, 60}, // the second absence only
		{[]findings.Presence{{Join: 0, AtStart: true, Leave: 50}}, 40, 100, 50}, // left for good
	} {
		if got := awayWithin(c.ps, c.start, c.end); got != c.want {
			t.Errorf("awayWithin(%v, %g, %g) = %g, want %g", c.ps, c.start, c.end, got, c.want)
		}
	}
}
