package capture

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// snapshot is every name in dir with its content's digest, size, mode and
// modification time: what a read must leave as it was.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = fmt.Sprintf("%x %d %v %d", sha256.Sum256(b), st.Size(), st.Mode(), st.ModTime().UnixNano())
	}
	return out
}

func sameFolder(t *testing.T, before, after map[string]string) {
	t.Helper()
	for name, b := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("%s was removed", name)
		} else if a != b {
			t.Errorf("%s changed: %s, was %s", name, a, b)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s was created", name)
		}
	}
}

// crashJournal writes rows into the journal of segment seg of run as a
// writer killed before sealing it leaves it: complete, unlocked.
func crashJournal(t *testing.T, dir, run string, seg int, rows ...Scrape) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%s-%06d.journal", run, seg))
	j, err := createJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if err := j.append(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	j.close()
	return path
}

// writeSeg writes rows as a closed segment named name in dir.
func writeSeg(t *testing.T, dir, name string, rows ...Scrape) {
	t.Helper()
	var e encoder
	if _, err := e.writeSegment(filepath.Join(dir, name), rows); err != nil {
		t.Fatal(err)
	}
}

// foreignFiles puts into dir the files of the attack: names that are not
// llmrec's but look like its own, two of them Parquet files of llmrec's own
// schema (a phantom target, a time range from 1970).
func foreignFiles(t *testing.T, dir string) []string {
	t.Helper()
	phantom := row("sales", "phantom", 1)
	phantom.ScheduledNs = 5
	writeSeg(t, dir, "sales-000001.parquet", phantom)
	writeSeg(t, dir, "data.parquet", phantom)
	for name, content := range map[string]string{
		"export.parquet.tmp":   "an export being written",
		"mine.journal":         "my notes",
		"sales-000002.parquet": "not even parquet",
		// Almost a run id: 7 hex digits, upper case, a 5-digit segment.
		"20260101T000000Z-0000000-000001.parquet":  "x",
		runR + "-00001.journal":                    "x",
		"20260101T000000Z-0000000A-000001.journal": "x",
		runR + ".manifest.json.bak":                "{}",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := folderNames(dir)
	return names
}

// Reading a folder changes nothing in it: not the crashed session's
// journal, not the sources a merged file covers, not a stale journal or a
// temporary file, and not the files llmrec did not write, which are listed
// and not read (no phantom target, no 1970 time range).
func TestReadsNeverWrite(t *testing.T) {
	dir := t.TempDir()
	foreign := foreignFiles(t, dir)
	// A session that closed, killed between a merge and removing its sources.
	writeSeg(t, dir, runA+"-000001.parquet", row(runA, "a", 0))
	writeSeg(t, dir, runA+"-000002.parquet", row(runA, "a", 1))
	writeSeg(t, dir, runA+"-000001_000002.parquet", row(runA, "a", 0), row(runA, "a", 1))
	// Sealed, killed before its journal was removed.
	writeSeg(t, dir, runA+"-000003.parquet", row(runA, "a", 2))
	crashJournal(t, dir, runA, 3, row(runA, "a", 2))
	// A crashed session: its journal, a half-written seal and manifest.
	crashJournal(t, dir, runB, 1, row(runB, "b", 0), row(runB, "b", 1), row(runB, "b", 2))
	os.WriteFile(filepath.Join(dir, runB+"-000001.parquet.tmp"), []byte("half"), 0o644)
	os.WriteFile(filepath.Join(dir, runB+"-000001_000002.parquet.tmp"), []byte("half"), 0o644)
	os.WriteFile(filepath.Join(dir, runB+".manifest.json.tmp"), []byte("{"), 0o644)
	before := snapshot(t, dir)

	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := Inspect(r)
	if _, err := Find(r, runB, "b", EndpointMetrics, 2); err != nil {
		t.Errorf("find in the crashed journal: %v", err)
	}
	sameFolder(t, before, snapshot(t, dir))

	if !slices.Equal(r.Foreign, foreign) || !slices.Equal(rep.Foreign, foreign) {
		t.Errorf("foreign %v, want %v", r.Foreign, foreign)
	}
	if len(r.Crashed) != 1 || len(r.Live) != 0 || len(r.Segments) != 2 {
		t.Errorf("crashed %v live %v segments %v", r.Crashed, r.Live, r.Segments)
	}
	// 2 merged rows, 1 sealed, 3 in the crashed journal; the stale journal
	// and the covered sources are not counted twice.
	if rep.Rows != 6 || len(rep.Targets) != 2 || rep.Targets[0].Name != "a" || rep.Targets[1].Name != "b" {
		t.Errorf("rows %d targets %+v", rep.Rows, rep.Targets)
	}
	if rep.FirstNs < 1e18 || len(rep.Problems) != 0 {
		t.Errorf("first %d problems %v", rep.FirstNs, rep.Problems)
	}
	var notes []string
	for _, rc := range r.Recovered {
		notes = append(notes, rc.Name()+": "+rc.String())
	}
	want := []string{
		runA + "-000001.parquet: already merged into a compacted file; skipped",
		runA + "-000002.parquet: already merged into a compacted file; skipped",
		runA + "-000003.journal: segment already sealed; stale journal ignored",
		runB + "-000001.journal: 3 rows (read in memory; llmrec repair seals it)",
	}
	if !slices.Equal(notes, want) {
		t.Errorf("recovered\n%s\nwant\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
}

// Recovery for writing (record, repair) touches only llmrec's own files:
// the foreign ones stay byte for byte, the crashed session is sealed.
func TestRecoverTouchesOnlyOwnFiles(t *testing.T) {
	dir := t.TempDir()
	foreign := foreignFiles(t, dir)
	crashJournal(t, dir, runB, 1, row(runB, "b", 0))
	os.WriteFile(filepath.Join(dir, runB+"-000002.parquet.tmp"), []byte("half"), 0o644)
	os.WriteFile(filepath.Join(dir, runB+".manifest.json.tmp"), []byte("{"), 0o644)
	before := snapshot(t, dir)
	if _, err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, dir)
	for _, name := range foreign {
		if after[name] != before[name] {
			t.Errorf("foreign %s: %q, was %q", name, after[name], before[name])
		}
	}
	var own []string
	for name := range after {
		if !slices.Contains(foreign, name) {
			own = append(own, name)
		}
	}
	slices.Sort(own)
	if !slices.Equal(own, []string{runB + "-000001.parquet", runB + ".seals"}) {
		t.Errorf("own files after recovery %v, want the sealed journal and its seal alone", own)
	}
}

// A temporary file its writer holds (a final merge after the last journal
// is gone, a manifest being written) is not removed by another process's
// recovery; once let go, it is.
func TestRecoverSparesTemporariesBeingWritten(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, runB+"-000001_000002.parquet.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if err := lockTemp(f); err != nil {
		t.Fatal(err)
	}
	if _, err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("a temporary file being written was removed: %v", err)
	}
	f.Close()
	if _, err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Fatal("a stale temporary file was kept")
	}
}

