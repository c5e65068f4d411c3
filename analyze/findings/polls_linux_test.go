//go:build linux

package findings

import (
	"math/rand/v2"
	"testing"

	"github.com/llmrec/llmrec/analyze/internal/prefault"
)

// A list sized by Grow has its times and spans faulted in a step ahead of
// its first poll's writes, and no further.
func TestPollListFaultsInAhead(t *testing.T) {
	const n = 200000
	var l PollList
	l.Grow(n)
	p := randomPoll(rand.New(rand.NewPCG(7, 8)), 1, 2)
	step := prefault.Elems[float64]()
	// Reused memory is in already: nothing to see of it.
	if in, _ := prefault.Resident(l.t, 0, n); in != 0 {
		t.Skip("the times' array is reused memory")
	}
	if in, _ := prefault.Resident(l.st, 0, n); in != 0 {
		t.Skip("the starts' array is reused memory")
	}
	l.Append(&p)
	for name, s := range map[string][]float64{"T": l.t, "Start": l.st} {
		if in, pages := prefault.Resident(s, 0, step); in < pages-1 {
			t.Errorf("%s: %d of the first step's %d pages in, want all", name, in, pages)
		}
		if in, pages := prefault.Resident(s, step+1024, n); in > 1 {
			t.Errorf("%s: %d of the %d pages past the step in, want none", name, in, pages)
		}
	}
	// The spans' array is made at the first poll: it may be reused memory,
	// but its first step must be in.
	if in, pages := prefault.Resident(l.spans, 0, 2*step); in < pages-1 {
		t.Errorf("spans: %d of the first step's %d pages in, want all", in, pages)
	}
}
