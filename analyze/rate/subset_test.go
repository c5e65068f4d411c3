package rate

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// TestHistogramCellsSubsets checks that each cell HistogramCells makes
// when asked for some of the five is the cell it makes when asked for
// all, for every subset, poll by poll on random timelines: one label set
// read in place and two gathered, with and without the engine's _count
// (then the count is the +Inf bucket's, through the monotonic pass), and
// refused polls.
func TestHistogramCellsSubsets(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 24))
			f := newHistFeed()
			e := New(Config{Span: 10})
			noCount, oneSet := seed%2 == 1, seed%4 < 2
			for _, k := range f.keys {
				// One set: its buckets alone are the series, read in place.
				if oneSet && !labelsHave(k.Labels, `set="a"`) {
					continue
				}
				id := e.Register(k)
				if k.Series == "h_bucket" {
					e.SetBucket(id)
				}
			}
			T, inPlace := 1e9, 0
			valued := make([]int, 5)
			for i := range 1500 {
				T += gap(r)
				p := f.next(r, T)
				kept := p.Samples[:0]
				for _, s := range p.Samples {
					if (noCount && s.Key.Series == "h_count") || (oneSet && !labelsHave(s.Key.Labels, `set="a"`)) {
						continue
					}
					kept = append(kept, s)
				}
				p.Samples = kept
				if r.IntN(100) == 0 {
					p.T = T - 5 // out of order: refused
				}
				e.Observe(p)
				if e.wholeRun(e.seriesOf("h_bucket")) != nil {
					inPlace++
				}
				var all Hist
				e.HistogramCells(&HistPtrs{&all.Count, &all.Mean, &all.P50, &all.P95, &all.P99}, "h", nil)
				full := [5]Cell{all.Count, all.Mean, all.P50, all.P95, all.P99}
				for k, c := range full {
					if c.Value.Valid {
						valued[k]++
					}
				}
				for m := 1; m < 31; m++ {
					var got [5]Cell
					var hp HistPtrs
					for k := range hp {
						got[k] = Cell{Reason: "untouched"}
						if m&(1<<k) != 0 {
							hp[k] = &got[k]
						}
					}
					e.HistogramCells(&hp, "h", nil)
					for k := range got {
						want := full[k]
						if m&(1<<k) == 0 {
							want = Cell{Reason: "untouched"}
						}
						if !reflect.DeepEqual(got[k], want) {
							t.Fatalf("poll %d, cells %05b: cell %d is %+v, want %+v", i, m, k, got[k], want)
						}
					}
				}
			}
			if oneSet != (inPlace > 500) {
				t.Fatalf("%d polls of 1500 read in place (one set: %v)", inPlace, oneSet)
			}
			// Every cell valued on many polls, or the test compared nulls.
			for k, n := range valued {
				if n < 300 {
					t.Fatalf("cell %d valued on %d polls of 1500", k, n)
				}
			}
		})
	}
}
