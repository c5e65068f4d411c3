package diff

import "github.com/llmrec/llmrec/analyze/phases"

// blockValues are a figure's values over the non-overlapping blocks of its
// phase, the valid ones.
func blockValues(f *phases.Figure) []float64 {
	return nil
}
