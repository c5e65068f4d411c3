package diff

import "github.com/llmrec/llmrec/analyze/phases"

// blockValues are a figure's values over the non-overlapping blocks of its
// phase (phases.Blocks), the blocks with a value; none when the phase was
// too short for blocks.
func blockValues(f *phases.Figure) []float64 {
	if f.Blocks == nil {
		return nil
	}
	out := make([]float64, 0, len(f.Blocks.Values))
	for _, v := range f.Blocks.Values {
		if v.Valid {
			out = append(out, v.V)
		}
	}
	return out
}
