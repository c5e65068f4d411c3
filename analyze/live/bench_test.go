package live_test

import (
	"flag"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/live"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
)

var benchDuration = flag.Duration("top.duration", 2*time.Minute, "BenchmarkRefresh: the recording's length")

// One refresh of llmrec top on 100 engines recorded at 1 s: the frame
// read from the folder. At 1 s a refresh, ns/op ÷ 1e9 is the share of a
// core top uses (the target is ≤ 5 %: 50 ms). A frame replays the folder
// from its start, so the cost grows with -top.duration.
func BenchmarkRefresh(b *testing.B) {
	dir := b.TempDir()
	sc := sim.LongScenario(100, *benchDuration, 1)
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second, Duration: *benchDuration, Seed: 1}, 0, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		f, err := live.Read(live.Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if len(f.Targets) != 100 {
			b.Fatalf("%d targets", len(f.Targets))
		}
	}
}
