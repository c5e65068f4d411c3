package diff

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
)

// BenchmarkDiff1h8 compares two recordings of 8 simulated engines over an
// hour (sim.LongScenario, scraped every 2 s; the candidate with other
// seeds), generated once. Sub-benchmarks, in one file so that they run on
// the same machine at the same time:
//
//   - analyze: both recordings analysed as llmrec analyze does (the
//     summaries and phases);
//   - diff:    both analysed as llmrec diff does (at once, with the
//     phases' blocks, its samples) and compared (llmrec diff without a
//     page);
//   - compare: the comparison alone, of the analyses made once.
//
// The target: diff takes no longer than analyse (the comparison's share is
// noise).
func BenchmarkDiff1h8(b *testing.B) {
	dirs := [2]string{filepath.Join(b.TempDir(), "base"), filepath.Join(b.TempDir(), "cand")}
	t0 := time.Now()
	for i, d := range dirs {
		if _, err := record.WriteGenerated(d, sim.LongScenario(8, time.Hour, 1), sim.GenerateOptions{Seed: int64(i + 1), Info: true}, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("generated two 1 h recordings of 8 engines in %v", time.Since(t0).Round(time.Second))
	// analyzeBoth analyses the two recordings one after the other, as two
	// llmrec analyze runs do, or at once, as llmrec diff does
	// (cmd/llmrec/diff.go).
	analyzeBoth := func(b *testing.B, blocks, together bool) (Side, Side) {
		var (
			s    [2]Side
			errs [2]error
			wg   sync.WaitGroup
		)
		one := func(i int) {
			res, err := analyze.Analyze(analyze.Options{Dirs: []string{dirs[i]}, SkipPolls: true, Blocks: blocks})
			s[i], errs[i] = Side{Dirs: []string{dirs[i]}, Runs: []*analyze.Result{res}}, err
		}
		for i := range dirs {
			if together {
				wg.Go(func() { one(i) })
				continue
			}
			one(i)
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			b.Fatal(err)
		}
		return s[0], s[1]
	}
	closeBoth := func(x, y Side) {
		x.Runs[0].Close()
		y.Runs[0].Close()
	}
	b.Run("analyze", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			closeBoth(analyzeBoth(b, false, false))
		}
	})
	b.Run("diff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x, y := analyzeBoth(b, true, true)
			rep, err := Compare(x, y, Options{})
			if err != nil || len(rep.Rows) == 0 {
				b.Fatalf("%v, %d rows", err, len(rep.Rows))
			}
			closeBoth(x, y)
		}
	})
	b.Run("compare", func(b *testing.B) {
		x, y := analyzeBoth(b, true, false)
		defer closeBoth(x, y)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compare(x, y, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
