package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
	recorder "github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/goldentest"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/parquet-go/parquet-go"
)

// llamaBody renders a tiny llama.cpp exposition with the given generation
// counter and one request processing.

// testRun is a run id of the recorder's form: llmrec reads only files named
// for one (see capture.IsRunID).
const testRun = "20260101T000000Z-0123abcd"

func llamaBody(predicted float64) []byte { return llamaBodyRunning(predicted, 1) }

// llamaBodyRunning is llamaBody with running requests processing.
func llamaBodyRunning(predicted float64, running int) []byte {
	return fmt.Appendf(nil, "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total %g\n"+
		"# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing %d\n", predicted, running)
}

// scrape is an ok /metrics row of target at t seconds with body, parsed.
func scrape(run, target string, seq int64, t float64, body []byte) capture.Scrape {
	ct := "text/plain; version=0.0.4"
	s := capture.Scrape{RunID: run, Target: target, Endpoint: capture.EndpointMetrics, Seq: seq,
		Outcome: capture.OutcomeOK, ScheduledNs: ns(t) - 5e6, StartNs: ns(t) - 2e6, FirstByteNs: ns(t),
		EndNs: ns(t) + 1e6, ContentType: &ct, Body: body}
	capture.Parse(&s)
	return s
}

// record writes rows as one session of dir, sealing a segment every
// rotateEvery rows (0: one segment), without merging segments.
func record(t *testing.T, dir, run string, rows []capture.Scrape, rotateEvery int) {
	t.Helper()
	w, err := capture.NewWriter(dir, run, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(0)
	for i, r := range rows {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
		if rotateEvery > 0 && (i+1)%rotateEvery == 0 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// steady returns n polls of target every 2 s from t0 at rate tok/s.
func steady(run, target string, t0 float64, n int, seq0 int64, rate, base float64) []capture.Scrape {
	var out []capture.Scrape
	for i := range n {
		t := t0 + 2*float64(i)
		out = append(out, scrape(run, target, seq0+int64(i), t, llamaBody(base+rate*(t-t0))))
	}
	return out
}

func decodeValues(t *testing.T, tg *Target) []rate.Num {
	t.Helper()
	var out []rate.Num
	for _, p := range tg.Polls {
		c, ok := p.Cells.Get(engine.DecodeTokensPerSecond)
		if !ok {
			t.Fatalf("poll %v has no decode cell", p.T)
		}
		out = append(out, c.Value)
	}
	return out
}

func onlyTarget(t *testing.T, res *Result, name string) *Target {
	t.Helper()
	for i := range res.Targets {
		if res.Targets[i].Name == name {
			return &res.Targets[i]
		}
	}
	t.Fatalf("no target %s in %d targets", name, len(res.Targets))
	return nil
}

// A corrupt file is reported by name, with what is wrong, and every other
// segment is still analysed.
func TestCorruptSegmentIsReportedAndTheRestAnalysed(t *testing.T) {
	dir := t.TempDir()
	record(t, dir, testRun, steady(testRun, "llama", 1000, 20, 0, 50, 0), 10)
	junk := filepath.Join(dir, testRun+"-000007.parquet")
	if err := os.WriteFile(junk, []byte("PAR1 this is not a parquet file at all PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A real segment cut short: its footer is gone.
	segs, _ := filepath.Glob(filepath.Join(dir, testRun+"-00000[12].parquet"))
	if len(segs) != 2 {
		t.Fatalf("segments %v", segs)
	}
	b, _ := os.ReadFile(segs[1])
	cut := filepath.Join(dir, testRun+"-000008.parquet")
	if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Analyze(Options{Dirs: []string{dir}, Gates: rate.Config{Span: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 2 {
		t.Fatalf("problems %+v, want the two broken files", res.Problems)
	}
	for i, want := range []string{junk, cut} {
		p := res.Problems[i]
		if p.File != want || !strings.Contains(p.Error, filepath.Base(want)) {
			t.Errorf("problem %d = %+v, want one naming %s", i, p, want)
		}
	}
	tg := onlyTarget(t, res, "llama")
	if tg.Summary.Polls != 20 {
		t.Errorf("%d polls analysed, want the 20 of the good segments", tg.Summary.Polls)
	}
	v := decodeValues(t, tg)
	if last := v[len(v)-1]; !last.Valid || last.V != 50 {
		t.Errorf("last decode %v, want 50", last)
	}
}

// A crashed session's journal is recovered in memory (the folder is not changed),
// and a live recording's journal is read as it stands, after the closed
// segments of its session.
func TestJournalsRecoveredAndLive(t *testing.T) {
	crashed := t.TempDir()
	live := t.TempDir()
	w, err := capture.NewWriter(live, testRun, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rows := steady(testRun, "llama", 1000, 12, 0, 50, 0)
	for i, r := range rows {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A copy of the open journal without its writer's lock is a crash.
	js, _ := filepath.Glob(filepath.Join(live, "*.journal"))
	if len(js) != 1 {
		t.Fatalf("journals %v", js)
	}
	b, _ := os.ReadFile(js[0])
	if err := os.WriteFile(filepath.Join(crashed, filepath.Base(js[0])), b, 0o644); err != nil {
		t.Fatal(err)
	}

	res, err := Analyze(Options{Dirs: []string{live}, Gates: rate.Config{Span: 2}})
	if err != nil {
		t.Fatal(err)
	}
	in := res.Inputs[0]
	if in.Segments != 1 || in.Journals != 1 {
		t.Errorf("input %+v, want 1 segment and 1 live journal", in)
	}
	tg := onlyTarget(t, res, "llama")
	if tg.Summary.Polls != 12 {
		t.Fatalf("%d polls, want 12 (6 sealed, 6 live)", tg.Summary.Polls)
	}
	for i, v := range decodeValues(t, tg)[1:] {
		if !v.Valid || v.V != 50 {
			t.Errorf("poll %d: decode %v, want 50 across the sealed and live rows", i+1, v)
		}
	}

	res, err = Analyze(Options{Dirs: []string{crashed}})
	if err != nil {
		t.Fatal(err)
	}
	if rec := res.Inputs[0].Recovered; len(rec) != 1 || rec[0].Rows != 6 {
		t.Errorf("recovered %+v, want the journal's 6 rows", rec)
	}
	if n := onlyTarget(t, res, "llama").Summary.Polls; n != 6 {
		t.Errorf("%d polls from the recovered journal, want 6", n)
	}
	if in := res.Inputs[0]; in.Crashed != 1 || in.Segments != 0 {
		t.Errorf("input %+v, want the crashed journal read as it is", in)
	}
	if after, _ := filepath.Glob(filepath.Join(crashed, "*")); len(after) != 1 {
		t.Errorf("the crashed folder after analysis: %v", after)
	}
}

// A manifest whose interval its rows were not scheduled at (edited by
// hand) is noted, and the findings use the rows' cadence; a manifest that
// agrees with its rows says nothing.
func TestEditedIntervalIsNoted(t *testing.T) {
	for _, c := range []struct {
		said int64
		note string
	}{{2e9, ""}, {7e9, "its manifest says every 7s, but its rows were scheduled every 2s (seq 0..9)"}} {
		dir := t.TempDir()
		record(t, dir, testRun, steady(testRun, "llama", 1000, 10, 0, 50, 0), 0)
		m := capture.Manifest{RunID: testRun, StartNs: ns(1000),
			Targets: []capture.ManifestTarget{{Name: "llama", IntervalNs: c.said, TimeoutNs: 1e9}}}
		if err := capture.WriteManifest(dir, m); err != nil {
			t.Fatal(err)
		}
		res, err := Analyze(Options{Dirs: []string{dir}, Gates: rate.Config{Span: 2}})
		if err != nil {
			t.Fatal(err)
		}
		got := onlyTarget(t, res, "llama").Notes["interval"]
		if c.note == "" && got != "" || !strings.Contains(got, c.note) {
			t.Errorf("manifest interval %d ns: note %q, want %q", c.said, got, c.note)
		}
		var sum bytes.Buffer
		res.WriteSummary(&sum)
		if c.note != "" && !strings.Contains(sum.String(), "  interval: session "+testRun+": "+c.note) {
			t.Errorf("summary lacks the note:\n%s", sum.String())
		}
	}
}

// A folder with a journal that is not one (bad magic) and files llmrec did
// not write still analyses: the journal is a problem naming it, the foreign
// files (one a Parquet file of llmrec's own schema) are listed and not read.
func TestBadJournalAndForeignFiles(t *testing.T) {
	dir := t.TempDir()
	record(t, dir, testRun, steady(testRun, "llama", 1000, 8, 0, 50, 0), 0)
	segs, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	phantom, _ := os.ReadFile(segs[0])
	os.WriteFile(filepath.Join(dir, "data.parquet"), phantom, 0o644)
	os.WriteFile(filepath.Join(dir, "mine.journal"), []byte("my notes"), 0o644)
	bad := filepath.Join(dir, "20260101T000100Z-0123abce-000001.journal")
	os.WriteFile(bad, []byte("LLMRECJ0 not a journal of this llmrec"), 0o644)
	res, err := Analyze(Options{Dirs: []string{dir}, Gates: rate.Config{Span: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || res.Problems[0].File != bad || !strings.Contains(res.Problems[0].Error, "bad magic") {
		t.Errorf("problems %+v, want the bad journal", res.Problems)
	}
	if n := onlyTarget(t, res, "llama").Summary.Polls; n != 8 {
		t.Errorf("%d polls, want 8 (the phantom copy not read)", n)
	}
	if f := res.Inputs[0].Foreign; !slices.Equal(f, []string{"data.parquet", "mine.journal"}) {
		t.Errorf("foreign %v", f)
	}
	var sum bytes.Buffer
	res.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "not llmrec's, not read: data.parquet, mine.journal") {
		t.Errorf("summary does not list the foreign files:\n%s", sum.String())
	}
}

// Several folders and sessions are read per target in time order: sessions
// by their start, segments by number (merged ranges by their first), so a
// run split across folders reads as one.
func TestFoldersAndSessionsInTimeOrder(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	record(t, a, "20260101T000100Z-bbbbbbbb", steady("20260101T000100Z-bbbbbbbb", "llama", 1020, 10, 0, 50, 1000), 3)
	record(t, b, "20260101T000000Z-aaaaaaaa", steady("20260101T000000Z-aaaaaaaa", "llama", 1000, 10, 0, 50, 0), 4)
	// A manifest's start orders its session, whatever its run id says.
	for _, m := range []struct {
		dir, run string
		start    int64
	}{{a, "20260101T000100Z-bbbbbbbb", ns(1020)}, {b, "20260101T000000Z-aaaaaaaa", ns(1000)}} {
		if err := capture.WriteManifest(m.dir, capture.Manifest{RunID: m.run, StartNs: m.start}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Analyze(Options{Dirs: []string{a, b}, Gates: rate.Config{Span: 2}})
	if err != nil {
		t.Fatal(err)
	}
	tg := onlyTarget(t, res, "llama")
	if tg.Summary.Polls != 20 || tg.Summary.First != 1000 || tg.Summary.Last != 1038 {
		t.Fatalf("summary %+v", tg.Summary)
	}
	for i := 1; i < len(tg.Polls); i++ {
		if tg.Polls[i].T <= tg.Polls[i-1].T {
			t.Fatalf("poll %d at %v after %v: not in time order", i, tg.Polls[i].T, tg.Polls[i-1].T)
		}
	}
	for i, v := range decodeValues(t, tg)[1:] {
		if !v.Valid || v.V != 50 {
			t.Errorf("poll %d: decode %v, want 50", i+1, v)
		}
	}
	if got := tg.Polls[10].Run; got != "20260101T000100Z-bbbbbbbb" {
		t.Errorf("poll 10 run %q", got)
	}
	if len(res.Inputs) != 2 || res.Inputs[0].Segments != 4 || res.Inputs[1].Segments != 3 {
		t.Errorf("inputs %+v", res.Inputs)
	}
}

func TestSplitName(t *testing.T) {
	for _, c := range []struct {
		name, run string
		seg       int
	}{
		{"20261202T114830Z-bd2d8c0d-000012.parquet", "20261202T114830Z-bd2d8c0d", 12},
		{"run-000001_000010.parquet", "run", 1},
		{"run-000011.journal", "run", 11},
		{"junk.parquet", "junk", 0},
		{"-000001.parquet", "-000001", 0},
		{"a-b.parquet", "a-b", 0},
	} {
		run, seg := splitName(c.name)
		if run != c.run || seg != c.seg {
			t.Errorf("splitName(%q) = %q, %d; want %q, %d", c.name, run, seg, c.run, c.seg)
		}
	}
}

// plainScrape is the capture schema without dictionary encoding, as another
// writer could produce it: the reader takes plain pages as well.
type plainScrape struct {
	RunID       string        `parquet:"run_id"`
	Target      string        `parquet:"target"`
	Engine      string        `parquet:"engine"`
	Endpoint    string        `parquet:"endpoint"`
	Seq         int64         `parquet:"seq"`
	Outcome     string        `parquet:"outcome"`
	StartNs     int64         `parquet:"start_ns,optional"`
	FirstByteNs int64         `parquet:"first_byte_ns,optional"`
	Samples     []plainSample `parquet:"samples,list"`
}

type plainSample struct {
	Family string  `parquet:"family"`
	Type   string  `parquet:"type"`
	Name   string  `parquet:"name"`
	Labels string  `parquet:"labels"`
	Value  float64 `parquet:"value"`
}

func TestPlainEncodedSegment(t *testing.T) {
	dir := t.TempDir()
	var rows []plainScrape
	for _, s := range steady(testRun, "llama", 1000, 6, 0, 50, 0) {
		p := plainScrape{RunID: s.RunID, Target: s.Target, Endpoint: s.Endpoint, Seq: s.Seq, Outcome: s.Outcome,
			FirstByteNs: s.FirstByteNs}
		for _, x := range s.Samples {
			p.Samples = append(p.Samples, plainSample{x.Family, x.Type, x.Name, x.Labels, x.Value})
		}
		rows = append(rows, p)
	}
	// A failed scrape: no samples, no first byte.
	rows = append(rows[:3], append([]plainScrape{{RunID: testRun, Target: "llama", Endpoint: "metrics", Seq: 99, Outcome: "error"}}, rows[3:]...)...)
	f, err := os.Create(filepath.Join(dir, testRun+"-000001.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[plainScrape](f, parquet.PageBufferSize(256))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, err := Analyze(Options{Dirs: []string{dir}, Gates: rate.Config{Span: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 0 {
		t.Fatalf("problems %+v", res.Problems)
	}
	tg := onlyTarget(t, res, "llama")
	if tg.Summary.Polls != 6 || tg.Scrapes["error"] != 1 {
		t.Fatalf("polls %d scrapes %v", tg.Summary.Polls, tg.Scrapes)
	}
	for i, v := range decodeValues(t, tg)[1:] {
		if !v.Valid || v.V != 50 {
			t.Errorf("poll %d: decode %v, want 50", i+1, v)
		}
	}
}

// A segment whose schema lacks a column the analysis reads is a problem.
func TestSegmentWithoutSamples(t *testing.T) {
	dir := t.TempDir()
	type bare struct {
		RunID  string `parquet:"run_id"`
		Target string `parquet:"target"`
	}
	f, _ := os.Create(filepath.Join(dir, testRun+"-000001.parquet"))
	w := parquet.NewGenericWriter[bare](f)
	w.Write([]bare{{testRun, "x"}})
	w.Close()
	f.Close()
	res, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error, "no column") {
		t.Errorf("problems %+v", res.Problems)
	}
}

// Segments that break the format's promises are problems that say how.
func TestMalformedSegments(t *testing.T) {
	type optionalTarget struct {
		RunID       string        `parquet:"run_id"`
		Target      *string       `parquet:"target,optional"`
		Engine      string        `parquet:"engine"`
		Endpoint    string        `parquet:"endpoint"`
		Seq         int64         `parquet:"seq"`
		Outcome     string        `parquet:"outcome"`
		StartNs     int64         `parquet:"start_ns,optional"`
		FirstByteNs int64         `parquet:"first_byte_ns,optional"`
		Samples     []plainSample `parquet:"samples,list"`
	}
	type stringSeq struct {
		RunID       string        `parquet:"run_id"`
		Target      string        `parquet:"target"`
		Engine      string        `parquet:"engine"`
		Endpoint    string        `parquet:"endpoint"`
		Seq         string        `parquet:"seq"`
		Outcome     string        `parquet:"outcome"`
		StartNs     int64         `parquet:"start_ns,optional"`
		FirstByteNs int64         `parquet:"first_byte_ns,optional"`
		Samples     []plainSample `parquet:"samples,list"`
	}
	type flat struct {
		RunID       string      `parquet:"run_id"`
		Target      string      `parquet:"target"`
		Engine      string      `parquet:"engine"`
		Endpoint    string      `parquet:"endpoint"`
		Seq         int64       `parquet:"seq"`
		Outcome     string      `parquet:"outcome"`
		StartNs     int64       `parquet:"start_ns,optional"`
		FirstByteNs int64       `parquet:"first_byte_ns,optional"`
		Samples     plainSample `parquet:"samples"`
	}
	write := func(name string, fn func(*os.File) error) string {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return dir
	}
	for _, c := range []struct {
		name, want string
		dir        string
	}{
		{"null target", "column target: null in a required column", write(testRun+"-000001.parquet", func(f *os.File) error {
			w := parquet.NewGenericWriter[optionalTarget](f)
			if _, err := w.Write([]optionalTarget{{RunID: testRun}}); err != nil {
				return err
			}
			return w.Close()
		})},
		{"string seq", "column seq is BYTE_ARRAY, want INT64", write(testRun+"-000001.parquet", func(f *os.File) error {
			w := parquet.NewGenericWriter[stringSeq](f)
			w.Write([]stringSeq{{RunID: testRun}})
			return w.Close()
		})},
		{"no list", "no column samples.list.element.family", write(testRun+"-000001.parquet", func(f *os.File) error {
			w := parquet.NewGenericWriter[flat](f)
			w.Write([]flat{{RunID: testRun}})
			return w.Close()
		})},
		{"schema version", "schema version 99", write(testRun+"-000001.parquet", func(f *os.File) error {
			w := parquet.NewGenericWriter[plainScrape](f, parquet.KeyValueMetadata("llmrec.schema_version", "99"))
			w.Write([]plainScrape{{RunID: testRun}})
			return w.Close()
		})},
	} {
		res, err := Analyze(Options{Dirs: []string{c.dir}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error, c.want) ||
			!strings.Contains(res.Problems[0].Error, testRun+"-000001.parquet") {
			t.Errorf("%s: problems %+v, want one naming the file and saying %q", c.name, res.Problems, c.want)
		}
	}
}

// An unreadable file is a problem too.
func TestUnreadableSegment(t *testing.T) {
	dir := t.TempDir()
	record(t, dir, testRun, steady(testRun, "llama", 1000, 2, 0, 50, 0), 0)
	segs, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err := os.Chmod(segs[0], 0); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(segs[0]); err == nil {
		f.Close()
		t.Skip("running as a user who reads unreadable files")
	}
	res, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error, "permission denied") {
		t.Errorf("problems %+v", res.Problems)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	if _, err := Analyze(Options{}); err == nil {
		t.Error("no folder: no error")
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := Analyze(Options{Dirs: []string{missing}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing folder: %v", err)
	}
}

// Rows that are not polls are counted, not analysed: failed scrapes by
// outcome, other endpoints by path. Progress is reported per file, and the
// JSON document is versioned, round-trips, and has no null slice.
func TestRowsJSONAndProgress(t *testing.T) {
	dir := t.TempDir()
	rows := steady(testRun, "llama", 1000, 4, 0, 50, 0)
	failed := capture.Scrape{RunID: testRun, Target: "llama", Endpoint: capture.EndpointMetrics, Seq: 4,
		Outcome: capture.OutcomeError, ScheduledNs: ns(1008), StartNs: ns(1008), EndNs: ns(1018)}
	slots := capture.Scrape{RunID: testRun, Target: "llama", Endpoint: "/slots", Seq: 0, Outcome: capture.OutcomeOK,
		ScheduledNs: ns(1000), StartNs: ns(1000), FirstByteNs: ns(1000.01), EndNs: ns(1000.02), Body: []byte("[]")}
	record(t, dir, testRun, append(rows, failed, slots), 0)
	var progress []Progress
	res, err := Analyze(Options{Dirs: []string{dir}, Progress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	tg := onlyTarget(t, res, "llama")
	if tg.Scrapes["ok"] != 4 || tg.Scrapes["error"] != 1 || tg.OtherEndpoints["/slots"] != 1 {
		t.Errorf("scrapes %v other %v", tg.Scrapes, tg.OtherEndpoints)
	}
	if len(progress) != 1 || progress[0].Done != 1 || progress[0].Total != 1 || progress[0].Rows != 6 || progress[0].Samples != 8 {
		t.Errorf("progress %+v", progress)
	}
	if tg.Engine != engine.LlamaCpp || tg.DetectedBy != engine.DetectedBySeries {
		t.Errorf("engine %s by %s", tg.Engine, tg.DetectedBy)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"problems":null`, `"inputs":null`, `"targets":null`, `"sessions":null`,
		`"recovered":null`, `"unknown_series":null`, `"polls":null`, `"headlines":null`} {
		if bytes.Contains(b, []byte(k)) {
			t.Errorf("a null slice, %s, in the JSON", k)
		}
	}
	var streamed bytes.Buffer
	if err := res.WriteJSON(&streamed); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(streamed.Bytes(), append(bytes.Clone(b), '\n')) {
		t.Errorf("WriteJSON differs from json.Marshal:\n%s\n%s", streamed.Bytes(), b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != Schema || len(back.Targets) != 1 || len(back.Targets[0].Polls) != 4 {
		t.Fatalf("round trip: %+v", back)
	}
	b2, _ := json.Marshal(&back)
	if !bytes.Equal(b, b2) {
		t.Errorf("JSON does not round-trip:\n%s\n%s", b, b2)
	}
	var doc map[string]any
	json.Unmarshal(b, &doc)
	for _, k := range []string{"schema", "generator", "gates", "inputs", "problems", "targets"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no top-level %q", k)
		}
	}
	poll := doc["targets"].([]any)[0].(map[string]any)["polls"].([]any)[1].(map[string]any)
	cell := poll["cells"].(map[string]any)[engine.DecodeTokensPerSecond].(map[string]any)
	if cell["value"] != 50.0 || cell["window"] != 2.0 || cell["derived"] != true ||
		cell["source"] != "computed:Δllamacpp:tokens_predicted_total/Δt" {
		t.Errorf("decode cell %v", cell)
	}
	first := doc["targets"].([]any)[0].(map[string]any)["polls"].([]any)[0].(map[string]any)
	c0 := first["cells"].(map[string]any)[engine.DecodeTokensPerSecond].(map[string]any)
	if v, ok := c0["value"]; !ok || v != nil || c0["reason"] != "no_baseline" {
		t.Errorf("first decode cell %v: want an explicit null value with its reason", c0)
	}

	skip, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	st := onlyTarget(t, skip, "llama")
	if len(st.Polls) != 0 || st.Polls == nil || st.Summary.Polls != 4 {
		t.Errorf("SkipPolls: %d polls kept (nil %v), summary %d", len(st.Polls), st.Polls == nil, st.Summary.Polls)
	}
	h := st.Summary.Headlines[slices.Index(engine.Headline, engine.DecodeTokensPerSecond)]
	if h.Median != rate.Some(50) || h.Window != rate.Some(4) || h.Values != 3 || h.Nulls["no_baseline"] != 1 {
		t.Errorf("decode headline %+v", h)
	}
}

func TestGates(t *testing.T) {
	g := gatesOf(rate.Config{Span: 2, MinWindow: -1, CeilingFactor: -1, StaleFraction: 0.5}.WithDefaults())
	if g.Span != rate.Some(2) || g.MinWindow.Valid || g.CeilingFactor.Valid || g.StaleFraction != rate.Some(0.5) ||
		g.JumpFactor != rate.Some(8) {
		t.Errorf("gates %+v", g)
	}
}

func TestMedian(t *testing.T) {
	if m := median(nil); m.Valid {
		t.Error("median of nothing")
	}
	if m := median([]float64{3, 1, 2}); m != rate.Some(2) {
		t.Error(m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != rate.Some(2.5) {
		t.Error(m)
	}
}

// median is the sort's middle whatever the input's shape.
func TestMedianShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(i, n int) float64{
		"random":   func(i, n int) float64 { return rng.NormFloat64() },
		"few":      func(i, n int) float64 { return float64(rng.IntN(3)) },
		"equal":    func(i, n int) float64 { return 7 },
		"sorted":   func(i, n int) float64 { return float64(i) },
		"reversed": func(i, n int) float64 { return float64(n - i) },
		"organ":    func(i, n int) float64 { return float64(min(i, n-i)) },
		"nan": func(i, n int) float64 {
			if i%5 == 0 {
				return math.NaN()
			}
			return rng.Float64()
		},
	}
	for name, f := range shapes {
		for _, n := range []int{1, 2, 3, 17, 18, 100, 1001, 4096} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = f(i, n)
			}
			want := slices.Clone(xs)
			slices.Sort(want)
			if m, w := median(slices.Clone(xs)), sortedMedian(want); !same(m.V, w) {
				t.Errorf("%s n=%d: median %v, sort says %v", name, n, m.V, w)
			}
		}
	}
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func sortedMedian(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func TestTargetCell(t *testing.T) {
	tg := Target{Name: "x", Polls: []Poll{{T: 1, Cells: engine.Cells{{Name: "a"}}}}}
	if _, err := tg.Cell(1, "a"); err != nil {
		t.Error(err)
	}
	if _, err := tg.Cell(1, "b"); err == nil {
		t.Error("no cell b: no error")
	}
	if _, err := tg.Cell(2, "a"); err == nil {
		t.Error("no poll at 2: no error")
	}
}

// The simulated engines' truth: over a long recording the decode rate of
// every vLLM engine, wherever a window lies inside one load phase, is the
// phase's true rate; restarts and a joining label set never print a spike.
func TestSimulatedRecordingMatchesTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 10-minute recording")
	}
	sc := sim.LongScenario(3, 10*time.Minute, 3)
	dir := t.TempDir()
	generate(t, sc, dir, sim.GenerateOptions{})
	res, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	engines, err := sc.Build(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	start := sc.Start
	if start.IsZero() {
		start = sim.DefaultStart
	}
	checked := 0
	for _, e := range engines {
		tg := onlyTarget(t, res, e.Name())
		if tg.Engine != engine.VLLM {
			t.Errorf("%s detected as %s", e.Name(), tg.Engine)
		}
		maxTrue := 0.0
		for _, p := range tg.Polls {
			c, _ := p.Cells.Get(engine.DecodeTokensPerSecond)
			at := time.Duration((p.T - float64(start.UnixNano())/1e9) * 1e9)
			truth := e.Truth(at)
			maxTrue = max(maxTrue, truth.Rates.GenerationTokens*float64(len(truth.Sets)))
			if !c.Value.Valid {
				continue
			}
			from := e.Truth(at - time.Duration(c.Window.V*1e9))
			// Only windows inside one phase and one label-set count have one true rate.
			if from.Phase != truth.Phase || len(from.Sets) != len(truth.Sets) {
				continue
			}
			// A stale or slow body is stamped later than it was rendered: its
			// window's error is bounded by the stale gate, not exact.
			if disturbed(e, at-time.Duration(c.Window.V*1e9)-4*time.Second, at) {
				continue
			}
			want := truth.Rates.GenerationTokens * float64(len(truth.Sets))
			if math.Abs(c.Value.V-want) > 0.02*want+2/c.Window.V {
				t.Errorf("%s at %v: decode %v over %v s, truth %v", e.Name(), at, c.Value.V, c.Window.V, want)
			}
			checked++
		}
		for _, p := range tg.Polls {
			c, _ := p.Cells.Get(engine.DecodeTokensPerSecond)
			if c.Value.Valid && c.Value.V > 1.5*maxTrue+1 {
				t.Errorf("%s at %v: decode %v above every true rate (%v)", e.Name(), p.T, c.Value.V, maxTrue)
			}
		}
	}
	if checked < 300 {
		t.Errorf("only %d polls checked against the truth", checked)
	}
}

// disturbed reports whether an HTTP event of e touches [from, to].
func disturbed(e *sim.Engine, from, to time.Duration) bool {
	for at := from; at <= to; at += 250 * time.Millisecond {
		if e.BehaviourAt(at).Kind != "" {
			return true
		}
	}
	return false
}

// generate records a simulated scenario into dir as the recorder would
// (recorder.WriteGenerated: its parse, segment and compaction path, and a
// manifest).
func generate(t testing.TB, sc *sim.Scenario, dir string, opts sim.GenerateOptions) (scrapes, samples int) {
	st, err := recorder.WriteGenerated(dir, sc, opts, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Scrapes), int(st.Samples)
}

// The text summary of a small recording of two engines, one of them broken
// into a corrupt file: engines, polls, headline medians with their windows,
// nulls by reason, unknown series and the problem.
func TestSummaryGolden(t *testing.T) {
	dir := t.TempDir()
	gufo, err := os.ReadFile("testdata/bodies/gufo.txt")
	if err != nil {
		t.Fatal(err)
	}
	v1, err := os.ReadFile("testdata/bodies/vllm.txt")
	if err != nil {
		t.Fatal(err)
	}
	var rows []capture.Scrape
	for i := range 8 {
		at := 1.7e9 + 2*float64(i)
		g := strings.Replace(string(gufo), "llamacpp:tokens_predicted_total 877336",
			fmt.Sprintf("llamacpp:tokens_predicted_total %d", 877336+100*i), 1)
		rows = append(rows, scrape(testRun, "gufo", int64(i), at, []byte(g)))
		v := strings.Replace(string(v1), `vllm:generation_tokens_total{engine="0",model_name="juggernaut"} 611163.0`,
			fmt.Sprintf(`vllm:generation_tokens_total{engine="0",model_name="juggernaut"} %d`, 611163+300*i), 1)
		if i == 3 {
			v = strings.Replace(v, fmt.Sprintf("} %d\n", 611163+300*i), "} 100\n", 1) // a restart
		}
		rows = append(rows, scrape(testRun, "vllm", int64(i), at+0.5, []byte(v)))
	}
	rows = append(rows, capture.Scrape{RunID: testRun, Target: "vllm", Endpoint: capture.EndpointMetrics, Seq: 8,
		Outcome: capture.OutcomeError, ScheduledNs: ns(1.7e9 + 16)})
	record(t, dir, testRun, rows, 0)
	os.WriteFile(filepath.Join(dir, testRun+"-000009.parquet"), []byte("not parquet"), 0o644)
	res, err := Analyze(Options{Dirs: []string{dir}, Gates: rate.Config{Span: 4}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := res.WriteSummary(&out); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out.String(), dir, "DIR")
	goldentest.Check(t, filepath.Join("testdata", "summary.golden"), []byte(got))
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// The writers on a hand-made result: several targets, recoveries, other
// endpoints, gates off, problems, and writers that fail.
func TestWriters(t *testing.T) {
	res := &Result{
		Schema: Schema, Generator: "llmrec test", Gates: gatesOf(rate.Config{Span: 2, MinWindow: -1, CeilingFactor: -1}.WithDefaults()),
		Inputs:   []Input{{Dir: "d", Sessions: []string{"r"}, Recovered: []capture.Recovery{{Journal: "r-000002.journal", Rows: 3}}}},
		Problems: []Problem{{File: "d/x.parquet", Error: "truncated"}},
		Targets: []Target{
			{Name: "a", Engine: engine.TGI, DetectedBy: engine.DetectedByHint, Hint: "tgi", Notes: map[string]string{},
				UnknownSeries: []string{}, Scrapes: map[string]int{"ok": 1}, OtherEndpoints: map[string]int{"/slots": 2},
				Summary: Summary{Headlines: []Headline{}, Refusals: map[string]int{}},
				Polls:   []Poll{{T: 1, Run: "r", Cells: engine.Cells{}}, {T: 2, Run: "r", Cells: engine.Cells{}}}},
			{Name: "b", Engine: engine.Generic, Notes: map[string]string{}, UnknownSeries: []string{"x"},
				Scrapes: map[string]int{}, OtherEndpoints: map[string]int{},
				Summary: Summary{Headlines: []Headline{}, Refusals: map[string]int{}}, Polls: []Poll{}},
		},
	}
	want, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := res.WriteJSON(&got); err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want)+"\n" {
		t.Errorf("WriteJSON\n%s\njson.Marshal\n%s", got.String(), want)
	}
	var sum bytes.Buffer
	if err := res.WriteSummary(&sum); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"recovered r-000002.journal: 3 rows", "floor off, ceiling off", "engine tgi (configured)",
		"other endpoints: /slots 2", "engine generic (no engine recognised)", "unknown series (1): x", "d/x.parquet: truncated"} {
		if !strings.Contains(sum.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, sum.String())
		}
	}
	if err := res.WriteJSON(failWriter{}); err == nil {
		t.Error("WriteJSON to a failing writer")
	}
	if err := res.WriteSummary(failWriter{}); err == nil {
		t.Error("WriteSummary to a failing writer")
	}
	bad := engine.Cells{{Name: "w", Cell: engine.Cell{By: map[string]float64{"x": math.NaN()}}}}
	res.Targets[0].Polls[1].Cells = bad
	if err := res.WriteJSON(&got); err == nil || !strings.Contains(err.Error(), "target a poll 1") {
		t.Errorf("a poll that does not encode: %v", err)
	}
	res.Targets[0].Polls = nil
	res.Gates.Span = rate.Some(math.NaN())
	got.Reset()
	if err := res.WriteJSON(&got); err != nil || !strings.Contains(got.String(), `"span":null`) {
		t.Errorf("a NaN is written as null: %v", err)
	}
}

// A simulated llama.cpp engine over an hour (its decode counter moves only
// when requests complete): every load edge found is a true change between
// idle and busy phases, inside the interval it names, and every true change
// away from the engine's events is found. Read from the decode counter
// alone, the same hour gave some 170 edges.
func TestSimulatedLlamaCppEdgesMatchTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("generates an hour of one engine")
	}
	sc := sim.LongScenario(4, time.Hour, 1)
	sc.Engines = sc.Engines[3:]
	dir := t.TempDir()
	generate(t, sc, dir, sim.GenerateOptions{})
	res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	engines, err := sc.Build(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	e, spec := engines[0], sc.Engines[0]
	start := float64(sim.DefaultStart.UnixNano()) / 1e9
	at := func(s float64) time.Duration { return time.Duration((s - start) * 1e9) }
	busy := func(s float64) bool { return e.Truth(at(s)).Rates.GenerationTokens > 0 }
	found := map[time.Duration]bool{}
	n := 0
	for _, ed := range res.Findings.Edges {
		if ed.Target != spec.Name {
			continue
		}
		n++
		if ed.Signal != "engine-step counter" {
			t.Errorf("edge read from %q", ed.Signal)
		}
		// A change a few milliseconds before a poll may not have stepped yet.
		a, b := ed.Between[0]-0.5, ed.Between[1]
		if busy(a) != (ed.Kind == findings.EdgeEnd) || busy(b) != (ed.Kind == findings.EdgeStart) {
			t.Errorf("%s edge in [%v, %v]: the truth is busy %v then %v", ed.Kind, at(a), at(b), busy(a), busy(b))
		}
		for _, p := range spec.Phases {
			if p.At >= at(a) && p.At <= at(b) {
				found[p.At] = true
			}
		}
	}
	want := 0
	for k := 1; k < len(spec.Phases); k++ {
		p := spec.Phases[k]
		if p.Idle == spec.Phases[k-1].Idle || near(spec.Events, p.At, 15*time.Second) {
			continue
		}
		want++
		if !found[p.At] {
			t.Errorf("the change to idle=%v at %v was not found", p.Idle, p.At)
		}
	}
	if want < 6 {
		t.Errorf("only %d true changes to check; pick another seed", want)
	}
	t.Logf("%d edges, %d true changes away from events", n, want)
}

// near reports whether an event of evs starts or lasts within d of at.
func near(evs []sim.Event, at, d time.Duration) bool {
	for _, ev := range evs {
		if at >= ev.At-d && at <= ev.At+ev.For+d {
			return true
		}
	}
	return false
}

// Polls spooled to disk write the same document as polls held in memory,
// and a spool that cannot be written fails the analysis rather than drop
// polls.
func TestSpooledPolls(t *testing.T) {
	dir := t.TempDir()
	generate(t, sim.LongScenario(2, 5*time.Minute, 1), dir, sim.GenerateOptions{})
	write := func(res *Result) []byte {
		var b bytes.Buffer
		if err := res.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	held, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	spoolDir := t.TempDir()
	spooled, err := Analyze(Options{Dirs: []string{dir}, Spool: spoolDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(spooled.Targets) != 2 || len(spooled.Targets[0].Polls) != 0 || len(held.Targets[0].Polls) < 100 {
		t.Fatalf("spooled targets hold %d polls, held %d", len(spooled.Targets[0].Polls), len(held.Targets[0].Polls))
	}
	a, b := write(held), write(spooled)
	if !bytes.Equal(a, b) || !bytes.Equal(b, write(spooled)) {
		t.Errorf("spooled document differs (%d vs %d bytes)", len(b), len(a))
	}
	if err := spooled.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Analyze(Options{Dirs: []string{dir}, Spool: filepath.Join(spoolDir, "missing")}); err == nil ||
		!strings.Contains(err.Error(), "spool polls") {
		t.Errorf("unwritable spool: %v", err)
	}
}

// Options.Polls is handed every poll that Target.Polls would hold, in its
// order, and Target.Polls stays empty; the summaries do not change.
func TestPollsHook(t *testing.T) {
	dir := t.TempDir()
	generate(t, sim.LongScenario(2, 2*time.Minute, 1), dir, sim.GenerateOptions{})
	held, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	handed := map[string][]Poll{}
	streamed, err := Analyze(Options{Dirs: []string{dir}, Spool: t.TempDir(), Polls: func(target string, p *Poll) {
		c := *p
		c.Cells = slices.Clone(p.Cells)
		handed[target] = append(handed[target], c)
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range held.Targets {
		s := streamed.Targets[i]
		if len(s.Polls) != 0 || s.spool != nil {
			t.Errorf("%s: %d polls held, spool %v", s.Name, len(s.Polls), s.spool)
		}
		if len(h.Polls) < 50 || !reflect.DeepEqual(handed[h.Name], h.Polls) {
			t.Errorf("%s: %d polls handed, %d held, or they differ", h.Name, len(handed[h.Name]), len(h.Polls))
		}
		if !reflect.DeepEqual(s.Summary, h.Summary) {
			t.Errorf("%s: summary changed", h.Name)
		}
	}
}

// A series that joins mid-segment, after rows whose series were all known
// (their family and type never decoded), is registered with its own
// family and type: the reader passes over the values it skipped.
func TestSeriesJoiningMidSegment(t *testing.T) {
	dir := t.TempDir()
	var rows []capture.Scrape
	for i := range 12 {
		at := 1000 + 2*float64(i)
		for _, tg := range []string{"a", "b"} {
			body := llamaBody(50 * float64(i))
			if tg == "b" && i >= 9 {
				body = fmt.Appendf(nil, "# TYPE aa_joined counter\naa_joined_total %d\n"+
					"# TYPE llamacpp:tokens_predicted_total counter\n"+
					"llamacpp:tokens_predicted_total %d\nllamacpp:tokens_predicted_total{slot=\"1\"} %d\n", i, 50*i, i)
			}
			if tg == "a" && i >= 4 {
				body = fmt.Appendf(body, "# TYPE zz_gauge gauge\nzz_gauge 1\n")
			}
			rows = append(rows, scrape(testRun, tg, int64(i), at, body))
		}
	}
	// Segments of 7 rows: a's gauge joins in the second, b's counters in the
	// third, each after rows that were all known (a segment holds its rows
	// by target, and each poll's samples by name).
	record(t, dir, testRun, rows, 7)
	res, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 0 {
		t.Fatalf("problems %+v", res.Problems)
	}
	// The new families were read: the reader does not know them.
	for tg, want := range map[string][]string{"a": {"zz_gauge"}, "b": {"aa_joined_total"}} {
		if got := onlyTarget(t, res, tg).UnknownSeries; !slices.Equal(got, want) {
			t.Errorf("%s: unknown series %v, want %v", tg, got, want)
		}
	}
	// The new set's type was read: a counter, it joins the decode rate, noted.
	b := onlyTarget(t, res, "b")
	c, err := b.Cell(1018, engine.DecodeTokensPerSecond)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Notes, []string{`no_baseline {slot="1"}`}) {
		t.Errorf("b's decode cell when a set joins: %+v", c)
	}
}

// The summary's gates line says when spans are by counter kind (no span
// asked for), and names the one span when one was.
func TestSummarySaysSpanKind(t *testing.T) {
	dir := t.TempDir()
	record(t, dir, testRun, steady(testRun, "llama", 1000, 10, 0, 50, 0), 0)
	for _, c := range []struct {
		span float64
		want string
	}{{0, "gates: span each target's interval for every-step counters, 10 s for the others,"}, {4, "gates: span 4 s,"}} {
		res, err := Analyze(Options{Dirs: []string{dir}, Gates: rate.Config{Span: c.span}, SkipPolls: true})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := res.WriteSummary(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) || res.Gates.SpanByKind != (c.span == 0) {
			t.Errorf("span %v: by kind %v, summary lacks %q:\n%s", c.span, res.Gates.SpanByKind, c.want, b.String())
		}
	}
}
