package analyze

import (
	"testing"

	"github.com/llmrec/llmrec/record/capture"
)

// BenchmarkBatch is a batch's round trip on the parallel replay's path:
// a full batch of polls of 281 samples (a 24 h replay's average) found in
// place (no names), added by the reading goroutine and read back by the
// worker, per row.
func BenchmarkBatch(b *testing.B) {
	const n = 281
	w := capture.Row{Target: 3, Seq: 7, FirstByte: 1, Err: -1, Value: make([]float64, n)}
	for j := range w.Value {
		w.Value[j] = float64(j)
	}
	var bt batch
	var sum float64
	b.ReportAllocs()
	for b.Loop() {
		for range batchRows {
			bt.add(&w, true)
		}
		for k := range bt.rows {
			r := bt.at(k)
			sum += r.Value[n-1]
		}
		bt.reset()
	}
	if sum == 0 {
		b.Fatal("no values read back")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchRows), "ns/row")
}
