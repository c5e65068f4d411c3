package phases

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/internal/par"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Output is the run's phases with their figures, plain data for JSON.
// Slices are never nil.
type Output struct {
	// Phases are the named phases (by start), then the found ones (by
	// target, then start).
	Phases []Measured `json:"phases"`
	// Busy is each target's headline: its figures over all its steady
	// phases together.
	Busy []Figures `json:"-"`
	// FleetBusy is the fleet's row of the answer: the targets' busy
	// figures added up where they add (fleetSums: each target over its own
	// steady phases) and the largest of their maxima (fleetMaxes: the
	// fullest engine); quantiles do not add across engines and are not
	// given.
	FleetBusy Fleet `json:"fleet_busy"`
	// Disagreements list the figures whose published median is more than
	// 10 % off, in the order of Phases.
	Disagreements []Finding `json:"phase_disagreements"`
	// Problems are marks that could not be paired or read.
	Problems []string `json:"phase_problems"`
}

// Measured is a phase with its figures per target it covers and, for a
// named phase, for the fleet.
type Measured struct {
	Phase
	Targets []Figures `json:"targets"`
	// Fleet sums the targets' throughput figures and gauge means over a
	// named phase; null for a found phase (one target's).
	Fleet *Fleet `json:"fleet"`
}

// Fleet is the sum of the targets' figures over one named phase.
type Fleet struct {
	Figures []Figure `json:"figures"`
}

// fleetSums are the figures the fleet adds up: per-second counts and gauge
// means, which add across engines; ratios, latencies and maxima do not.
var fleetSums = []string{
	"decode_tokens_per_second", "prompt_tokens_per_second", "prompt_tokens_computed_per_second",
	"requests_finished_per_second", "preemptions_per_second", "requests_running__mean", "requests_waiting__mean",
}

// Finding is one figure that disagrees with its published values.
type Finding struct {
	Phase   string   `json:"phase"`
	Kind    string   `json:"kind"`
	Target  string   `json:"target"`
	Start   float64  `json:"start"`
	End     float64  `json:"end"`
	Figure  string   `json:"figure"`
	Value   rate.Num `json:"value"`
	Median  rate.Num `json:"published_median"`
	Refused int      `json:"refused"`
	Detail  string   `json:"detail"`
}

// Compute measures the named phases on every target and each target's
// found phases on it, and each target's busy headline. inputs are the
// targets; found maps a target name to its found phases.
func Compute(named []Phase, found map[string][]Phase, inputs []*Input, problems []string) Output {
	out := Output{Phases: []Measured{}, Busy: []Figures{}, Disagreements: []Finding{}, Problems: problems}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	ins := slices.Clone(inputs)
	slices.SortFunc(ins, func(a, b *Input) int { return strings.Compare(a.Target.Name, b.Target.Name) })
	ns := slices.Clone(named)
	slices.SortStableFunc(ns, func(a, b Phase) int { return cmp.Compare(a.Start, b.Start) })
	// Each target is measured on its own, on every core; a worker's
	// targets share its scratch.
	type measured struct {
		named []Figures  // by named phase
		found []Measured // its found phases
		busy  Figures
	}
	per := make([]measured, len(ins))
	scs := make([]*scratch, par.Workers(len(ins)))
	for w := range scs {
		scs[w] = &scratch{}
	}
	par.For(len(ins), func(w, i int) {
		in, m := ins[i], &per[i]
		in.sc = scs[w]
		for _, p := range ns {
			m.named = append(m.named, Measure(in, []Phase{p}))
		}
		m.found, m.busy = in.foundAndBusy(found[in.Target.Name])
	})
	// The inputs are read again after (the sweep), on one goroutine.
	for _, in := range ins {
		in.sc = scs[0]
	}
	for k, p := range ns {
		m := Measured{Phase: p, Targets: []Figures{}}
		for i := range ins {
			m.Targets = append(m.Targets, per[i].named[k])
		}
		m.Fleet = fleet(m.Targets)
		out.Phases = append(out.Phases, m)
	}
	for i := range ins {
		out.Phases = append(out.Phases, per[i].found...)
		out.Busy = append(out.Busy, per[i].busy)
	}
	out.FleetBusy = fleetBusy(out.Busy)
	for _, m := range out.Phases {
		for _, tf := range m.Targets {
			for _, f := range tf.Figures {
				if f.Disagrees == "" {
					continue
				}
				refused := 0
				for _, n := range f.Published.Nulls {
					refused += n
				}
				out.Disagreements = append(out.Disagreements, Finding{Phase: m.Name, Kind: m.Kind, Target: tf.Target,
					Start: m.Start, End: m.End, Figure: f.Name, Value: f.Value, Median: f.Published.P50, Refused: refused,
					Detail: fmt.Sprintf("%s, %s on %s: %s", m.Name, f.Name, tf.Target, f.Disagrees)})
			}
		}
	}
	return out
}

