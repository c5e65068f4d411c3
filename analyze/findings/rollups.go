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
	// One pass over the polls serves every cell: a poll's record is read
	// once (its values and totals, the totals kept for the next poll's
	// naive rate, see naive) and its minute found once.
	type cellState struct {
		r    Rollup
		m    int // the open minute's index in r.Minutes; -1 none
		sum  float64
		prev rate.Num
	}
	var cs [NRates]cellState
	var fs [2 * NRates]Field
	for k := range NRates {
		cs[k] = cellState{r: Rollup{Target: v.t.Name, Cell: RateCells[k], Cap: capFor(caps, v.t.Engine, RateCells[k]),
			Minutes: make([]Minute, 0, minutes)}, m: -1}
		fs[k], fs[NRates+k] = FieldRate(k), FieldTotal(k)
	}
	closeMinute := func(c *cellState) {
		if c.m >= 0 && c.r.Minutes[c.m].N > 0 {
			c.r.Minutes[c.m].Mean = rate.Some(c.sum / float64(c.r.Minutes[c.m].N))
		}
	}
	var xs [2 * NRates]rate.Num
	for i := range ps.Len() {
		ps.Read(i, fs[:], xs[:])
		// Some time between the polls, as naive.
		gap := i >= 1 && !(ps.T(i)-ps.T(i-1) <= 0)
		start := math.Floor(ps.T(i)/60) * 60
		for k := range NRates {
			c := &cs[k]
			x, n := xs[k], rate.Num{}
			if a, b := c.prev, xs[NRates+k]; gap && a.Valid && b.Valid {
				n = rate.Some((b.V - a.V) / (ps.T(i) - ps.T(i-1)))
			}
			c.prev = xs[NRates+k]
			// Neither a value nor a naive one: nothing to roll up.
			if !x.Valid && !n.Valid {
				continue
			}
			r := &c.r
			if c.m < 0 || r.Minutes[c.m].T != start {
				closeMinute(c)
				r.Minutes = append(r.Minutes, Minute{T: start})
				c.m, c.sum = len(r.Minutes)-1, 0
			}
			m := &r.Minutes[c.m]
			if x.Valid {
				m.N++
				c.sum += x.V
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
	}
	for k := range NRates {
		c := &cs[k]
		closeMinute(c)
		r := c.r
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
