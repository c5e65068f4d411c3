package diff

import "fmt"

// nothing names, as failing lines, each side that has nothing to compare:
// no row holds a figure or a sample of it (a candidate that captured
// nothing: no rows, or every row null on its side). A CI gate fails on it
// whatever else it asks: "no rows" is no pass.
func (rep *Report) nothing() []string {
	// No row: neither side had a phase and quantity the other had.
	if len(rep.Rows) == 0 {
		return []string{"nothing was compared: no phase and quantity is held by both sides (see the seams)"}
	}
	var out []string
	for _, side := range []struct {
		name  string
		value func(*Row) *Value
	}{{"baseline", func(r *Row) *Value { return &r.Baseline }}, {"candidate", func(r *Row) *Value { return &r.Candidate }}} {
		held := false
		for i := range rep.Rows {
			if v := side.value(&rep.Rows[i]); v.Figure.Valid || v.N > 0 {
				held = true
				break
			}
		}
		if !held {
			out = append(out, fmt.Sprintf("nothing was compared: the %s holds no value in any of the %d rows (%s)", side.name, len(rep.Rows), side.value(&rep.Rows[0]).Reason))
		}
	}
	return out
}