// A reader during a recording's close (its journal sealed and removed, its
// final merge being written) leaves the merge's temporary file alone, and
// the recording closes without error: readers run in a loop while it
// closes.
func TestReadDuringCloseKeepsTheMerge(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(100) // merged at CloseMerged only
	noise := make([]byte, 256<<10)
	for i := range 6 {
		s := row(runR, "a", i)
		binary.LittleEndian.PutUint64(noise, uint64(i)) // bodies that do not compress to nothing
		for k := 8; k < len(noise); k += 8 {
			binary.LittleEndian.PutUint64(noise[k:], uint64(k*k+i)*0x9e3779b97f4a7c15)
		}
		s.Body = slices.Clone(noise)
		w.Append(s)
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, dir)
	if len(before) != 8 { // six segments, the open journal, the seal ledger
		t.Fatalf("folder before close: %v", before)
	}
	closed := make(chan error)
	go func() { closed <- w.CloseMerged() }()
	reads := 0
	for {
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("close while read %d times: %v", reads, err)
			}
			if got := readAll(t, dir); len(got) != 6 {
				t.Fatalf("%d rows after close, want 6", len(got))
			}
			return
		default:
		}
		if r, err := Open(dir); err == nil {
			Inspect(r)
		}
		reads++
	}
}

func TestParseOwnName(t *testing.T) {
	for name, want := range map[string]ownName{
		runR + "-000012.parquet":            {kindSegment, segName{runR, 12, 12}},
		runR + "-000001_000010.parquet":     {kindSegment, segName{runR, 1, 10}},
		runR + "-000001_000010.parquet.tmp": {kindSegmentTmp, segName{runR, 1, 10}},
		runR + "-1234567.journal":           {kindJournal, segName{runR, 1234567, 1234567}},
		runR + ".manifest.json":             {kindManifest, segName{run: runR}},
		runR + ".manifest.json.tmp":         {kindManifestTmp, segName{run: runR}},
		runR + ".seals":                     {kindSeals, segName{run: runR}},
		MarksFile:                           {kind: kindMarks},
	} {
		if got, ok := parseOwnName(name); !ok || got != want {
			t.Errorf("%s: %+v %v, want %+v", name, got, ok, want)
		}
	}
	for _, bad := range []string{"sales-000001.parquet", "data.parquet", "export.parquet.tmp", "mine.journal",
		runR + "-000001.journal.tmp", runR + "-0000001.parquet", runR + "-+00001.parquet", runR + "-000001.json",
		"20261341T000000Z-0000000a-000001.parquet", "20260101T000000Z-0000000A.manifest.json",
		"20260101T000000Z-0000000a0-000001.parquet", "20260101T000000-0000000a-000001.parquet", ".manifest.json", "data.seals", runR + "-000001.seals"} {
		if got, ok := parseOwnName(bad); ok {
			t.Errorf("%s parsed as %+v", bad, got)
		}
	}
}

