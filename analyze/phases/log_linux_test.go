//go:build linux

package phases

import (
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/internal/prefault"
)

// A log sized by NewLog has its offsets and published cells faulted in a
// step ahead of its first poll's writes, and no further.
func TestLogFaultsInAhead(t *testing.T) {
	const n = 200000
	l := NewLog(n)
	k := len(PubCells)
	// Reused memory is in already: nothing to see of it.
	if in, _ := prefault.Resident(l.off, 0, n); in != 0 {
		t.Skip("the offsets' array is reused memory")
	}
	if in, _ := prefault.Resident(l.pubV, 0, n*k); in != 0 {
		t.Skip("the published values' array is reused memory")
	}
	l.Key(0, engine.Series{Family: "vllm:generation_tokens_total", Type: "counter", Name: "vllm:generation_tokens_total", Labels: "{}"})
	l.Poll([]int32{0}, []float64{1}, nil, engine.VLLM, false)
	step := prefault.Elems[float64]()
	if in, pages := prefault.Resident(l.off, 0, step); in < pages-1 {
		t.Errorf("offsets: %d of the first step's %d pages in, want all", in, pages)
	}
	if in, pages := prefault.Resident(l.pubV, 0, step*k); in < pages-1 {
		t.Errorf("published values: %d of the first step's %d pages in, want all", in, pages)
	}
	if in, pages := prefault.Resident(l.pubV, (step+1024)*k, n*k); in > 1 {
		t.Errorf("published values: %d of the %d pages past the step in, want none", in, pages)
	}
	if len(l.Series) != 1 {
		t.Fatalf("%d series logged, want the one", len(l.Series))
	}
	if in, pages := prefault.Resident(l.chunks[0], 0, 1); in != pages {
		t.Errorf("the increments' chunk: its first page not in")
	}
}
