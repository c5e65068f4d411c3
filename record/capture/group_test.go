package capture

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// names lists the folder's segment and journal files, sorted.
// groupWriter is a live writer into dir whose groups are of every minutes.
func groupWriter(t *testing.T, dir string, every int) *Writer {
	t.Helper()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(every)
	return w
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ns, err := folderNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range ns {
		if strings.HasSuffix(n, ".parquet") || strings.HasSuffix(n, ".journal") {
			out = append(out, strings.TrimPrefix(n, runR+"-"))
		}
	}
	slices.Sort(out)
	return out
}

// readWithJournals reads the folder's segments and journals (live and crashed).
func readWithJournals(t *testing.T, dir string) []Scrape {
	t.Helper()
	out := readAll(t, dir)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range r.Journals() {
		rows, err := ReadLive(j)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
	return out
}

// sameRows fails unless got holds want's rows, bodies byte for byte and
// samples whole.
func sameRows(t *testing.T, got, want []Scrape) {
	t.Helper()
	slices.SortFunc(want, func(a, b Scrape) int { return compareRows(&a, &b) })
	slices.SortFunc(got, func(a, b Scrape) int { return compareRows(&a, &b) })
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Target != w.Target || g.Seq != w.Seq || !bytes.Equal(g.Body, w.Body) || len(g.Samples) != len(w.Samples) {
			t.Fatalf("row %d: %s/%d with %d samples, want %s/%d with %d", i, g.Target, g.Seq, len(g.Samples), w.Target, w.Seq, len(w.Samples))
		}
	}
}

// A live writer writes each row into Parquet once: a minute's end closes
// its journal and keeps its rows (their bodies let go of: the journal has
// them); the group's file is written when it holds compact_every minutes,
// as the merged file of its range, and its journals go only then. No
// one-minute file is written or merged on the way.
func TestGroupWrittenOnce(t *testing.T) {
	dir := t.TempDir()
	w := groupWriter(t, dir, 3)
	var want []Scrape
	seq := 0
	minute := func() {
		t.Helper()
		for _, target := range []string{"b", "a"} {
			for range 4 {
				s := row(runR, target, seq)
				s.Body = append(bytes.Clone(s.Body), []byte("# minute row "+string(rune('a'+seq%26))+"\n")...)
				seq++
				want = append(want, s)
				if err := w.Append(s); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Tick(); err != nil {
			t.Fatal(err)
		}
	}
	minute()
	minute()
	if got := names(t, dir); !slices.Equal(got, []string{"000001.journal", "000002.journal", "000003.journal"}) {
		t.Fatalf("after two minutes: %v", got)
	}
	if w.Seals() != 0 {
		t.Fatal("a minute was written before its group was full")
	}
	for _, r := range w.rows {
		if r.s.Body != nil || !r.bodyOut || !r.isPacked || r.s.Samples != nil || len(r.packed) == 0 {
			t.Fatal("a closed minute's row holds its body or its samples unpacked")
		}
	}
	// A reader meanwhile reads the closed minutes from their journals.
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Live) != 3 || len(r.Segments) != 0 {
		t.Fatalf("live %v, segments %v", r.Live, r.Segments)
	}
	minute()
	if err := w.waitSeal(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"000001_000003.parquet", "000004.journal"}) {
		t.Fatalf("after a group: %v", got)
	}
	minute() // a group left partial by the stop: written whole at Close
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"000001_000003.parquet", "000004_000005.parquet"}) {
		t.Fatalf("after close: %v", got)
	}
	sameRows(t, readAll(t, dir), want)
	// Every file has its seal, and its bodies are stored as deltas.
	seals, err := ReadSeals(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range w.Segments() {
		if _, err := seals.Verify(f); err != nil {
			t.Fatal(err)
		}
		if n, d := deltaRows(t, f); d != n-2 { // a key frame per target
			t.Errorf("%s: %d deltas in %d rows, want %d", filepath.Base(f), d, n, n-2)
		}
	}
	// Recovery has nothing to do: no single segment is left to merge.
	rs, err := Recover(dir)
	if err != nil || len(rs) != 0 {
		t.Fatalf("recover: %+v %v", rs, err)
	}
}