// foundAndBusy measures the target's found phases, and its busy headline
// over the steady ones among them.
func (in *Input) foundAndBusy(found []Phase) ([]Measured, Figures) {
	var out []Measured
	steady := in.sum(nil)
	// Room for every poll of the target: no stretch holds more, and a
	// worker's targets of as many polls share one set of buffers.
	sc := in.scratch()
	sc.ph.reserve(in.Target.Polls.Len())
	// The steady phases' passes keep what they gather for the busy
	// headline, which is made of their polls one phase after the other:
	// its pass reads none of them again.
	sc.ph.keep.start(in.Target.Polls.Len())
	n := 0
	for _, p := range found {
		s := in.sumWith([]Phase{p}, p.Kind == KindSteady)
		if p.Kind == KindSteady {
			steady.merge(s)
			n++
		}
		sc.ph.keep.on = p.Kind == KindSteady
		in.gather(&sc.ph, s.pollsIn)
		out = append(out, Measured{Phase: p, Targets: []Figures{in.figures(s, &sc.ph)}})
	}
	sc.ph.use()
	busy := in.figures(steady, &sc.ph)
	sc.ph.done()
	if n == 0 {
		busy.Bounds.Reason = ReasonNoSteady
		for k := range busy.Figures {
			busy.Figures[k].Value, busy.Figures[k].Reason, busy.Figures[k].Bucket = rate.Num{}, ReasonNoSteady, rate.Bucket{}
		}
	}
	return out, busy
}

// fleet adds the targets' fleetSums: the sum over the targets that have a
// value, which the source names; null when none has.
func fleet(ts []Figures) *Fleet {
	fl := &Fleet{Figures: []Figure{}}
	for _, name := range fleetSums {
		f := Figure{Name: name}
		sum, n := 0.0, 0
		for _, t := range ts {
			for _, g := range t.Figures {
				if g.Name == name && g.Value.Valid {
					sum += g.Value.V
					n++
				}
			}
		}
		f.Source = fmt.Sprintf("sum over %d of %d targets", n, len(ts))
		if n == 0 {
			f.Reason = rate.ReasonAbsent
		} else {
			f.Value = rate.Some(sum)
			f.Blocks = fleetBlocks(ts, name)
		}
		fl.Figures = append(fl.Figures, f)
	}
	return fl
}

// fleetBlocks are the fleet's blocks of figure name: block k is the sum of
// every target's block k, when every target has the figure with blocks,
// as many of them, of lengths within 10 % of each other (the targets'
// blocks then cover the same stretches of the phase, give or take their
// polls); nil otherwise. A block is null where any target's is.
func fleetBlocks(ts []Figures, name string) *Blocks {
	var out *Blocks
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, t := range ts {
		i := slices.IndexFunc(t.Figures, func(g Figure) bool { return g.Name == name })
		if i < 0 || t.Figures[i].Blocks == nil || len(t.Figures[i].Blocks.Values) == 0 {
			return nil
		}
		b := t.Figures[i].Blocks
		lo, hi = min(lo, b.Seconds), max(hi, b.Seconds)
		if out == nil {
			out = &Blocks{Values: slices.Clone(b.Values)}
			continue
		}
		if len(b.Values) != len(out.Values) {
			return nil
		}
		for k, v := range b.Values {
			if !v.Valid || !out.Values[k].Valid {
				out.Values[k] = rate.Num{}
				continue
			}
			out.Values[k] = rate.Some(out.Values[k].V + v.V)
		}
	}
	if out == nil || hi > 1.1*lo {
		return nil
	}
	out.Seconds = hi
	out.Method = fmt.Sprintf("the sum of the %d targets' blocks, block by block (%d blocks of %s–%s s each)", len(ts), len(out.Values),
		strconv.FormatFloat(lo, 'f', 1, 64), strconv.FormatFloat(hi, 'f', 1, 64))
	return out
}

// fleetMaxes are the maxima the fleet's busy row takes the largest of.
var fleetMaxes = []string{"requests_waiting__max", "kv_cache_usage_ratio__max"}

// fleetBusy is the fleet's busy row: the sums of fleet, then the largest
// of each of fleetMaxes, each naming how many targets it read.
func fleetBusy(ts []Figures) Fleet {
	fl := *fleet(ts)
	for k := range fl.Figures {
		fl.Figures[k].Source = "the sum of the targets' busy figures, each over its own steady phases (" + strings.TrimPrefix(fl.Figures[k].Source, "sum ") + ")"
	}
	for _, name := range fleetMaxes {
		f := Figure{Name: name}
		top, n := 0.0, 0
		for _, t := range ts {
			if g, ok := t.Get(name); ok && g.Value.Valid {
				top = max(top, g.Value.V)
				n++
			}
		}
		f.Source = fmt.Sprintf("largest of the targets' busy maxima, over %d of %d targets", n, len(ts))
		if n == 0 {
			f.Reason = rate.ReasonAbsent
		} else {
			f.Value = rate.Some(top)
		}
		fl.Figures = append(fl.Figures, f)
	}
	return fl
}

// Get returns the figure called name.
func (f *Figures) Get(name string) (Figure, bool) {
	for _, g := range f.Figures {
		if g.Name == name {
			return g, true
		}
	}
	return Figure{}, false
}

// Get returns the fleet's figure called name.
func (f *Fleet) Get(name string) (Figure, bool) {
	return (&Figures{Figures: f.Figures}).Get(name)
}
