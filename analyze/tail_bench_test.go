package analyze

import (
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/record/sim"
)

// BenchmarkTail times Analyze's serial tail alone (findings, phases, the
// answer and the sweep, see analyzer.tail) on a recording replayed once
// before the loop: -replay.dir names one (a day of 8 targets: `llmrec sim
// -generate DIR -engines 8 -duration 24h`), else one of -replay.duration
// is generated as BenchmarkReplay does. The options are llmrec analyze's
// without --json (SkipPolls).
func BenchmarkTail(b *testing.B) {
	dir := benchRecording(b)
	t0 := time.Now()
	an, res, err := replay(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s replayed in %v: %d targets, %d samples", dir, time.Since(t0).Round(time.Millisecond), len(res.Targets), an.samples)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		an.tail(res)
	}
	b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// benchRecording is the recording a benchmark reads: -replay.dir, else
// one of -replay.duration generated as BenchmarkReplay does.
func benchRecording(b *testing.B) string {
	if *replayDir != "" {
		return *replayDir
	}
	dir := b.TempDir()
	generate(b, sim.LongScenario(8, *replayDuration, 1), dir, sim.GenerateOptions{})
	return dir
}

// BenchmarkFindings times the findings alone (findings.Analyze: views,
// edges, incidents, rollups, facts, drift and the fleet) on the run a
// recording's replay leaves (see BenchmarkTail for -replay.dir); the
// options are llmrec analyze's without --json (SkipPolls).
func BenchmarkFindings(b *testing.B) {
	dir := benchRecording(b)
	an, res, err := replay(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		b.Fatal(err)
	}
	defer res.Close()
	run := an.run()
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		findings.Analyze(run)
	}
	b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}
