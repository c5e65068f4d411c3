package capture

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bigRow is row with a body of n bytes that parses: a long comment after
// its samples.
func bigRow(run, target string, seq, n int) Scrape {
	r := row(run, target, seq)
	b := bytes.Clone(r.Body)
	b = append(b, "# "...)
	b = append(b, bytes.Repeat([]byte{'a' + byte(seq%26)}, n-len(b)-3)...)
	r.Body = append(b, '\n')
	Parse(&r)
	return r
}

func journals(t *testing.T, dir string) []string {
	t.Helper()
	js, err := filepath.Glob(filepath.Join(dir, "*.journal"))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// A journal removed by hand while recording: the next append notices, says
// so with ErrJournalReplaced and journals the open segment again, so a crash
// after it loses nothing; rotation and close do not fail on the missing file.
func TestRemovedJournalIsReplaced(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(0)
	for i := range 3 {
		if err := w.Append(row(runR, "a", i)); err != nil {
			t.Fatal(err)
		}
	}
	js := journals(t, dir)
	if len(js) != 1 {
		t.Fatalf("journals %v", js)
	}
	if err := os.Remove(js[0]); err != nil {
		t.Fatal(err)
	}
	err = w.Append(row(runR, "a", 3))
	if !errors.Is(err, ErrJournalReplaced) {
		t.Fatalf("append after the journal was removed: %v, want ErrJournalReplaced", err)
	}
	t.Log(err)
	js = journals(t, dir)
	if len(js) != 1 {
		t.Fatalf("no new journal: %v", js)
	}
	// What a crash now would leave: the new journal holds the whole segment.
	rows, err := ReadLive(js[0])
	if err != nil || len(rows) != 4 {
		t.Fatalf("the new journal holds %d rows (%v), want 4", len(rows), err)
	}
	if err := w.Append(row(runR, "a", 4)); err != nil {
		t.Fatal(err)
	}
	// Removed again, then rotated before any append notices.
	if err := os.Remove(journals(t, dir)[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Rotate(); err != nil {
		t.Fatalf("rotation with its journal removed: %v", err)
	}
	if err := w.Append(row(runR, "a", 5)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir); len(got) != 6 {
		t.Fatalf("%d rows, want 6", len(got))
	}
}

// The open segment holds at most its budget: a segment reaching it is
// sealed at once, and while that seal runs, rows past the budget keep their
// body and samples in the journal only, to be read back at the seal. Every
// row comes out whole.
func TestSegmentBudget(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(3)
	w.SetSegmentBytes(110_000)
	var want []Scrape
	add := func(s Scrape) {
		t.Helper()
		want = append(want, s)
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	// Small rows: under budget, one segment stays open.
	for i := range 4 {
		add(row(runR, "small", i))
	}
	if w.Seals() != 0 || w.sealing != nil {
		t.Fatal("a segment under budget was sealed")
	}
	// A seal in flight (held back here: its result is not in yet), and
	// rows of 30 KB: the fourth is past the budget and let go of.
	hold := make(chan error, 1)
	w.sealing = hold
	for i := range 6 {
		add(bigRow(runR, "big", i, 30_000))
	}
	spilled := 0
	for _, r := range w.rows {
		if r.spilled {
			spilled++
			if r.s.Body != nil || r.s.Samples != nil {
				t.Fatal("a row past the budget kept its body")
			}
		}
	}
	if spilled != 3 || w.held > 110_000 {
		t.Fatalf("%d rows let go of, %d bytes held; want 3 and at most the budget", spilled, w.held)
	}
	hold <- nil // the seal "ends"; the next append seals the segment
	add(row(runR, "small", 4))
	if err := w.waitSeal(); err != nil {
		t.Fatal(err)
	}
	if w.Seals() != 1 {
		t.Fatalf("%d seals after the budget was reached", w.Seals())
	}
	for i := range 3 {
		add(row(runR, "small", 5+i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir)
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	key := func(s Scrape) string { return fmt.Sprintf("%s/%d", s.Target, s.Seq) }
	byKey := map[string]Scrape{}
	for _, g := range got {
		byKey[key(g)] = g
	}
	for _, wnt := range want {
		g, ok := byKey[key(wnt)]
		if !ok || !bytes.Equal(g.Body, wnt.Body) || len(g.Samples) != len(wnt.Samples) || g.Outcome != wnt.Outcome {
			t.Errorf("%s: stored %v with %d samples, want %d", key(wnt), ok, len(g.Samples), len(wnt.Samples))
		}
	}
	// The big segment is not merged with the small one after it.
	var names []string
	for _, f := range w.Segments() {
		names = append(names, filepath.Base(f))
	}
	if strings.Join(names, " ") != runR+"-000001.parquet "+runR+"-000002.parquet" {
		t.Errorf("files %v", names)
	}
}

// A body over a parse limit is stored as it came, with no sample and a
// parse error naming the limit.
func TestParseCappedStoresRaw(t *testing.T) {
	s := row(runR, "a", 0)
	body := s.Body
	ParseCapped(&s, nil, Limits{MaxSeries: 1})
	if s.Outcome != OutcomeParseError || s.Samples != nil || !bytes.Equal(s.Body, body) {
		t.Fatalf("outcome %s, %d samples", s.Outcome, len(s.Samples))
	}
	if want := "too many series: 2 > 1 (max_series); body stored unparsed"; s.ParseError == nil || *s.ParseError != want {
		t.Fatalf("parse error %v, want %q", s.ParseError, want)
	}
	ParseCapped(&s, nil, Limits{MaxSeries: 2})
	if s.Outcome != OutcomeOK || len(s.Samples) != 2 || s.ParseError != nil {
		t.Fatalf("within the limit: %s, %d samples", s.Outcome, len(s.Samples))
	}
}

// A row appended before its parse has ended is sealed with the parse's
// result: the seal waits for it. Its journal record, written first, says
// ok; a body that then fails to parse is parse_error in the segment, and
// the journal alone (as a kill during the parse leaves it) reads the same.
func TestAppendPendingSealsTheParse(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(0)
	good, bad := row(runR, "a", 0), row(runR, "a", 1)
	bad.Body = []byte("not exposition {{{\n")
	for _, s := range []Scrape{good, bad} {
		s.Samples, s.ParseError, s.Outcome = nil, nil, OutcomeOK
		p := NewPending()
		if err := w.AppendPending(s, p); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(50 * time.Millisecond) // the seal starts before the parse ends
			Parse(&s)
			p.Done(&s)
		}()
	}
	js, _ := filepath.Glob(filepath.Join(dir, "*.journal"))
	if len(js) != 1 {
		t.Fatalf("journals %v", js)
	}
	data, err := os.ReadFile(js[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(what string, rows []Scrape) {
		t.Helper()
		if len(rows) != 2 || rows[0].Outcome != OutcomeOK || len(rows[0].Samples) != len(good.Samples) || len(good.Samples) == 0 ||
			rows[1].Outcome != OutcomeParseError || rows[1].ParseError == nil || len(rows[1].Samples) != 0 {
			t.Errorf("%s: %d rows %+v", what, len(rows), rows)
		}
	}
	check("sealed", readAll(t, dir))
	raw, _, err := parseJournal(js[0], data)
	if err != nil || len(raw) != 2 || raw[0].Outcome != OutcomeOK || raw[1].Outcome != OutcomeOK {
		t.Fatalf("journal records: %d rows, %v", len(raw), err)
	}
	copyPath := filepath.Join(t.TempDir(), filepath.Base(js[0]))
	if err := os.WriteFile(copyPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rows, _, err := readJournal(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	check("journal alone", rows)
}
