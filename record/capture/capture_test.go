package capture

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/expo"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Run ids of the recorder's form (see names.go): only files named for one
// are llmrec's.
const (
	runR    = "20260101T000000Z-0000000a"
	runA    = "20260101T000000Z-000000a1"
	runB    = "20260101T000001Z-000000b2"
	runS    = "20260101T000002Z-000000c3"
	runLive = "20260101T000003Z-000000d4"
	runDead = "20260101T000004Z-000000e5"
)

func body(i int) []byte {
	return fmt.Appendf(nil, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\"} %d\n# TYPE up gauge\nup 1\n", i*100)
}

func row(run, target string, seq int) Scrape {
	ct := "text/plain; version=0.0.4"
	st := int64(1_700_000_000_000_000_000 + seq*1e9)
	s := Scrape{RunID: run, Target: target, Endpoint: EndpointMetrics, URL: "http://127.0.0.1/metrics",
		Seq: int64(seq), Outcome: OutcomeOK, ScheduledNs: st, StartNs: st + 1, FirstByteNs: st + 2, EndNs: st + 3,
		ContentType: &ct, Body: body(seq)}
	Parse(&s)
	return s
}

func readAll(t *testing.T, dir string) []Scrape {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Scrape
	for _, seg := range r.Segments {
		err := ReadSegment(seg, func(s *Scrape) error {
			c := *s
			c.Body = bytes.Clone(s.Body)
			c.Samples = append([]Sample(nil), s.Samples...)
			out = append(out, c)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Rows survive a write and a read whole: times, nulls, body bytes, samples.
func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	why := "previous scrape (seq 1) still running"
	missed := Scrape{RunID: runR, Target: "a", Endpoint: EndpointMetrics, Seq: 2, Outcome: OutcomeMissed, ScheduledNs: 5, Error: &why}
	rows := []Scrape{row(runR, "b", 0), row(runR, "a", 1), missed, row(runR, "a", 0)}
	for _, r := range rows {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir)
	if len(got) != 4 {
		t.Fatalf("%d rows, want 4", len(got))
	}
	// Sorted by target, endpoint and seq.
	order := []string{"a/0", "a/1", "a/2", "b/0"}
	for i, g := range got {
		if k := fmt.Sprintf("%s/%d", g.Target, g.Seq); k != order[i] {
			t.Errorf("row %d is %s, want %s", i, k, order[i])
		}
	}
	m := got[2]
	if m.Outcome != OutcomeMissed || m.StartNs != 0 || m.Body != nil || m.Status != nil || m.Error == nil || *m.Error != why {
		t.Errorf("missed row came back as %+v", m)
	}
	ok := got[1]
	if !bytes.Equal(ok.Body, body(1)) || ok.StartNs != rows[1].StartNs || ok.EndNs != rows[1].EndNs {
		t.Errorf("ok row came back as %+v", ok)
	}
	if len(ok.Samples) != 2 || ok.Samples[0].Name != "up" || ok.Samples[1].Value != 100 || ok.Samples[1].Labels != `{"engine":"0"}` {
		t.Errorf("samples came back as %+v", ok.Samples)
	}
}

// A segment rotates after the rotate interval, and each closed segment is a
// complete Parquet file; the journal of a sealed segment is removed.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(0)
	for i := range 6 {
		if err := w.Append(row(runR, "a", i)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(12 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(w.Segments()); n < 2 {
		t.Fatalf("%d segments after 72 ms at 30 ms rotation", n)
	}
	if js, _ := filepath.Glob(filepath.Join(dir, "*.journal")); len(js) != 0 {
		t.Fatalf("journals left after close: %v", js)
	}
	if got := readAll(t, dir); len(got) != 6 {
		t.Fatalf("%d rows, want 6", len(got))
	}
}

// A crash leaves a journal; recovery turns it into a closed segment with
// every complete record, drops a torn tail, and is idempotent.
func TestRecoverTornJournal(t *testing.T) {
	dir := t.TempDir()
	j, err := createJournal(filepath.Join(dir, runR+"-000001.journal"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		s := row(runR, "a", i)
		if err := j.append(&s); err != nil {
			t.Fatal(err)
		}
	}
	j.close()
	// A torn sixth record: a header and half a payload.
	path := filepath.Join(dir, runR+"-000001.journal")
	full, _ := os.ReadFile(path)
	s := row(runR, "a", 5)
	rec := encodeScrape(nil, &s)
	torn := append(full, append([]byte{byte(len(rec)), 0, 0, 0, 1, 2, 3, 4}, rec[:len(rec)/2]...)...)
	if err := os.WriteFile(path, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Rows != 5 || rs[0].TornBytes == 0 || rs[0].Segment != runR+"-000001.parquet" {
		t.Fatalf("recovery = %+v", rs)
	}
	if rs2, _ := Recover(dir); len(rs2) != 0 {
		t.Fatalf("second recovery did something: %+v", rs2)
	}
	got := readAll(t, dir)
	if len(got) != 5 || got[4].Samples[1].Value != 400 {
		t.Fatalf("recovered %d rows: %+v", len(got), got)
	}
}

// A corrupt record (bad checksum) ends the journal there.
func TestRecoverCorruptRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, runR+"-000001.journal")
	j, _ := createJournal(path)
	for i := range 3 {
		s := row(runR, "a", i)
		j.append(&s)
	}
	j.close()
	b, _ := os.ReadFile(path)
	b[len(b)-10] ^= 0xff
	os.WriteFile(path, b, 0o644)
	rows, torn, err := readJournal(path)
	if err != nil || len(rows) != 2 || torn == 0 {
		t.Fatalf("rows %d torn %d err %v", len(rows), torn, err)
	}
}

// A journal killed before its magic was written is empty, not an error;
// a file that is not a journal is reported by name and left as it is, and
// the rest of the folder is recovered all the same.
func TestJournalHeader(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, runR+"-000001.journal")
	os.WriteFile(empty, []byte("LLM"), 0o644)
	if rs, err := Recover(dir); err != nil || len(rs) != 1 || rs[0].Rows != 0 {
		t.Fatalf("empty journal: %+v %v", rs, err)
	}
	bad := filepath.Join(dir, runR+"-000002.journal")
	os.WriteFile(bad, []byte("NOTAJOURNAL"), 0o644)
	good := filepath.Join(dir, runR+"-000003.journal")
	j, _ := createJournal(good)
	s := row(runR, "a", 0)
	j.append(&s)
	j.close()
	rs, err := Recover(dir)
	if err != nil || len(rs) != 2 || !strings.Contains(rs[0].Error, runR+"-000002.journal") || rs[1].Rows != 1 {
		t.Fatalf("bad journal: %+v %v", rs, err)
	}
	if b, _ := os.ReadFile(bad); string(b) != "NOTAJOURNAL" {
		t.Fatalf("bad journal changed: %q", b)
	}
	if got := readAll(t, dir); len(got) != 1 {
		t.Fatalf("%d rows, want 1", len(got))
	}
}

// A journal a live writer holds is not recovered under its feet, and its
// rows are readable as live rows.
func TestLiveJournalIsNotRecovered(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Append(row(runR, "a", 0))
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Recovered) != 0 || len(r.Live) != 1 || len(r.Segments) != 0 {
		t.Fatalf("open during recording: %+v", r)
	}
	rows, err := ReadLive(r.Live[0])
	if err != nil || len(rows) != 1 || rows[0].Samples[0].Name != "up" {
		t.Fatalf("live rows %+v %v", rows, err)
	}
	rep := Inspect(r)
	if rep.Rows != 1 {
		t.Fatalf("inspect counted %d live rows", rep.Rows)
	}
}

// Killed between seal and journal removal: the segment is the truth and the
// stale journal goes; a leftover .tmp of an interrupted seal goes too.
func TestRecoverAfterSeal(t *testing.T) {
	dir := t.TempDir()
	w, _ := NewWriter(dir, runR, time.Hour)
	w.Append(row(runR, "a", 0))
	w.Close()
	j, _ := createJournal(filepath.Join(dir, runR+"-000001.journal"))
	s := row(runR, "a", 0)
	j.append(&s)
	j.close()
	os.WriteFile(filepath.Join(dir, runR+"-000002.parquet.tmp"), []byte("half"), 0o644)
	rs, err := Recover(dir)
	if err != nil || len(rs) != 1 || rs[0].Note == "" {
		t.Fatalf("%+v %v", rs, err)
	}
	if got := readAll(t, dir); len(got) != 1 {
		t.Fatalf("%d rows after recovering a sealed segment's journal, want 1", len(got))
	}
	if _, err := os.Stat(filepath.Join(dir, runR+"-000002.parquet.tmp")); err == nil {
		t.Fatal("leftover .tmp kept")
	}
}

// A second session into the same folder continues with its own run id and
// recovers the first one's crash.
func TestSecondSessionRecoversFirst(t *testing.T) {
	dir := t.TempDir()
	w1, _ := NewWriter(dir, runA, time.Hour)
	w1.Append(row(runA, "x", 0))
	// Simulate a crash: release the lock without sealing.
	syscall.Flock(int(w1.j.f.Fd()), syscall.LOCK_UN)
	w1.j.f.Close()
	w2, err := NewWriter(dir, runB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w2.Append(row(runB, "x", 0))
	w2.Close()
	got := readAll(t, dir)
	if len(got) != 2 || got[0].RunID != runA || got[1].RunID != runB {
		t.Fatalf("rows %+v", got)
	}
	r, _ := Open(dir)
	if _, err := Find(r, "", "x", EndpointMetrics, 0); err == nil || !strings.Contains(err.Error(), "--run") {
		t.Fatalf("ambiguous find: %v", err)
	}
	s, err := Find(r, runB, "x", EndpointMetrics, 0)
	if err != nil || !bytes.Equal(s.Body, body(0)) {
		t.Fatalf("find: %v", err)
	}
	if _, err := Find(r, "", "y", EndpointMetrics, 0); err == nil {
		t.Fatal("found a target that is not there")
	}
}

// A segment that cannot be read is reported by name while the rest counts.
func TestInspectReportsCorruptSegment(t *testing.T) {
	dir := t.TempDir()
	w, _ := NewWriter(dir, runR, time.Hour)
	w.Append(row(runR, "a", 0))
	w.Close()
	os.WriteFile(filepath.Join(dir, runR+"-000009.parquet"), []byte("PAR1 garbage"), 0o644)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := Inspect(r)
	if rep.Rows != 1 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], runR+"-000009.parquet") {
		t.Fatalf("report %+v", rep)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("opened a missing folder")
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no recording here") {
		t.Errorf("empty folder: %v", err)
	}
	// A folder whose recording sits one level down names it; one whose
	// subfolder holds only foreign files does not.
	parent := t.TempDir()
	run := filepath.Join(parent, "run")
	other := filepath.Join(parent, "notes")
	for _, d := range []string{run, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(run, "20260101T000000Z-0000000a-000001.journal"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "x.parquet"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(parent)
	if err == nil || !strings.HasSuffix(err.Error(), "(did you mean "+run+"?)") {
		t.Errorf("parent of a recording: %v, want a hint naming %s only", err, run)
	}
}

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := Manifest{RunID: runR, Start: "2026-01-01T00:00:00Z", Targets: []ManifestTarget{{Name: "a", IntervalNs: 2e9, TimeoutNs: 1e9}}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Manifests) != 1 || r.Manifests[0].Targets[0].IntervalNs != 2e9 || r.Manifests[0].End != nil {
		t.Fatalf("%+v", r.Manifests)
	}
}

// Every CompactEvery sealed segments are merged into one file named for
// its range, in order, sources removed; the rest are merged at Close.
// The writer merges the rows it kept in memory and reads back the files of
// the others: the merged files are the same byte for byte either way.
func TestCompaction(t *testing.T) {
	var files [][]byte
	for _, c := range []struct {
		budget           int64
		minKept, maxKept int
		batch            int
	}{
		{DefaultKeepBytes, 6, 6, mergeBatch}, // all (the 3rd and 6th go to compaction at once)
		{0, 0, 0, mergeBatch},
		{3000, 1, 5, mergeBatch}, // some
		// Batches that end mid-file, while rows read before are still
		// batched.
		{DefaultKeepBytes, 6, 6, 5},
		{0, 0, 0, 5},
		{3000, 1, 5, 2},
	} {
		t.Run(fmt.Sprintf("keep=%d/batch=%d", c.budget, c.batch), func(t *testing.T) {
			defer func(b int) { mergeBatch = b }(mergeBatch)
			mergeBatch = c.batch
			got, kept := compactionRun(t, c.budget)
			if kept < c.minKept || kept > c.maxKept {
				t.Errorf("%d segments kept, want %d to %d", kept, c.minKept, c.maxKept)
			}
			if files != nil && !slices.EqualFunc(got, files, bytes.Equal) {
				t.Errorf("merged files differ from those of keep=%d", DefaultKeepBytes)
			}
			files = got
		})
	}
}

// Rows kept for compaction unpack to what was packed, when a row's series
// are the last row's at the same positions (through an interner or not) and
// when they shift: a series joins, leaves, or two trade places.
func TestKeptRoundTrip(t *testing.T) {
	pages := []string{
		"a{x=\"1\"} 1\na{x=\"2\"} 2\nb 3\n",
		"a{x=\"1\"} 2\na{x=\"2\"} 3\nb 4\n",
		"a{x=\"1\"} 3\na{x=\"1.5\"} 9\na{x=\"2\"} 4\nb 5\n", // joins
		"a{x=\"1\"} 4\na{x=\"2\"} 5\nb 6\n",                 // leaves
		"# HELP b Now with help.\nb 7\na{x=\"1\"} 5\n",      // help, order
		"b 8 1700000000000\na{x=\"1\"} 6\n",                 // a timestamp
	}
	var in expo.Interner
	var rows []Scrape
	for i := range 3 {
		for j, p := range pages {
			r := row(runR, "t", i*len(pages)+j)
			r.Body = []byte(p)
			if i == 1 {
				Parse(&r) // strings not shared
			} else {
				ParseWith(&r, &in)
			}
			if r.ParseError != nil {
				t.Fatal(*r.ParseError)
			}
			rows = append(rows, r)
		}
	}
	g := &keptGroup{}
	for s := 0; s < len(rows); s += 4 {
		g.add(rows[s:min(s+4, len(rows))], DefaultKeepBytes)
	}
	n := 0
	for _, seg := range g.segs {
		for k := range seg {
			var got Scrape
			g.unpack(&seg[k], &got)
			if want := rows[n]; !slices.EqualFunc(got.Samples, want.Samples, sameSample) {
				t.Errorf("row %d unpacks to %v, want %v", n, got.Samples, want.Samples)
			}
			n++
		}
	}
	if n != len(rows) {
		t.Fatalf("%d rows unpacked of %d", n, len(rows))
	}
}

func sameSample(a, b Sample) bool {
	ta, tb := a.TimestampMs, b.TimestampMs
	a.TimestampMs, b.TimestampMs = nil, nil
	return a == b && (ta == nil) == (tb == nil) && (ta == nil || *ta == *tb)
}

// compactionRun records 8 segments of 4 rows, merged by 3, and returns the
// merged files and how many segments were kept in memory until the next
// Rotate.
func compactionRun(t *testing.T, keepBudget int64) ([][]byte, int) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(3)
	w.keepBudget = keepBudget
	kept := 0
	for i := range 16 {
		for _, tg := range []string{"b", "a"} {
			r := row(runR, tg, i)
			switch {
			case tg == "b" && i%4 == 1: // no samples
				st := int32(503)
				r.Outcome, r.Status, r.Samples = OutcomeHTTPError, &st, nil
			case tg == "b" && i%4 == 2: // samples with a timestamp
				r.Body = fmt.Appendf(r.Body, "ts_gauge{x=\"%d\"} 1 %d\n", i, 1700000000000+i)
				Parse(&r)
			}
			if err := w.Append(r); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 1 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
			if n := len(w.kept.segs); n > 0 && w.kept.segs[n-1] != nil {
				kept++
			}
		}
	}
	if err := w.CloseMerged(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range w.Segments() {
		names = append(names, filepath.Base(f))
	}
	want := []string{runR + "-000001_000003.parquet", runR + "-000004_000006.parquet", runR + "-000007_000008.parquet"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", names, want)
	}
	all, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if len(all) != 3 {
		t.Fatalf("sources left behind: %v", all)
	}
	got := readAll(t, dir)
	if len(got) != 32 {
		t.Fatalf("%d rows after compaction, want 32", len(got))
	}
	// Within a file: target a before b, each by seq.
	for i, g := range got[:6] {
		want := fmt.Sprintf("%s/%d", []string{"a", "a", "a", "a", "a", "a"}[i], i)
		if k := fmt.Sprintf("%s/%d", g.Target, g.Seq); k != want {
			t.Errorf("row %d of the first file is %s, want %s", i, k, want)
		}
	}
	if got[6].Target != "b" || got[6].Seq != 0 || !bytes.Equal(got[6].Body, body(0)) || got[6].Samples[1].Value != 0 {
		t.Errorf("row 6 = %s/%d", got[6].Target, got[6].Seq)
	}
	if g := got[7]; g.Outcome != OutcomeHTTPError || len(g.Samples) != 0 {
		t.Errorf("row 7 = %s/%d %s with %d samples", g.Target, g.Seq, g.Outcome, len(g.Samples))
	}
	if g := got[8]; len(g.Samples) != 3 || g.Samples[0].TimestampMs == nil || *g.Samples[0].TimestampMs != 1700000000002 {
		t.Errorf("row 8 = %s/%d with samples %+v", g.Target, g.Seq, g.Samples)
	}
	if w.BytesWritten() <= 0 {
		t.Error("no bytes written")
	}
	var out [][]byte
	for _, f := range all {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out, kept
}

// Killed after a compacted file was renamed but before its sources were
// removed: readers skip the covered sources and recovery removes them.
func TestCompactionCrashLeavesNoDuplicates(t *testing.T) {
	dir := t.TempDir()
	w, _ := NewWriter(dir, runR, time.Hour)
	w.SetCompactEvery(0)
	for i := range 4 {
		w.Append(row(runR, "a", i))
		w.Rotate()
	}
	w.Close()
	paths, _ := filepath.Glob(filepath.Join(dir, runR+"-00000[1-3].parquet"))
	var srcs []source
	for _, p := range paths {
		srcs = append(srcs, source{path: p})
	}
	if _, err := merge(&encoder{}, filepath.Join(dir, runR+"-000001_000003.parquet"), srcs, nil); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if c := covered(names); len(c) != 3 || !c[runR+"-000002.parquet"] || c[runR+"-000004.parquet"] {
		t.Fatalf("covered %v", c)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Segments) != 2 || len(r.Recovered) != 3 {
		t.Fatalf("segments %v recovered %+v", r.Segments, r.Recovered)
	}
	if got := readAll(t, dir); len(got) != 4 {
		t.Fatalf("%d rows, want 4 (no duplicates)", len(got))
	}
	// A new session numbers its segments after the run's last, merged or not.
	if n, _ := lastSegment(dir, runR); n != 4 {
		t.Fatalf("last segment %d", n)
	}
}

func TestParseSegName(t *testing.T) {
	for name, want := range map[string]segName{
		"20261202T114830Z-bd2d8c0d-000012.parquet":        {"20261202T114830Z-bd2d8c0d", 12, 12},
		"20261202T114830Z-bd2d8c0d-000001_000010.parquet": {"20261202T114830Z-bd2d8c0d", 1, 10},
		runR + "-000003.journal":                          {runR, 3, 3},
	} {
		got, ok := parseSegName(name)
		if !ok || got != want || got.file() != strings.Replace(name, ".journal", ".parquet", 1) {
			t.Errorf("%s: %+v %v", name, got, ok)
		}
	}
	for _, bad := range []string{"x.parquet", runR + "-abc.parquet", runR + "-000005_000003.parquet", runR + "-000001_000002.journal", runR + "-1.txt", "-000001.parquet"} {
		if _, ok := parseSegName(bad); ok {
			t.Errorf("%s parsed", bad)
		}
	}
}

// A reader never removes the temporary file of a live writer's seal or
// compaction; a crashed writer's leftovers go, whatever the order of names.
func TestRecoverSparesLiveTemporaries(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runLive, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Append(row(runLive, "a", 0))
	liveTmp := filepath.Join(dir, runLive+"-000001_000002.parquet.tmp")
	deadTmp := filepath.Join(dir, runDead+"-000001.parquet.tmp")
	os.WriteFile(liveTmp, []byte("being written"), 0o644)
	os.WriteFile(deadTmp, []byte("half"), 0o644)
	// The dead run's journal sorts before its .tmp: recovering it writes and
	// renames that same .tmp name.
	j, _ := createJournal(filepath.Join(dir, runDead+"-000001.journal"))
	s := row(runDead, "a", 0)
	j.append(&s)
	j.close()
	if _, err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(liveTmp); err != nil {
		t.Errorf("the live writer's temporary file was removed: %v", err)
	}
	if _, err := os.Stat(deadTmp); err == nil {
		t.Error("the crashed writer's temporary file was kept")
	}
	if _, err := os.Stat(filepath.Join(dir, runDead+"-000001.parquet")); err != nil {
		t.Errorf("the crashed journal was not recovered: %v", err)
	}
}

// Compression comes from the writer, not from struct tags: every column
// chunk of a one-minute segment, a merged file and a recovered segment is
// zstd.
func TestEveryColumnIsZstd(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(2)
	for i := range 3 {
		if err := w.Append(row(runR, "a", i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var e encoder
	if _, err := e.writeSegment(filepath.Join(dir, runS+"-000001.parquet"), []Scrape{row(runS, "a", 0)}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if len(files) != 3 {
		t.Fatalf("files %v", files)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		for _, rg := range pf.Metadata().RowGroups {
			for _, c := range rg.Columns {
				if c.MetaData.Codec != format.Zstd {
					t.Errorf("%s: column %v is %v", filepath.Base(name), c.MetaData.PathInSchema, c.MetaData.Codec)
				}
			}
		}
		f.Close()
	}
}

// A manifest whose presence intervals are out of order (a join before the
// previous leave, a leave before its join, an open interval that is not
// the last) was not written by a recorder.
func TestManifestPresenceChecked(t *testing.T) {
	ns := func(v int64) *int64 { return &v }
	good := []Presence{{JoinNs: 10, LeaveNs: ns(20)}, {JoinNs: 30}}
	bad := [][]Presence{
		{{JoinNs: 10, LeaveNs: ns(20)}, {JoinNs: 15}},
		{{JoinNs: 10, LeaveNs: ns(5)}},
		{{JoinNs: 10}, {JoinNs: 30}},
	}
	mk := func(p []Presence) Manifest {
		return Manifest{SchemaVersion: SchemaVersion, RunID: "20260101T000000Z-0000000a", StartNs: 10,
			Targets: []ManifestTarget{{Name: "a", IntervalNs: 1, TimeoutNs: 1, Presence: p}}}
	}
	if m := mk(good); m.check() != nil {
		t.Errorf("good presence refused: %v", m.check())
	}
	for i, p := range bad {
		if m := mk(p); m.check() == nil || !strings.Contains(m.check().Error(), "out of order") {
			t.Errorf("bad presence %d: %v", i, m.check())
		}
	}
}
