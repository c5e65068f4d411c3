package capture

import (
	"reflect"
	"testing"
	"time"
)

// Read through the cache while the journal grows, a journal's rows are
// ReadLive's every time, and a record read before keeps its parse (the
// same samples) instead of being parsed again; a journal no longer live
// is forgotten.
func TestJournalCacheIsReadLive(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, "20260101T000000Z-0000aaaa", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := NewJournalCache()
	var first []Scrape
	for n := 1; n <= 3; n++ {
		for i := range 4 {
			if err := w.Append(row("20260101T000000Z-0000aaaa", "t", (n-1)*4+i)); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Open(dir)
		if err != nil || len(r.Live) != 1 {
			t.Fatalf("open: %v, live %v", err, r.Live)
		}
		want, err := ReadLive(r.Live[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadLive(r.Live[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4*n || !reflect.DeepEqual(got, want) {
			t.Fatalf("read %d: %d rows, want ReadLive's %d, equal", n, len(got), len(want))
		}
		if n == 1 {
			first = got
			continue
		}
		// The first rows' samples are the very ones parsed at the first read.
		if &got[0].Samples[0] != &first[0].Samples[0] {
			t.Errorf("read %d: the first record was parsed again", n)
		}
	}
	c.Forget(nil)
	if len(c.paths) != 0 {
		t.Errorf("Forget(nil) kept %d journals", len(c.paths))
	}
}
