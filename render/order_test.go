package render

import (
	"testing"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// A poll stamped before the poll ahead of it (a scrape that outlived the
// next one) is not drawn: a chart's x must grow; it is counted instead. Its
// sources still count for the headline cells.
func TestPollsInTimeOrder(t *testing.T) {
	cell := func(v float64) engine.Cells {
		return engine.Cells{{Name: engine.DecodeTokensPerSecond, Cell: engine.Cell{Cell: rate.Cell{Value: rate.Some(v), Source: "s"}}}}
	}
	ps := NewPolls()
	for _, p := range []analyze.Poll{{T: 1}, {T: 2, Cells: cell(2)}, {T: 1.5, Cells: cell(9)}, {T: 2, Cells: cell(9)}, {T: 3, Cells: cell(3)}} {
		ps.Add("x", &p)
	}
	tp := ps.target("x")
	points, any := ps.series(tp, engine.DecodeTokensPerSecond)
	if tp.late != 2 || len(tp.t) != 3 || !any || len(points) != 2 || points[1].T != 3 || points[1].Cell.Value.V != 3 {
		t.Fatalf("drawn %v at %v, late %d", points, tp.t, tp.late)
	}
	if tp.sources[engine.DecodeTokensPerSecond] != "s" {
		t.Errorf("headline source %q", tp.sources[engine.DecodeTokensPerSecond])
	}
}