// journalOf writes rows into a fresh journal and returns its bytes and the
// offset each record starts at.
func journalOf(t testing.TB, dir string, rows []Scrape) (path string, data []byte, offs []int) {
	path = filepath.Join(dir, runR+"-000001.journal")
	j, err := createJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	off := len(journalMagic)
	for i := range rows {
		offs = append(offs, off)
		j.append(&rows[i])
		off += len(j.buf)
	}
	j.close()
	data, _ = os.ReadFile(path)
	return path, data, offs
}

func rowsN(n int) []Scrape {
	rows := make([]Scrape, n)
	for i := range rows {
		rows[i] = row(runR, "a", i)
	}
	return rows
}

func seqs(rows []Scrape) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Seq
	}
	return out
}

// A damaged record in the middle of a journal costs that record only:
// reading resumes at the next record whose length and CRC check out, and
// the bytes skipped are reported. Damage to the last record is a torn tail.
func TestJournalResyncsPastDamage(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(data []byte, offs []int) []byte
		lost   []int64 // seqs lost
		torn   bool
	}{
		{"a flipped byte in a payload", func(d []byte, o []int) []byte { d[o[20]+40] ^= 0x10; return d }, []int64{20}, false},
		{"a flipped CRC", func(d []byte, o []int) []byte { d[o[7]+5] ^= 1; return d }, []int64{7}, false},
		{"a length past the end", func(d []byte, o []int) []byte {
			binary.LittleEndian.PutUint32(d[o[3]:], 1<<29)
			return d
		}, []int64{3}, false},
		{"a length over the cap", func(d []byte, o []int) []byte {
			binary.LittleEndian.PutUint32(d[o[3]:], 1<<31)
			return d
		}, []int64{3}, false},
		{"two damaged records", func(d []byte, o []int) []byte { d[o[5]+30] ^= 0xff; d[o[30]+9] ^= 1; return d }, []int64{5, 30}, false},
		{"garbage between records", func(d []byte, o []int) []byte {
			return slices.Concat(d[:o[10]], []byte("\x00\x00\x00\x00garbage"), d[o[10]:])
		}, nil, false},
		{"a flipped last record", func(d []byte, o []int) []byte { d[o[39]+20] ^= 1; return d }, []int64{39}, true},
		{"a cut last record", func(d []byte, o []int) []byte { return d[:len(d)-7] }, []int64{39}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, data, offs := journalOf(t, t.TempDir(), rowsN(40))
			os.WriteFile(path, c.damage(data, offs), 0o644)
			rows, st, err := scanJournal(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []int64
			for i := range int64(40) {
				if !slices.Contains(c.lost, i) {
					want = append(want, i)
				}
			}
			if got := seqs(rows); !slices.Equal(got, want) {
				t.Fatalf("seqs %v, want %v", got, want)
			}
			if c.torn != (st.Torn > 0) || c.torn == (st.Skipped > 0) || c.torn && st.Damaged != 0 {
				t.Errorf("stats %+v", st)
			}
			if !c.torn && st.Damaged != max(len(c.lost), 1) {
				t.Errorf("damaged in %d places, want %d", st.Damaged, max(len(c.lost), 1))
			}
		})
	}
}

