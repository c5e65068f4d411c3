package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/expo"
)

// vllmPage is the real vLLM V1 capture, parsed; the benchmark skips when
// the shared folder is absent.
func vllmPage(b *testing.B) []expo.Sample {
	return realPage(b, "vllm-v1-armandossrecife-vllm-server-api-chat.txt")
}

// realPage is the samples of a real capture; the benchmark skips without
// the shared folder.
func realPage(b *testing.B, name string) []expo.Sample {
	body, err := os.ReadFile(filepath.Join(realCaptures, name))
	if err != nil {
		b.Skipf("no real capture %s (%v): the shared folder is absent", name, err)
	}
	ss, err := expo.Parse(body, "text/plain; version=0.0.4")
	if err != nil {
		b.Fatal(err)
	}
	return ss
}

// advancePage moves the page's values to poll i as a loaded engine would:
// every counter grows, each histogram's buckets by amounts that rise with
// le (so the cumulative counts stay cumulative) and its _count with its
// +Inf bucket; one poll in four adds nothing to the histograms (no request
// ended), and the gauges wander (the _created times and the process start
// stay).
func advancePage(ss []expo.Sample, base []float64, i int) {
	moved := i%4 != 0
	var k float64 // position of a bucket within its label set
	for j := range ss {
		s := &ss[j]
		switch {
		case s.Type == "histogram" && strings.HasSuffix(s.Name, "_bucket"):
			k++
			if moved {
				s.Value += k
			}
		case s.Type == "histogram" && strings.HasSuffix(s.Name, "_count"):
			// The +Inf bucket came just before: its increment is the count's.
			if moved {
				s.Value += k
			}
			k = 0
		case s.Type == "histogram":
			if moved {
				s.Value += 0.25 * float64(1+j%5)
			}
		case s.Type == "counter":
			s.Value += float64(1 + j%13)
		case s.Type == "gauge" && s.Family != "process_start_time_seconds" && !strings.HasSuffix(s.Name, "_created"):
			s.Value = base[j] + float64((i+j)%7)
		}
	}
}

// BenchmarkTrackerVLLM is the per-poll cost of the cells of a real vLLM V1
// page (the estimator's Observe and the reader's cells, Tracker.End, with
// SetAll): series keyed once, as a replay does, polls 2 s apart with every
// counter and histogram moving.
func BenchmarkTrackerVLLM(b *testing.B) { benchTrackerVLLM(b, nil) }

// BenchmarkTrackerVLLMSummary is BenchmarkTrackerVLLM with the cells a
// replay without its polls wants (Tracker.Want; wantSets[0] is the
// summary's set).
func BenchmarkTrackerVLLMSummary(b *testing.B) { benchTrackerVLLM(b, wantSets[0]) }

func benchTrackerVLLM(b *testing.B, want []string) {
	benchTracker(b, vllmPage(b), VLLM, want, TTFT+SuffixP50)
}

// BenchmarkTrackerLlamaCppSummary is the same for a real llama.cpp page
// (llama-server's counters move at completion: the tracker chooses their
// span, as a replay's does), with the summary's cells.
func BenchmarkTrackerLlamaCppSummary(b *testing.B) {
	benchTracker(b, realPage(b, "llamacpp-cpu-tiny-midload.txt"), LlamaCpp, wantSets[0], DecodeTokensPerSecond)
}

