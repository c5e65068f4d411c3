package render

import (
	"math"
	"reflect"
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
	if tp.late != 2 || tp.t.len() != 3 || !any || len(points) != 2 || points[1].T != 3 || points[1].Cell.Value.V != 3 {
		t.Fatalf("drawn %v at %v, late %d", points, tp.t, tp.late)
	}
	if tp.sources[engine.DecodeTokensPerSecond] != "s" {
		t.Errorf("headline source %q", tp.sources[engine.DecodeTokensPerSecond])
	}
}

// A quantile cell's bucket survives the packing, as one id per distinct
// bucket: polls in one bucket share it, a cell without one has none.
func TestPollsKeepBuckets(t *testing.T) {
	name := engine.ITL + "__p50"
	b1 := rate.Bucket{Lo: rate.Some(0.01), Hi: rate.Some(0.025)}
	over := rate.Bucket{Lo: rate.Some(0.05), Flags: rate.FlagPastEdge}
	ps := NewPolls()
	for i, b := range []rate.Bucket{b1, b1, over, {}, b1} {
		cells := engine.Cells{{Name: name, Cell: engine.Cell{Cell: rate.Cell{Value: rate.Some(0.02), Source: "s", Bucket: b}}}}
		ps.Add("x", &analyze.Poll{T: float64(i + 1), Cells: cells})
	}
	points, _ := ps.series(ps.target("x"), name)
	want := []rate.Bucket{b1, b1, over, {}, b1}
	for i, p := range points {
		if p.Cell.Bucket != want[i] {
			t.Errorf("poll %d: bucket %+v, want %+v", i, p.Cell.Bucket, want[i])
		}
	}
	if len(ps.buckets.list) != 3 { // none, b1, over
		t.Errorf("%d buckets kept, want 3: %v", len(ps.buckets.list), ps.buckets.list)
	}
}

// A charted cell comes out of the packing as it went in, field by field,
// over more polls than a chunk holds: a value refused with its number
// kept, windows, texts, notes, a bucket; an absent cell stays absent.
func TestPollsCellsRoundTrip(t *testing.T) {
	name := engine.TTFT + "__p95"
	var want []rate.Cell
	ps := NewPolls()
	for i := range 3*chunkLen + 7 {
		c := rate.Cell{Value: rate.Num{V: float64(i) / 7, Valid: i%5 != 0}, Window: rate.Num{V: 2 + float64(i%13)/100, Valid: i%3 != 0},
			Source: []string{"a", "b"}[i%2], Derived: i%4 == 0, Reason: []string{"", rate.ReasonStale}[i%5/4],
			Severity: []string{"", rate.SeverityWarn}[i%7/6], Notes: [][]string{nil, {"n1", "n2"}}[i%11/10],
			Bucket: []rate.Bucket{{}, {Lo: rate.Some(0.1), Hi: rate.Some(float64(i % 3))}}[i%2]}
		cells := engine.Cells{{Name: name, Cell: engine.Cell{Cell: c}}}
		if i%17 == 16 {
			cells = nil // the cell absent from this poll
		} else {
			want = append(want, c)
		}
		ps.Add("x", &analyze.Poll{T: float64(i + 1), Cells: cells})
	}
	points, _ := ps.series(ps.target("x"), name)
	if len(points) != len(want) {
		t.Fatalf("%d points, want %d", len(points), len(want))
	}
	for i, p := range points {
		if !reflect.DeepEqual(p.Cell, want[i]) {
			t.Fatalf("point %d: %+v, want %+v", i, p.Cell, want[i])
		}
	}
}

// TestPollsPackedRuns: a gauge that holds its value for stretches (kept as
// runs) and one that moves at every poll (kept as values) come back bit
// for bit, -0 and NaN included, across chunks and the chunk being filled.
func TestPollsPackedRuns(t *testing.T) {
	held, moving := engine.RequestsRunning, engine.KVCacheUsageRatio
	ps := NewPolls()
	n := 3*chunkLen + 7
	val := func(name string, i int) float64 {
		switch {
		case name == moving:
			return float64(i) / 7
		case i%500 == 499:
			return math.Copysign(0, -1)
		case i%700 == 699:
			return math.NaN()
		}
		return float64(i / 300)
	}
	for i := range n {
		var cells engine.Cells
		for _, name := range []string{held, moving} {
			cells = append(cells, engine.Named{Name: name, Cell: engine.Cell{Cell: rate.Cell{Value: rate.Some(val(name, i)), Source: name}}})
		}
		ps.Add("x", &analyze.Poll{T: float64(i + 1), Cells: cells})
	}
	tp := ps.target("x")
	if pc := tp.cols[held].val.full[0]; pc.ends == nil || len(pc.vals) > 10 {
		t.Errorf("held gauge's first chunk: %d values, runs %v; want a few runs", len(pc.vals), pc.ends != nil)
	}
	if pc := tp.cols[moving].val.full[0]; pc.ends != nil {
		t.Errorf("moving value's first chunk kept as %d runs, want its values", len(pc.vals))
	}
	for _, name := range []string{held, moving} {
		points, _ := ps.series(tp, name)
		if len(points) != n {
			t.Fatalf("%s: %d points, want %d", name, len(points), n)
		}
		for i, p := range points {
			if got, want := math.Float64bits(p.Cell.Value.V), math.Float64bits(val(name, i)); got != want || p.T != float64(i+1) || p.Cell.Source != name {
				t.Fatalf("%s point %d: %v at %v (%s), want %v", name, i, p.Cell.Value.V, p.T, p.Cell.Source, val(name, i))
			}
		}
	}
}
