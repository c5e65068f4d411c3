package record

import (
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// A generated recording goes through the recorder's own parse and segment
// path: one segment per rotate of simulated time, every row parsed.
func TestWriteGenerated(t *testing.T) {
	dir := t.TempDir()
	sc := sim.DefaultScenario()
	st, err := WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second, Duration: 30 * time.Second}, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(sc.Engines)) * 30
	// Three 10 s segments, compacted into one file at the end.
	if st.Scrapes != n || st.Segments != 1 {
		t.Fatalf("stats %+v, want %d scrapes in 1 compacted file", st, n)
	}
	r, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := capture.Inspect(r)
	if rep.Rows != n || len(r.Manifests) != 1 || r.Manifests[0].End == nil {
		t.Fatalf("report %+v", rep)
	}
	missed := 0
	for _, tg := range rep.Targets {
		e := tg.Endpoints[0]
		if e.Outcomes[capture.OutcomeParseError] != 0 || e.Outcomes[capture.OutcomeOK] == 0 {
			t.Errorf("%s outcomes %v", tg.Name, e.Outcomes)
		}
		missed += e.Outcomes[capture.OutcomeMissed]
	}
	// A hang outlasts the timeout (the interval, as the recorder's): the
	// attempt is abandoned and the tick after it finds it still running.
	if missed == 0 {
		t.Errorf("no missed tick: %+v", rep.Targets)
	}
}

// BenchmarkDiskPerScrape records one hour of a simulated vLLM V1 engine at
// 2 s (1,800 scrapes; a second label set joins at 30 min) through the
// recorder's parse and 60 s segment path, and reports bytes on disk per
// scrape and per sample, and raw bodies over disk bytes (the target is at
// least 30).
func BenchmarkDiskPerScrape(b *testing.B) {
	sc := sim.LongScenario(1, time.Hour, 1)
	var st GenerateStats
	for b.Loop() {
		var err error
		st, err = WriteGenerated(b.TempDir(), sc, sim.GenerateOptions{Interval: 2 * time.Second}, time.Minute, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.DiskBytes)/float64(st.Scrapes), "disk-B/scrape")
	b.ReportMetric(float64(st.DiskBytes)/float64(st.Samples), "disk-B/sample")
	b.ReportMetric(float64(st.BodyBytes)/float64(st.Scrapes), "raw-B/scrape")
	b.ReportMetric(float64(st.BodyBytes)/float64(st.DiskBytes), "raw/disk")
}
