package capture

import (
	"path/filepath"
	"testing"
	"time"
)

// The headers column goes through the journal and into a segment: a row
// with headers keeps them, one without reads as null, and a journal record
// of an older version (which ends after the body) decodes with null
// headers, while a byte after the headers is still damage.
func TestHeadersColumn(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h := `{"Content-Type":"text/plain","X-Process-Start":"<redacted sha256:0123abcd>"}`
	with, without := row(runR, "a", 0), row(runR, "a", 1)
	with.Headers = &h
	for _, s := range []Scrape{with, without} {
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	// Read back from the journal, as a crashed session's would be.
	live, err := ReadLive(filepath.Join(dir, runR+"-000001.journal"))
	if err != nil || len(live) != 2 || live[0].Headers == nil || *live[0].Headers != h || live[1].Headers != nil {
		t.Fatalf("journal rows %+v, %v", live, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir)
	if len(got) != 2 || got[0].Headers == nil || *got[0].Headers != h || got[1].Headers != nil {
		t.Fatalf("segment rows: %v and %v", got[0].Headers, got[1].Headers)
	}

	rec := encodeScrape(nil, &without)
	if s, err := decodeRecord(rec); err != nil || s.Headers != nil {
		t.Errorf("a record without headers: %v, %v", s.Headers, err)
	}
	rec = encodeScrape(nil, &with)
	if s, err := decodeRecord(rec); err != nil || s.Headers == nil || *s.Headers != h {
		t.Errorf("a record with headers: %v, %v", s.Headers, err)
	}
	if _, err := decodeRecord(append(rec, 0)); err == nil {
		t.Error("a byte after the headers decoded")
	}
	for _, b := range []byte{0, 2} {
		if _, err := decodeRecord(append(encodeScrape(nil, &without), b)); err == nil {
			t.Errorf("a presence byte of %d where the headers go decoded", b)
		}
	}
}

// A recording made before the column existed (the shipped
// captures/findings) reads with every row's headers null.
func TestOldRecordingHasNoHeaders(t *testing.T) {
	r, err := Open("../../captures/findings/run")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, seg := range r.Segments {
		err := ReadSegment(seg, func(s *Scrape) error {
			n++
			if s.Headers != nil {
				t.Fatalf("%s: headers %q in a recording made before the column", seg, *s.Headers)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		t.Fatal("no rows")
	}
}
