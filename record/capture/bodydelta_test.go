package capture

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// A delta puts back its body byte for byte: changed values, lines added
// and removed, no final newline, lines without a space, empty bodies.
func TestBodyDeltaRoundTrip(t *testing.T) {
	page := func(vals ...int) []byte {
		var b []byte
		for i, v := range vals {
			b = fmt.Appendf(b, "# TYPE m%d counter\nm%d{a=\"x y\"} %d\n", i, i, v)
		}
		return b
	}
	cases := []struct{ prev, cur []byte }{
		{page(1, 2, 3), page(1, 5, 3)},
		{page(1, 2, 3), page(1, 2, 3, 4)},             // a series added at the end
		{page(1, 2, 3, 4), page(1, 3, 4)},             // and removed in the middle
		{append(page(1, 2), "tail 9"...), page(1, 2)}, // a last line without its newline
		{page(1, 2), append(page(1, 2), "tail 9"...)},
		{[]byte("nospace\nnospace2\n"), []byte("nospace\nchanged\n")},
		{[]byte(""), page(1)},
		{page(1), []byte("")},
		{[]byte("a b\n\n\n"), []byte("a c\n\n")},
		// Integer values, by their difference when written as strconv
		// writes them, else whole.
		{[]byte("x 1.0\ny -5\nz 3"), []byte("x 12.0\ny 7\nz -3")},
		{[]byte("x 007\ny 5\nz -0\n"), []byte("x 8\ny 5.0\nz 1\n")},
		{[]byte("x 1.0\n"), []byte("x 2.5\n")},
		{[]byte("x 999999999999999999\n"), []byte("x 1000000000000000000\n")},
		{[]byte("x -999999999999999999\n"), []byte("x 999999999999999999\n")},
		{[]byte("x 1\n"), []byte("x 2")},
	}
	var e deltaEncoder
	for i, c := range cases {
		d := e.encode(nil, c.prev, c.cur)
		got, err := applyDelta(nil, c.prev, d)
		if err != nil || !bytes.Equal(got, c.cur) {
			t.Errorf("case %d: %q, %v; want %q (delta %q)", i, got, err, c.cur, d)
		}
	}
	// Random edits of a page of many lines, each body against the one
	// before.
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]int, 300)
	prev := page(vals...)
	for range 200 {
		for range 20 {
			vals[r.IntN(len(vals))] += r.IntN(1000)
		}
		if r.IntN(10) == 0 {
			i := r.IntN(len(vals))
			vals = append(vals[:i], vals[i+1:]...)
		}
		if r.IntN(10) == 0 {
			vals = append(vals, r.IntN(5))
		}
		cur := page(vals...)
		d := e.encode(nil, prev, cur)
		got, err := applyDelta(nil, prev, d)
		if err != nil || !bytes.Equal(got, cur) {
			t.Fatalf("random page: %v", err)
		}
		if len(d) > len(cur)/4 {
			t.Errorf("delta of %d bytes for a %d-byte page with 20 values changed", len(d), len(cur))
		}
		prev = cur
	}
}

// A delta that does not apply is damage, never a panic or a wrong body.
func TestBodyDeltaDamaged(t *testing.T) {
	prev := []byte("a 1\nb 2\n")
	long := append(bytes.Repeat([]byte("x"), 1<<20), '\n')
	if _, err := applyDelta(nil, long, bytes.Repeat([]byte{1, 4, '0', '\n'}, 200)); err == nil {
		t.Errorf("a delta 200 MiB long applied")
	}
	for _, d := range []string{"", "\x09", "\x01\x01\x01\x01", "\x01\x02x\n\x01\x01", "\x01\x07", "\x01\x0499\n\x01", "\x01\x04x\n", "\x01\x04", "\x01\x05x\n", "\x01\x05", "\x01\x055"} {
		if got, err := applyDelta(nil, prev, []byte(d)); err == nil {
			t.Errorf("delta %q applied: %q", d, got)
		}
	}
}

