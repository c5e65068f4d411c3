package record

import (
	"encoding/json"
	"strings"
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

// A generated recording of a llama.cpp b4748 engine stores its
// Process-Start-Time-Unix header as the recorder stores it (a digest),
// one value per process: it changes at the restart and only there.
func TestGeneratedStartHeader(t *testing.T) {
	sc, err := sim.ParseScenario([]byte(`name = "b4748"
duration = "20s"
[[engine]]
name = "llama"
format = "llamacpp"
version = "b4748-c392e5094"
[[engine.phase]]
at = "0s"
decode_tps = 400
prompt_tps = 100
running = 2
[[engine.event]]
at = "10500ms"
kind = "restart"
`), "b4748.toml")
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	err = sim.Generate(sc, sim.GenerateOptions{Interval: time.Second, Duration: 20 * time.Second}, func(g sim.Generated) error {
		s := FromGenerated("20261204T155644Z-0cffe947", g)
		if s.Outcome != capture.OutcomeOK || s.Headers == nil {
			t.Fatalf("seq %d: %s %v", g.Seq, s.Outcome, s.Error)
		}
		var h map[string]string
		if err := json.Unmarshal([]byte(*s.Headers), &h); err != nil {
			t.Fatal(err)
		}
		if v := h["Process-Start-Time-Unix"]; v == "" || !strings.HasPrefix(*s.Headers, `{"Content-Length"`) || !strings.Contains(*s.Headers, `"<redacted sha256:`) {
			t.Fatalf("seq %d headers %s, want the header stored as a digest", g.Seq, *s.Headers)
		}
		digests = append(digests, h["Process-Start-Time-Unix"])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	for i := 1; i < len(digests); i++ {
		if digests[i] != digests[i-1] {
			changes++
			if i != 11 {
				t.Errorf("the header changed at seq %d, want 11 (the first poll after the restart at 10.5 s)", i)
			}
		}
	}
	if len(digests) != 20 || changes != 1 {
		t.Errorf("%d polls, %d changes of the header, want 20 and 1", len(digests), changes)
	}
}
