package openmetrics

import (
	"flag"
	"io"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
)

var benchDir = flag.String("export.dir", "", "recording to export in BenchmarkExport (llmrec sim -generate DIR -engines 8 -duration 1h)")

// BenchmarkExport exports the recording -export.dir to nowhere.
func BenchmarkExport(b *testing.B) {
	if *benchDir == "" {
		b.Skip("give -export.dir DIR")
	}
	r, err := capture.Open(*benchDir)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var st Stats
	for b.Loop() {
		st, err = Write(io.Discard, r, Options{TempDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