// Through the writer: consecutive bodies of a target are stored as deltas
// after a key frame per row group, and every reader puts them back: a whole
// row (ReadSegment) and a body asked for alone (WantBody, bodyAt).
func TestBodyDeltasWrittenAndRead(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(2)
	var want [][]byte
	for i := range 45 {
		s := row(runR, "a", i)
		s.Body = append(bytes.Repeat([]byte("# HELP x a help text long enough to pay for a delta\n"), 4), s.Body...)
		if i == 17 {
			s.Body = []byte("not utf-8 \xff\n") // kept whole, the next row a key frame
		}
		if i >= 40 { // error answers, each kept whole
			s.Outcome, s.Samples, s.Body = OutcomeHTTPError, nil, bytes.Repeat([]byte("Service Unavailable: loading the model\n"), 5)
		}
		want = append(want, s.Body)
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
		if i == 19 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.CloseMerged(); err != nil {
		t.Fatal(err)
	}
	segs := w.Segments()
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one merged file", segs)
	}
	deltas := 0
	err = ReadSegment(segs[0], func(s *Scrape) error {
		if !bytes.Equal(s.Body, want[s.Seq]) {
			t.Errorf("seq %d: body %q, want %q", s.Seq, s.Body, want[s.Seq])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The rows as Parquet holds them: body empty where the delta is.
	f, err := os.Open(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := OpenParquet(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]Scrape, 50)
	n, _ := parquet.NewGenericReader[Scrape](pf).Read(rows)
	if n != 45 {
		t.Fatalf("%d rows", n)
	}
	rows = rows[:n]
	for _, s := range rows {
		if s.BodyDelta != nil {
			deltas++
			if len(s.Body) != 0 {
				t.Errorf("seq %d: a body and a delta", s.Seq)
			}
		}
	}
	// Key frames: seq 0, the invalid UTF-8 body and the row after it, the
	// error answers.
	if deltas != 37 {
		t.Errorf("%d deltas in 45 rows, want 37", deltas)
	}
	// The body of a row alone, through the column reader's WantBody.
	r := NewColumnReader(NewStrings())
	got := map[int64][]byte{}
	r.WantBody = func(w *Row) bool { return w.Seq%7 == 3 || w.Seq >= 43 }
	err = r.Read(segs[0], func(w *Row) {
		if w.Body != nil {
			got[w.Seq] = bytes.Clone(w.Body)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int64{3, 10, 17, 24, 31, 38, 43, 44} {
		if !bytes.Equal(got[seq], want[seq]) {
			t.Errorf("WantBody seq %d: %q, want %q", seq, got[seq], want[seq])
		}
	}
}

// A segment written by the llmrec before body deltas (schema version 1,
// testdata/v1: `llmrec sim -generate DIR -engines 1 -duration 20s` at
// 8fb4a4b) still reads, each body whole.
func TestReadsSchemaVersion1(t *testing.T) {
	r, err := Open(filepath.Join("testdata", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Segments) != 1 {
		t.Fatalf("segments %v", r.Segments)
	}
	n, ok := 0, 0
	err = ReadSegment(r.Segments[0], func(s *Scrape) error {
		n++
		if s.Outcome == OutcomeOK {
			ok++
			if len(s.Body) < 40000 || len(s.Samples) < 200 {
				t.Errorf("seq %d: %d-byte body, %d samples", s.Seq, len(s.Body), len(s.Samples))
			}
		}
		if s.Seq == 3 {
			if sum := fmt.Sprintf("%x", sha256.Sum256(s.Body)); sum != "28ec9988893c04884e84d0ae8712638c0fad5468f00fc35a1ba04da3354ce73e" {
				t.Errorf("seq 3: body sha256 %s, want the one export printed at 8fb4a4b", sum)
			}
		}
		return nil
	})
	if err != nil || n != 10 || ok != 7 {
		t.Errorf("%d rows (%d ok), %v; want 10 (7 ok)", n, ok, err)
	}
}

// Any two bodies: the delta of one against the other puts it back, and
// any bytes taken for a delta apply or fail, never panic.
func FuzzBodyDelta(f *testing.F) {
	f.Add([]byte("a 1\nb 2.0\n# c\n"), []byte("a 3\nx 1\nb 2.5\n# c"), []byte("\x01\x05-3\n\x04\x31\n\x02z"))
	f.Add([]byte("m{l=\"a b\"} 10.0\n"), []byte("m{l=\"a b\"} 9\n"), []byte("\x01\x01\x03q\n"))
	f.Fuzz(func(t *testing.T, prev, cur, junk []byte) {
		var e deltaEncoder
		d := e.encode(nil, prev, cur)
		got, err := applyDelta(nil, prev, d)
		if err != nil || !bytes.Equal(got, cur) {
			t.Fatalf("delta %q of %q against %q: %q, %v", d, cur, prev, got, err)
		}
		applyDelta(nil, prev, junk)
	})
}
