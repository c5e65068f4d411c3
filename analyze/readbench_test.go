package analyze

import (
	"testing"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// BenchmarkReadSealed is the reading a replay does, without the replay:
// each segment checked against its seal and opened ahead (Ahead) while
// the one before is read (ReadSealed), with the headers column, the
// consumer's Known saying every poll's series are known (a replay's
// steady state: family and type not decoded). It is the reading
// goroutine and the read-ahead of BenchmarkReplay/summary. Without
// -replay.dir it replays the same generated recording.
func BenchmarkReadSealed(b *testing.B) {
	dir, samples := *replayDir, 0
	if dir == "" {
		dir = b.TempDir()
		_, samples = generate(b, sim.LongScenario(8, *replayDuration, 1), dir, sim.GenerateOptions{})
	} else {
		_, samples = countRecording(b, dir)
	}
	run, err := capture.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	seals, err := capture.ReadSeals(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		r := capture.NewColumnReader(capture.NewStrings())
		r.Headers = true
		r.Known = func(*capture.Row) bool { return true }
		n := 0
		for i, seg := range run.Segments {
			if i+1 < len(run.Segments) {
				r.Ahead(seals, run.Segments[i+1])
			}
			if _, err := r.ReadSealed(seals, seg, func(w *capture.Row) { n += len(w.Name) }); err != nil {
				b.Fatal(err)
			}
		}
		if n < samples {
			b.Fatalf("read %d samples, %d of them a poll's", n, samples)
		}
	}
	c := (cpuTime(b) - cpu0).Seconds() / float64(b.N)
	b.ReportMetric(float64(samples)/c, "samples/cpu-s")
	b.ReportMetric(float64(samples)/(b.Elapsed().Seconds()/float64(b.N)), "samples/s")
}