// A kill inside a group loses nothing: its minutes' journals stay until the
// group's file is in place, and recovery makes them segments and merges
// them.
func TestGroupKilled(t *testing.T) {
	dir := t.TempDir()
	w := groupWriter(t, dir, 10)
	var want []Scrape
	for i := range 12 {
		s := row(runR, "a", i)
		want = append(want, s)
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
		if i%4 == 3 {
			if err := w.Tick(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Abandon(); err != nil { // the journals as a SIGKILL leaves them
		t.Fatal(err)
	}
	sameRows(t, readWithJournals(t, dir), slices.Clone(want)) // read in memory
	if got := names(t, dir); len(got) != 4 {
		t.Fatalf("a read changed the folder: %v", got)
	}
	if _, err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"000001_000003.parquet"}) {
		t.Fatalf("after recovery: %v", got)
	}
	sameRows(t, readAll(t, dir), want)
}

// Killed after the group's file was renamed into place, before its
// journals were removed: the journals are stale, the file is the truth.
func TestGroupKilledAfterWrite(t *testing.T) {
	dir := t.TempDir()
	w := groupWriter(t, dir, 2)
	var want []Scrape
	for i := range 4 {
		s := row(runR, "a", i)
		want = append(want, s)
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Tick(); err != nil {
		t.Fatal(err)
	}
	// Keep copies of the two journals, then put them back after the write.
	saved := map[string][]byte{}
	for _, r := range w.rows {
		b, err := os.ReadFile(r.j.f.Name())
		if err != nil {
			t.Fatal(err)
		}
		saved[r.j.f.Name()] = b
	}
	w.Append(row(runR, "a", 4))
	want = append(want, row(runR, "a", 4))
	b, err := os.ReadFile(w.j.f.Name())
	if err != nil {
		t.Fatal(err)
	}
	saved[w.j.f.Name()] = b
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	for name, b := range saved {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sameRows(t, readAll(t, dir), slices.Clone(want))
	if _, err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"000001_000002.parquet"}) {
		t.Fatalf("after recovery: %v", got)
	}
	sameRows(t, readAll(t, dir), want)
}

// The open minute's journal removed by hand in a group: its rows are
// journaled again, the closed minutes' stay in their own journals, and
// every row reaches the group's file.
func TestGroupJournalReplaced(t *testing.T) {
	dir := t.TempDir()
	w := groupWriter(t, dir, 10)
	var want []Scrape
	add := func(i int) error {
		s := row(runR, "a", i)
		want = append(want, s)
		return w.Append(s)
	}
	for i := range 3 {
		if err := add(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Tick(); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 5; i++ {
		if err := add(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(w.j.f.Name()); err != nil {
		t.Fatal(err)
	}
	err := add(5)
	if !errors.Is(err, ErrJournalReplaced) || !strings.Contains(err.Error(), "its 2 rows") {
		t.Fatalf("append after removal: %v", err)
	}
	if err := w.Abandon(); err != nil {
		t.Fatal(err)
	}
	sameRows(t, readWithJournals(t, dir), want)
	if got := names(t, dir); !slices.Equal(got, []string{"000001.journal", "000003.journal"}) {
		t.Fatalf("journals %v", got)
	}
	if _, err := filepath.Glob(filepath.Join(dir, "*.tmp")); err != nil {
		t.Fatal(err)
	}
}

// deltaRows counts the rows of the file at path and those whose body is
// stored as a delta.
func deltaRows(t *testing.T, path string) (n, deltas int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := OpenParquet(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]Scrape, pf.NumRows())
	k, _ := parquet.NewGenericReader[Scrape](pf).Read(rows)
	for _, s := range rows[:k] {
		if s.BodyDelta != nil {
			deltas++
		}
	}
	return k, deltas
}

// A row whose parse is still running at its minute's end keeps its samples
// to come; the others of the minute are packed. Both reach the group's file
// with their samples, a parse error where the page did not parse.
func TestGroupPendingAtMinuteEnd(t *testing.T) {
	dir := t.TempDir()
	w := groupWriter(t, dir, 2)
	good, slow, bad := row(runR, "a", 0), row(runR, "a", 1), row(runR, "a", 2)
	bad.Body = []byte("not exposition {{{\n")
	release := make(chan struct{})
	var parsed []chan struct{}
	for i, s := range []Scrape{good, slow, bad} {
		s.Samples, s.ParseError, s.Outcome = nil, nil, OutcomeOK
		p := NewPending()
		if err := w.AppendPending(s, p); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		parsed = append(parsed, done)
		go func() {
			if i == 1 {
				<-release
			}
			Parse(&s)
			p.Done(&s)
			close(done)
		}()
	}
	<-parsed[0]
	<-parsed[2]
	if err := w.Tick(); err != nil {
		t.Fatal(err)
	}
	if !w.rows[0].isPacked || w.rows[1].isPacked || w.rows[1].p == nil || !w.rows[2].isPacked {
		t.Fatalf("packed %v %v %v", w.rows[0].isPacked, w.rows[1].isPacked, w.rows[2].isPacked)
	}
	close(release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows := readAll(t, dir)
	if len(rows) != 3 || len(rows[0].Samples) != len(good.Samples) || len(rows[1].Samples) != len(slow.Samples) ||
		len(good.Samples) == 0 || rows[2].Outcome != OutcomeParseError || len(rows[2].Samples) != 0 {
		t.Fatalf("%d rows %+v", len(rows), rows)
	}
	for i, want := range []Scrape{good, slow, bad} {
		if !bytes.Equal(rows[i].Body, want.Body) {
			t.Errorf("row %d: body differs", i)
		}
		if i == 2 {
			continue // did not parse
		}
		for j, g := range rows[i].Samples {
			if g.Name != want.Samples[j].Name || g.Labels != want.Samples[j].Labels || g.Value != want.Samples[j].Value {
				t.Errorf("row %d sample %d: %+v, want %+v", i, j, g, want.Samples[j])
			}
		}
	}
}

// A closed minute's journal removed by hand while its group is open: the
// next append journals its rows again into the open journal, so a crash
// after it loses nothing, and the group's file holds every row.
func TestGroupClosedMinuteJournalRemoved(t *testing.T) {
	for _, crash := range []bool{false, true} {
		dir := t.TempDir()
		w, err := NewWriter(dir, runR, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		w.SetCompactEvery(10)
		var want []Scrape
		add := func(i int) error {
			s := row(runR, "a", i)
			want = append(want, s)
			return w.Append(s)
		}
		for i := range 6 {
			if err := add(i); err != nil {
				t.Fatal(err)
			}
			if i%2 == 1 {
				if err := w.Tick(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Remove(filepath.Join(dir, runR+"-000002.journal")); err != nil {
			t.Fatal(err)
		}
		err = add(6)
		if !errors.Is(err, ErrJournalReplaced) || !strings.Contains(err.Error(), "000002.journal; its 2 rows") {
			t.Fatalf("append after removal: %v", err)
		}
		if crash {
			if err := w.Abandon(); err != nil {
				t.Fatal(err)
			}
		} else if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		sameRows(t, readWithJournals(t, dir), want)
	}
}
