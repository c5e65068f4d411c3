package findings

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// capAliases are the short names of the rate cells a cap may use.
var capAliases = map[string]string{
	"decode": engine.DecodeTokensPerSecond, "prompt": engine.PromptTokensPerSecond,
	"prompt_computed": engine.PromptTokensComputedPerSecond, "preemptions": engine.PreemptionsPerSecond,
	"requests_finished": engine.RequestsFinishedPerSecond,
}

// ParseCap reads a cap written "[ENGINE.]CELL=MAX": "decode=5000",
// "llamacpp.decode=300", "vllm.prompt_tokens_per_second=2e5". CELL is a
// rate cell or its short name (decode, prompt, prompt_computed,
// preemptions, requests_finished).
func ParseCap(s string) (Cap, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return Cap{}, fmt.Errorf("cap %q: want [ENGINE.]CELL=MAX, e.g. decode=5000", s)
	}
	return NewCap(strings.TrimSpace(k), strings.TrimSpace(v))
}

// NewCap makes the cap of key "[ENGINE.]CELL" at max.
func NewCap(key, max string) (Cap, error) {
	m, err := strconv.ParseFloat(max, 64)
	if err != nil || math.IsNaN(m) || m <= 0 {
		return Cap{}, fmt.Errorf("cap %s=%s: the maximum must be a positive number", key, max)
	}
	eng, cell, ok := strings.Cut(key, ".")
	if !ok {
		eng, cell = "", key
	}
	if full, ok := capAliases[cell]; ok {
		cell = full
	}
	known := false
	for _, c := range RateCells {
		known = known || c == cell
	}
	if !known {
		return Cap{}, fmt.Errorf("cap %s: %q is not a rate cell (decode, prompt, prompt_computed, preemptions, requests_finished)", key, cell)
	}
	if eng != "" && !knownEngine(eng) {
		return Cap{}, fmt.Errorf("cap %s: %q is not an engine id (%s)", key, eng, strings.Join(engine.Engines, ", "))
	}
	return Cap{Engine: eng, Cell: cell, Max: m}, nil
}

func knownEngine(id string) bool {
	for _, e := range engine.Engines {
		if e == id {
			return true
		}
	}
	return false
}

// capFor is the cap of cell on an engine: the engine's own first, then
// one for every engine.
func capFor(caps []Cap, eng, cell string) rate.Num {
	var any rate.Num
	for _, c := range caps {
		switch {
		case c.Cell != cell:
		case c.Engine == eng:
			return rate.Some(c.Max)
		case c.Engine == "" && !any.Valid:
			any = rate.Some(c.Max)
		}
	}
	return any
}

// rollups are the per-minute max and mean of the target's rate cells and
// the counts above their caps.
func (v *view) rollups(caps []Cap) []Rollup {
	var out []Rollup
	ps := &v.t.Polls
	// Room for every minute the polls span at once (grown by appends, a
	// day's allocated several times what it keeps); a minute needs a poll.
	minutes := 0
	if ps.Len() > 0 {
		minutes = min(ps.Len(), max(0, int(math.Floor(ps.T(ps.Len()-1)/60)-math.Floor(ps.T(0)/60))+1))
	}
	for k := range NRates {
		r := Rollup{Target: v.t.Name, Cell: RateCells[k], Cap: capFor(caps, v.t.Engine, RateCells[k]), Minutes: make([]Minute, 0, minutes)}
		var m *Minute
		var sum float64
		closeMinute := func() {
			if m != nil && m.N > 0 {
				m.Mean = rate.Some(sum / float64(m.N))
			}
		}
		// Each poll is read once a cell: its value and total, the total
		// kept for the next poll's naive rate (naive).
		fs := [2]Field{FieldRate(k), FieldTotal(k)}
		var xs [2]rate.Num
		var prev rate.Num
		for i := range ps.Len() {
			ps.Read(i, fs[:], xs[:])
			x, n := xs[0], rate.Num{}
			if a, b := prev, xs[1]; i >= 1 && a.Valid && b.Valid {
				// As naive: some time between the polls.
				if dt := ps.T(i) - ps.T(i-1); !(dt <= 0) {
					n = rate.Some((b.V - a.V) / dt)
				}
			}
			prev = xs[1]
			// Neither a value nor a naive one: nothing to roll up.
			if !x.Valid && !n.Valid {
				continue
			}
			start := math.Floor(ps.T(i)/60) * 60
			if m == nil || m.T != start {
				closeMinute()
				r.Minutes = append(r.Minutes, Minute{T: start})
				m, sum = &r.Minutes[len(r.Minutes)-1], 0
			}
			if x.Valid {
				m.N++
				sum += x.V
				m.Max = maxNum(m.Max, x.V)
				r.Values++
				r.Max = maxNum(r.Max, x.V)
				if r.Cap.Valid && x.V > r.Cap.V {
					r.AboveCap++
				}
			}
			if n.Valid {
				m.NaiveMax = maxNum(m.NaiveMax, n.V)
				r.Naive++
				r.NaiveMax = maxNum(r.NaiveMax, n.V)
				if r.Cap.Valid && n.V > r.Cap.V {
					r.NaiveAboveCap++
				}
			}
		}
		closeMinute()
		// A cell the engine never valued has no rollup.
		if r.Values == 0 && r.Naive == 0 {
			continue
		}
		for _, mm := range r.Minutes {
			if mm.Mean.Valid {
				r.MinuteMeanMax = maxNum(r.MinuteMeanMax, mm.Mean.V)
			}
		}
		out = append(out, r)
	}
	return out
}

func maxNum(n rate.Num, x float64) rate.Num {
	if !n.Valid || x > n.V {
		return rate.Some(x)
	}
	return n
}
