package render

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// BenchmarkPollsDay keeps what a report draws of a day of one target's
// polls every 2 s (43,200 polls of every canonical cell, values and
// windows moving, a few refusals): kept-B/poll is the heap the Polls hold
// after the day, per poll (a report of 24 h × 8 keeps eight of these).
func BenchmarkPollsDay(b *testing.B) {
	const polls = 24 * 3600 / 2
	r := rand.New(rand.NewPCG(1, 2))
	cells := make(engine.Cells, len(engine.Canonical))
	for i, name := range engine.Canonical {
		cells[i] = engine.Named{Name: name, Cell: engine.Cell{Cell: rate.Cell{Source: "computed:Δ" + name + "/Δt", Derived: i%2 == 0}}}
	}
	var kept float64
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		ps := NewPolls()
		for k := range polls {
			for i := range cells {
				c := &cells[i].Cell.Cell
				c.Value, c.Window, c.Reason = rate.Some(r.Float64()*1000), rate.Some(2+r.NormFloat64()*0.01), ""
				if r.IntN(300) == 0 {
					c.Value, c.Reason = rate.Num{}, rate.ReasonStale
				}
			}
			ps.Add("x", &analyze.Poll{T: 1.7e9 + 2*float64(k), Cells: cells})
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		kept = float64(m1.HeapAlloc-m0.HeapAlloc) / polls
		runtime.KeepAlive(ps)
	}
	b.ReportMetric(kept, "kept-B/poll")
}
