package analyze

import (
	"flag"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

var replayDuration = flag.Duration("replay.duration", time.Hour,
	"length of the simulated recording BenchmarkReplay replays (8 engines scraped every 2 s)")

// BenchmarkReplay replays a recording of 8 simulated engines (6 vLLM, 2
// llama.cpp; restarts, a joining label set, hangs, stale and slow bodies)
// scraped every 2 s, generated once into a temporary folder with
// sim.Generate and capture.NewWriter (one segment a minute, merged ten at a
// time as the recorder does). -replay.duration sets its length (default 1 h;
// 24h took 12 minutes to generate here, the replay itself seconds). Read
// and summary cost the same per sample at any length; keeping every poll's
// cells costs more per sample the longer the recording (memory, GC).
// Sub-benchmarks:
//
//   - read:    the Parquet columns decoded into rows, nothing else;
//   - summary: Analyze with SkipPolls (read, trackers, estimator, cells);
//   - polls:   Analyze keeping every poll's cells.
func BenchmarkReplay(b *testing.B) {
	dir := b.TempDir()
	t0 := time.Now()
	scrapes, samples := generate(b, sim.LongScenario(8, *replayDuration, 1), dir, sim.GenerateOptions{})
	b.Logf("generated %v of 8 engines: %d scrapes, %d samples in %v", *replayDuration, scrapes, samples, time.Since(t0).Round(time.Second))
	report := func(b *testing.B) {
		s := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(samples)/s, "samples/s")
		b.ReportMetric(float64(scrapes)/s, "scrapes/s")
	}
	b.Run("read", func(b *testing.B) {
		run, err := capture.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			r := newSegReader(newStrtab())
			n := 0
			for _, seg := range run.Segments {
				if err := r.read(seg, func(w *row) { n += len(w.name) }); err != nil {
					b.Fatal(err)
				}
			}
			if n != samples {
				b.Fatalf("read %d samples of %d", n, samples)
			}
		}
		report(b)
	})
	for _, c := range []struct {
		name string
		skip bool
	}{{"summary", true}, {"polls", false}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: c.skip})
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Problems) > 0 || len(res.Targets) != 8 {
					b.Fatalf("problems %v, %d targets", res.Problems, len(res.Targets))
				}
			}
			report(b)
		})
	}
}