// benchTracker times the polls of page ss through a tracker of engine
// hint wanting want (nil: every cell), once cell check is valued.
func benchTracker(b *testing.B, ss []expo.Sample, hint string, want []string, check string) {
	// The package's tests check every query's feed (strictFeeds); a
	// replay does not.
	strictFeeds = false
	defer func() { strictFeeds = true }()
	tr := NewTracker(hint, rate.Config{Span: 10})
	tr.Want(want...)
	tr.SetStepSpan(2)
	if hint == LlamaCpp {
		tr.SetCompletionSpan(2, 60)
	}
	var dst Cells
	poll := pagePolls(ss, tr, &dst)
	i := 0
	for ; i < 16; i++ { // warm: every key seen, histories at their steady length
		poll(i)
	}
	if c, _ := dst.Get(check); !c.Value.Valid {
		b.Fatalf("%s is null (%s): the page does not move", check, c.Reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		poll(i)
		i++
	}
	b.ReportMetric(float64(b.N*len(ss))/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkSetAllVLLM is the per-poll cost of SetAll alone on a real vLLM
// V1 page: a poll's samples, in the ids of the poll before, fed to the
// tracker (polls alternating between two pages of moved values).
func BenchmarkSetAllVLLM(b *testing.B) {
	ss := vllmPage(b)
	base := make([]float64, len(ss))
	for j := range ss {
		base[j] = ss[j].Value
	}
	tr := NewTracker(VLLM, rate.Config{Span: 10})
	ids := make([]int32, len(ss))
	for j := range ss {
		s := &ss[j]
		ids[j] = tr.Key(Series{Family: s.Family, Type: s.Type, Name: s.Name, Labels: s.Labels})
	}
	var pages [2][]float64
	for i := range pages {
		advancePage(ss, base, i+1)
		for j := range ss {
			pages[i] = append(pages[i], ss[j].Value)
		}
	}
	var dst Cells
	for i := range 4 { // the engine decided, the lists built
		tr.Begin(1e9+2*float64(i), 0)
		tr.SetAll(ids, pages[i%2])
		dst = tr.End(dst)
	}
	b.ReportAllocs()
	i := 4
	for b.Loop() {
		tr.Begin(1e9+2*float64(i), 0)
		tr.SetAll(ids, pages[i%2])
		i++
	}
	b.ReportMetric(float64(b.N*len(ss))/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkTrackerDecodeOnly is the per-poll cost of a decode-only tracker
// (Tracker.DecodeOnly: the findings' interval and counterfactual replays)
// on the series a replay feeds it from a real vLLM V1 page: the decode
// counters, their _created siblings and the process start.
func BenchmarkTrackerDecodeOnly(b *testing.B) {
	all := vllmPage(b)
	var ss []expo.Sample
	for _, s := range all {
		if s.Family == "vllm:generation_tokens" || s.Family == "vllm:generation_tokens_total" || s.Family == "process_start_time_seconds" ||
			strings.HasPrefix(s.Name, "vllm:generation_tokens_") {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		b.Fatal("no decode series on the page")
	}
	strictFeeds = false // as in a replay
	defer func() { strictFeeds = true }()
	tr := NewTracker(VLLM, rate.Config{Span: 10})
	tr.DecodeOnly()
	var dst Cells
	poll := pagePolls(ss, tr, &dst)
	i := 0
	for ; i < 16; i++ {
		poll(i)
	}
	if c := dst[0].Cell; !c.Value.Valid {
		b.Fatalf("decode is null (%s) over %d series", c.Reason, len(ss))
	}
	b.ReportAllocs()
	for b.Loop() {
		poll(i)
		i++
	}
}

// BenchmarkDecodeUnder is the per-poll cost of the findings' replays
// under the interval gates and two counterfactual spans, fed what a
// replay feeds them (the decode family's series and the process start) of
// a real vLLM V1 page and a real TGI page (whose decode family is a
// histogram): three decode-only trackers (separate), or one tracker
// replaying the three configurations (under).
func BenchmarkDecodeUnder(b *testing.B) {
	strictFeeds = false // as in a replay
	defer func() { strictFeeds = true }()
	for _, page := range []struct{ id, file, family string }{
		{VLLM, "vllm-v1-armandossrecife-vllm-server-api-chat.txt", "vllm:generation_tokens"},
		{TGI, "tgi-datadog-integrations-core.txt", "tgi_request_generated_tokens"},
	} {
		body, err := os.ReadFile(filepath.Join(realCaptures, page.file))
		if err != nil {
			b.Skipf("no real capture (%v): the shared folder is absent", err)
		}
		all, err := expo.Parse(body, "text/plain; version=0.0.4")
		if err != nil {
			b.Fatal(err)
		}
		var ss []expo.Sample
		for _, s := range all {
			if strings.HasPrefix(s.Family, page.family) || s.Family == "process_start_time_seconds" {
				ss = append(ss, s)
			}
		}
		for _, mode := range []string{"separate", "under"} {
			b.Run(page.id+"/"+mode, func(b *testing.B) { benchDecodeUnder(b, page.id, ss, mode == "under") })
		}
	}
}

func benchDecodeUnder(b *testing.B, id string, ss []expo.Sample, under bool) {
	var trs []*Tracker
	if under {
		tr := NewTracker(id, decodeConfigs[0])
		tr.DecodeUnder(decodeConfigs[1:]...)
		trs = append(trs, tr)
	} else {
		for _, c := range decodeConfigs {
			tr := NewTracker(id, c)
			tr.DecodeOnly()
			trs = append(trs, tr)
		}
	}
	page := append([]expo.Sample(nil), ss...)
	base := make([]float64, len(page))
	for j := range page {
		base[j] = page[j].Value
	}
	ids := make([]int32, len(page))
	for _, tr := range trs {
		for j := range page {
			s := &page[j]
			ids[j] = tr.Key(Series{Family: s.Family, Type: s.Type, Name: s.Name, Labels: s.Labels})
		}
	}
	vals := make([]float64, len(page))
	dst := make([]Cells, len(trs))
	poll := func(i int) {
		advancePage(page, base, i)
		for j := range page {
			vals[j] = page[j].Value
		}
		T := 1e9 + 2*float64(i) + 0.001*float64(i%3)
		for k, tr := range trs {
			tr.Begin(T, T-0.01)
			tr.SetAll(ids, vals)
			dst[k] = tr.End(dst[k])
		}
	}
	i := 0
	for ; i < 16; i++ {
		poll(i)
	}
	if c := dst[len(dst)-1]; !c[len(c)-1].Cell.Value.Valid {
		b.Fatalf("decode is null (%s) over %d series", c[len(c)-1].Cell.Reason, len(page))
	}
	b.ReportAllocs()
	for b.Loop() {
		poll(i)
		i++
	}
	b.ReportMetric(float64(len(page)), "series")
}

// pagePolls keys page ss in tr, as a replay does, and returns poll(i):
// the page advanced to poll i (advancePage), 2 s apart, fed to tr with
// SetAll and its cells ended into dst.
func pagePolls(ss []expo.Sample, tr *Tracker, dst *Cells) func(i int) {
	base := make([]float64, len(ss))
	for j := range ss {
		base[j] = ss[j].Value
	}
	ids := make([]int32, len(ss))
	for j := range ss {
		s := &ss[j]
		ids[j] = tr.Key(Series{Family: s.Family, Type: s.Type, Name: s.Name, Labels: s.Labels})
	}
	vals := make([]float64, len(ss))
	return func(i int) {
		advancePage(ss, base, i)
		for j := range ss {
			vals[j] = ss[j].Value
		}
		T := 1e9 + 2*float64(i) + 0.001*float64(i%3)
		tr.Begin(T, T-0.01)
		tr.SetAll(ids, vals)
		*dst = tr.End(*dst)
	}
}
