package capture

import "testing"

// BenchmarkOpenSealed is what a replay does to a sealed segment before
// reading its rows, on the goroutine that opens it ahead: the check
// against its seal (the file read into a reused buffer, its CRC-32C, its
// footer's row count) and the open (footer, every page's header).
func BenchmarkOpenSealed(b *testing.B) {
	_, seg, seals := sealedSegment(b, 600, "a", "b", "c", "d")
	bufs := make(chan []byte, 1)
	b.ReportAllocs()
	for b.Loop() {
		a := &opened{path: seg, done: make(chan struct{})}
		a.open(seals, bufs)
		if a.verr != nil || a.err != nil || a.seal == nil {
			b.Fatal(a.verr, a.err)
		}
		a.close()
	}
}