// A record whose CRC checks out but whose payload does not decode (written
// so by a bug, or damage the CRC missed) is skipped like any damage, not an
// error that makes the folder unreadable.
func TestJournalUndecodableRecordIsSkipped(t *testing.T) {
	rows := rowsN(6)
	path, data, offs := journalOf(t, t.TempDir(), rows)
	bad := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	frame := binary.LittleEndian.AppendUint32(nil, uint32(len(bad)))
	frame = binary.LittleEndian.AppendUint32(frame, crc32Sum(bad))
	frame = append(frame, bad...)
	os.WriteFile(path, slices.Concat(data[:offs[3]], frame, data[offs[3]:]), 0o644)
	r, err := Open(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	rep := Inspect(r)
	if rep.Rows != 6 || len(rep.Problems) != 0 {
		t.Fatalf("rows %d problems %v", rep.Rows, rep.Problems)
	}
	if rc := r.Recovered[0]; rc.Rows != 6 || rc.SkippedBytes != int64(len(frame)) || rc.Damaged != 1 || rc.TornBytes != 0 {
		t.Fatalf("recovery %+v", rc)
	}
}

// A journal that is not one (bad magic) is a problem of that journal only:
// the rest of the folder reads, and the journal is named.
func TestBadMagicJournalLeavesTheFolderReadable(t *testing.T) {
	dir := t.TempDir()
	writeSeg(t, dir, runA+"-000001.parquet", row(runA, "a", 0), row(runA, "a", 1))
	bad := filepath.Join(dir, runB+"-000001.journal")
	os.WriteFile(bad, []byte("LLMRECJ0 not this format"), 0o644)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := Inspect(r)
	if rep.Rows != 2 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], filepath.Base(bad)) ||
		!strings.Contains(rep.Problems[0], "bad magic") {
		t.Fatalf("rows %d problems %v", rep.Rows, rep.Problems)
	}
	if s, err := Find(r, "", "a", EndpointMetrics, 1); err != nil || s.Seq != 1 {
		t.Fatalf("find past the bad journal: %v", err)
	}
}

// A record written twice (same run, target, endpoint, seq and content) is
// one row, counted; the same seq with other content is reported and both
// rows kept.
func TestJournalDuplicates(t *testing.T) {
	rows := rowsN(4)
	rows = append(rows, rows[2])
	other := row(runR, "a", 1)
	other.Body = []byte("up 2\n")
	rows = append(rows, other)
	path, _, _ := journalOf(t, t.TempDir(), rows)
	got, st, err := scanJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := seqs(got); !slices.Equal(s, []int64{0, 1, 2, 3, 1}) {
		t.Fatalf("seqs %v", s)
	}
	if st.Duplicates != 1 || len(st.Conflicts) != 1 || !strings.Contains(st.Conflicts[0], "seq 1") {
		t.Fatalf("stats %+v", st)
	}
	r, err := Open(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Recovered[0].String(); !strings.Contains(s, "1 duplicate record(s) dropped") || !strings.Contains(s, "1 seq(s) recorded twice") {
		t.Errorf("recovery says %q", s)
	}
	recs, err := Recover(filepath.Dir(path))
	if err != nil || len(recs) != 1 || recs[0].Rows != 5 || recs[0].Duplicates != 1 {
		t.Fatalf("recover %+v %v", recs, err)
	}
}

// Manifests: a schema version this llmrec does not read, or values no
// recording has, are errors naming the file and what is wrong.
func TestManifestChecks(t *testing.T) {
	end := int64(5)
	endStr := "2025-12-31T23:59:59Z"
	for _, c := range []struct {
		name string
		edit func(m *Manifest)
		want string
	}{
		{"schema 999", func(m *Manifest) { m.SchemaVersion = "999" }, `schema version "999", this llmrec reads "1" and "2"`},
		{"interval 0", func(m *Manifest) { m.Targets[0].IntervalNs = 0 }, `target "a": interval_ns 0`},
		{"interval < 0", func(m *Manifest) { m.Targets[0].IntervalNs = -2e9 }, `target "a": interval_ns -2000000000`},
		{"timeout 0", func(m *Manifest) { m.Targets[0].TimeoutNs = 0 }, `target "a": timeout_ns 0`},
		{"timeout a year", func(m *Manifest) { m.Targets[0].TimeoutNs = int64(365 * 24 * time.Hour) }, "at most 24h"},
		{"end_ns before start", func(m *Manifest) { m.EndNs = &end }, "end_ns 5 is before start_ns"},
		{"end before start", func(m *Manifest) { m.End = &endStr }, "end 2025-12-31T23:59:59Z is before start"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			m := Manifest{SchemaVersion: SchemaVersion, RunID: runR, Start: "2026-01-01T00:00:00Z", StartNs: 1767225600e9,
				Targets: []ManifestTarget{{Name: "a", IntervalNs: 2e9, TimeoutNs: 2e9}}}
			if err := WriteManifest(dir, m); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(dir); err != nil {
				t.Fatalf("the good manifest: %v", err)
			}
			c.edit(&m)
			// As if edited by hand: WriteManifest would fill an empty version.
			b, _ := json.MarshalIndent(m, "", "  ")
			os.WriteFile(ManifestPath(dir, runR), b, 0o644)
			_, err := Open(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), runR+".manifest.json") {
				t.Fatalf("error %v, want one naming the file and %q", err, c.want)
			}
		})
	}
}
