package diff

import (
	"slices"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Polls keeps, of each target's polls, the published values of the
// quantities' cells, for the page's charts. Hand its Add to
// analyze.Options.Polls. It is not safe for concurrent use.
type Polls struct {
	targets map[string]*targetPolls
}

type targetPolls struct {
	t     []float64
	cells map[string][]rate.Cell
}

// NewPolls returns an empty Polls.
func NewPolls() *Polls { return &Polls{targets: map[string]*targetPolls{}} }

// charted are the cells drawn.
var charted = func() []string {
	var out []string
	for _, q := range Quantities {
		if q.Cell != "" && !slices.Contains(out, q.Cell) {
			out = append(out, q.Cell)
		}
	}
	return out
}()

// Add keeps what the charts draw of target's poll p (its cells need not
// outlive the call).
func (ps *Polls) Add(target string, p *analyze.Poll) {
	tp := ps.targets[target]
	if tp == nil {
		tp = &targetPolls{cells: map[string][]rate.Cell{}}
		ps.targets[target] = tp
	}
	// A poll stamped before the one ahead of it is not drawn: x must grow.
	if n := len(tp.t); n > 0 && p.T <= tp.t[n-1] {
		return
	}
	tp.t = append(tp.t, p.T)
	for _, name := range charted {
		c := rate.Cell{Reason: rate.ReasonAbsent}
		if ec, ok := p.Cells.Get(name); ok {
			c = ec.Cell
		}
		c.Notes = nil
		tp.cells[name] = append(tp.cells[name], c)
	}
}

// points are target's values of cell inside span, phase-relative.
func (ps *Polls) points(target, cell string, span [2]float64) []Point {
	out := []Point{}
	tp := ps.targets[target]
	if tp == nil {
		return out
	}
	lo, _ := slices.BinarySearch(tp.t, span[0])
	cs := tp.cells[cell]
	for i := lo; i < len(tp.t) && tp.t[i] <= span[1]; i++ {
		out = append(out, Point{T: tp.t[i] - span[0], Cell: cs[i]})
	}
	return out
}
