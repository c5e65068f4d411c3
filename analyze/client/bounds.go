package client

import (
	"fmt"
	"math"
	"slices"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Bounds of what a client file may hold, checked after every read: a
// file past them is refused (or, for stragglers, its records left out and
// counted), never read into figures it would break.
const (
	// MaxPhases bounds the phases a file can cut: distinct phase labels,
	// stages, summaries (100 k distinct labels ran analyze out of memory).
	MaxPhases = 1000
	// MaxPhaseName bounds a phase label or stage name, in bytes (as a
	// mark's name: record/capture.MaxMarkName).
	MaxPhaseName = 200
	// MaxTokens bounds a request's token counts: no real request holds a
	// trillion, and sums of such counts overflow.
	MaxTokens = 1e12
)

// Unix times a record may carry: 2001-09-09 to 2286-11-20 (as epochRanges
// in seconds).
const minUnix, maxUnix = 1e9, 1e10

// checkBounds refuses a run holding a value that is not finite, a time that
// is no Unix time, a token count past its bound, or more
// phases (or longer phase names) than MaxPhases (MaxPhaseName): the error
// names the file and line (a JSON document's position).
func checkBounds(run *Run, file string) error {
	labels := map[string]bool{}
	for i := range run.Requests {
		r := &run.Requests[i]
		if err := checkRequest(r); err != nil {
			return fmt.Errorf("%s:%d: %w", file, r.Line, err)
		}
		if r.Phase == "" || labels[r.Phase] {
			continue
		}
		if len(r.Phase) > MaxPhaseName {
			return fmt.Errorf("%s:%d: a phase label of %d bytes (at most %d)", file, r.Line, len(r.Phase), MaxPhaseName)
		}
		if labels[r.Phase] = true; len(labels) > MaxPhases {
			return fmt.Errorf("%s:%d: more than %d distinct phase labels", file, r.Line, MaxPhases)
		}
	}
	if len(run.Stages) > MaxPhases || len(run.Summaries) > MaxPhases {
		return fmt.Errorf("%s: %d stages and %d summaries (at most %d of each)", file, len(run.Stages), len(run.Summaries), MaxPhases)
	}
	for _, s := range run.Stages {
		switch {
		case len(s.Name) > MaxPhaseName:
			return fmt.Errorf("%s: stage name of %d bytes (at most %d)", file, len(s.Name), MaxPhaseName)
		case !isUnix(s.Start) || !isUnix(s.End):
			return fmt.Errorf("%s: stage %q: bounds %v to %v are not Unix times after 2001", file, s.Name, s.Start, s.End)
		}
	}
	for _, s := range run.Summaries {
		if len(s.Name) > MaxPhaseName {
			return fmt.Errorf("%s: summary name of %d bytes (at most %d)", file, len(s.Name), MaxPhaseName)
		}
		for _, v := range []rate.Num{s.Start, s.End} {
			if v.Valid && !isUnix(v.V) {
				return fmt.Errorf("%s: summary %q: bound %v is not a Unix time after 2001", file, s.Name, v.V)
			}
		}
		for _, v := range s.Values {
			if !finite(v.V) {
				return fmt.Errorf("%s: summary %q: %s %v is not a finite number", file, s.Name, v.Field, v.V)
			}
		}
	}
	for _, p := range run.Power {
		if !isUnix(p.T) || p.Watts.Valid && !finite(p.Watts.V) || p.EnergyJ.Valid && !finite(p.EnergyJ.V) {
			return fmt.Errorf("%s: a power sample of %s at %v: %v W, %v J is not finite or not placed in time", file, p.GPU, p.T, p.Watts.V, p.EnergyJ.V)
		}
	}
	return nil
}

// checkRequest refuses a request whose times, durations or token counts
// are out of their bounds.
func checkRequest(r *Request) error {
	if !isUnix(r.Start) {
		return fmt.Errorf("start %v is not a Unix time after 2001", r.Start)
	}
	for _, t := range []struct {
		name string
		v    rate.Num
	}{{"first token", r.FirstToken}, {"end", r.End}} {
		if t.v.Valid && !isUnix(t.v.V) {
			return fmt.Errorf("%s %v is not a Unix time after 2001", t.name, t.v.V)
		}
	}
	for _, d := range []struct {
		name string
		v    rate.Num
	}{{"ttft", r.TTFT}, {"itl", r.ITL}} {
		// A long one is a straggler's (LeaveOut), not refused.
		if d.v.Valid && !finite(d.v.V) {
			return fmt.Errorf("%s %v s is not finite", d.name, d.v.V)
		}
	}
	for _, n := range []struct {
		name string
		v    rate.Num
	}{{"input tokens", r.InputTokens}, {"output tokens", r.OutputTokens}} {
		if n.v.Valid && !(n.v.V >= 0 && n.v.V <= MaxTokens) {
			return fmt.Errorf("%s %v is not a count from 0 to %g", n.name, n.v.V, float64(MaxTokens))
		}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func isUnix(t float64) bool { return t >= minUnix && t < maxUnix }

// Stragglers: a record last seen more than StragglerMargin past the
// client's own run (its stages' end, else its last request's start) is
// left out of every phase and figure and counted in Meta.Skipped: one
// request ending an hour after the run stretched its phase and made its
// tokens/s near 0.
const (
	StragglerMinS = 60.0 // at least this many seconds
	StragglerFrac = 0.1  // or this share of the run's span, if longer
)

// StragglerMargin is how far past bounds [lo, hi] a record may be seen
// before it is left out: max(StragglerMinS, StragglerFrac·(hi − lo)).
func StragglerMargin(lo, hi float64) float64 {
	return max(StragglerMinS, StragglerFrac*(hi-lo))
}

// dropStragglers leaves out the run's records last seen more than
// StragglerMargin past its own run bounds, counting them in Meta.Skipped.
func dropStragglers(run *Run) {
	if len(run.Requests) == 0 {
		return
	}
	lo, hi, how := math.Inf(1), math.Inf(-1), "the last request's start"
	for i := range run.Requests {
		lo, hi = min(lo, run.Requests[i].Start), max(hi, run.Requests[i].Start)
	}
	if len(run.Stages) > 0 {
		lo, hi, how = math.Inf(1), math.Inf(-1), "the client's last stage's end"
		for _, s := range run.Stages {
			lo, hi = min(lo, s.Start), max(hi, s.End)
		}
	}
	LeaveOut(run, lo, hi, "the client's own run ("+how+")")
}

// LeaveOut leaves out of run the records that start more than
// StragglerMargin before lo or are last seen more than that after hi
// (where names the bounds), counting each in Meta.Skipped with the bounds,
// and says so in a note. The records are the run's own slice, filtered in
// place.
func LeaveOut(run *Run, lo, hi float64, where string) int {
	m := StragglerMargin(lo, hi)
	reason := fmt.Sprintf("outside %s [%s, %s] by more than %ss: left out of every phase and figure", where, Stamp(lo), Stamp(hi), num(m))
	n := 0
	run.Requests = slices.DeleteFunc(run.Requests, func(r Request) bool {
		if r.Start >= lo-m && last(&r) <= hi+m {
			return false
		}
		run.skip(reason, r.Line)
		n++
		return true
	})
	if n > 0 {
		run.note("%d records %s", n, reason)
	}
	return n
}
