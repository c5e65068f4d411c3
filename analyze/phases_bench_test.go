package analyze

import (
	"testing"
	"time"
)

// BenchmarkPhases times the tail's phases alone (analyzer.phases: the
// found phases, each target's named and found phases' figures and its busy
// headline) on a recording replayed and analysed once before the loop:
// -replay.dir names one, else one of -replay.duration is generated as
// BenchmarkReplay does.
func BenchmarkPhases(b *testing.B) {
	dir := benchRecording(b)
	t0 := time.Now()
	an, res, err := replay(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		b.Fatal(err)
	}
	an.tail(res)
	b.Logf("%s replayed in %v: %d targets, %d samples, %d phases", dir, time.Since(t0).Round(time.Millisecond), len(res.Targets), an.samples, len(res.Output.Phases))
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		an.phases(res, an.marks, an.markProblems)
	}
	b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}
