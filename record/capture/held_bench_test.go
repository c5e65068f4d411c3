package capture

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/expo"
)

// BenchmarkWriterHeld is the memory a writer holds for the rows it has not
// yet written into their final file: 8 targets serving the real vLLM V1
// page every 2 s, for 20 minutes, each minute ended as the live recorder
// ends it (compact_every 10). held-MB is the largest live heap after a
// collection at a minute's end, the writing of the minute's files waited
// for; cpu-ms/scrape the time per scrape, all of it charged (with -cpu 1).
func BenchmarkWriterHeld(b *testing.B) {
	body := vllmPage(b)
	const targets, minutes = 8, 20
	var held uint64
	var scrapes int64
	b.ReportAllocs()
	for b.Loop() {
		w, err := NewWriter(b.TempDir(), runB, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		in := make([]expo.Interner, targets)
		var ms runtime.MemStats
		for m := range minutes {
			scrapes += appendMinute(b, w, in, body, m)
			if err := minuteEnd(w); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			held = max(held, ms.HeapAlloc)
			b.StartTimer()
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(held)/(1<<20), "held-MB")
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(scrapes), "cpu-ms/scrape")
}

// BenchmarkCloseFullGroup times a stop at the worst moment for the bound:
// 8 targets serving the real vLLM V1 page every 2 s, nine minutes ended
// (compact_every 10) and the tenth open, then Close, which writes what is
// not yet in its final file.
func BenchmarkCloseFullGroup(b *testing.B) {
	body := vllmPage(b)
	const targets = 8
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		w, err := NewWriter(b.TempDir(), runB, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		in := make([]expo.Interner, targets)
		for m := range 10 {
			appendMinute(b, w, in, body, m)
			if m < 9 {
				if err := minuteEnd(w); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StartTimer()
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// appendMinute appends minute m of len(in) targets serving body every 2 s
// (30 scrapes each), parsed through the targets' interners, and returns
// how many it appended.
func appendMinute(b *testing.B, w *Writer, in []expo.Interner, body []byte, m int) int64 {
	ct := "text/plain; version=0.0.4"
	var n int64
	for k := range 30 {
		seq := int64(m*30 + k)
		for t := range in {
			s := Scrape{RunID: runB, Target: "vllm-" + strconv.Itoa(t), Endpoint: EndpointMetrics, Seq: seq, Outcome: OutcomeOK,
				ScheduledNs: seq * 2e9, StartNs: seq*2e9 + 1, FirstByteNs: seq*2e9 + 2, EndNs: seq*2e9 + 3, ContentType: &ct, Body: body}
			ParseWith(&s, &in[t])
			if err := w.Append(s); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	return n
}
