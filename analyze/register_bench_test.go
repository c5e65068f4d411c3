package analyze

import (
	"slices"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
)

// BenchmarkFirstPolls is each target's first poll replayed into a new
// analyzer (a replay's per-key work: the target made, every series
// registered with the tracker, the findings and the phases, the poll's
// cells), over the first poll of each target of the recording, held in
// memory. Each series is registered once a replay, per target: the 1 h ×
// 8 recording has some 2,400 (6 vLLM targets of ~350, one of 638).
func BenchmarkFirstPolls(b *testing.B) {
	dir := benchRecording(b)
	run, err := capture.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{SkipPolls: true}
	a := newAnalyzer(opts)
	metas := map[string]*targetMeta{}
	metaOf(run, metas)
	var rows []*capture.Row
	taken := map[int32]bool{}
	series := 0
	for _, seg := range run.Segments {
		if err := a.r.Read(seg, func(w *capture.Row) {
			if !a.isPoll(w) || taken[w.Target] || len(w.Name) == 0 {
				return
			}
			taken[w.Target] = true
			c := *w
			c.Family, c.Type, c.Name, c.Labels = slices.Clone(w.Family), slices.Clone(w.Type), slices.Clone(w.Name), slices.Clone(w.Labels)
			c.Value, c.Body, c.Headers, c.NameIdx, c.LabelsIdx = slices.Clone(w.Value), nil, nil, nil, nil
			rows = append(rows, &c)
			series += len(w.Name)
		}); err != nil {
			b.Fatal(err)
		}
		// The first segment holds every target's first poll.
		if len(rows) > 0 {
			break
		}
	}
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		w := &analyzer{opts: opts, cfg: a.cfg, spans: a.spans, tab: a.tab, targets: map[int32]*targetState{},
			metas: metas, metricsID: a.metricsID, okID: a.okID, httpErrID: a.httpErrID}
		for _, r := range rows {
			w.known(r)
			w.row(r)
		}
		if len(w.targets) != len(rows) {
			b.Fatalf("%d targets of %d polls", len(w.targets), len(rows))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(series), "ns/series")
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N)/float64(series), "cpu-ns/series")
}
