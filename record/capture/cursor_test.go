package capture

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
)

// A Cursor delivers ReadSealed's rows, in its order, with the same Known
// and WantBody; BodyAt reads any row's body as WantBody would have;
// ReadKeys has the same rows without samples; a damaged file is refused
// at the open as ReadSealed refuses it; and a cursor closed halfway lets
// the file go.
func TestCursorReadsAsReadSealed(t *testing.T) {
	_, seg, seals := sealedSegment(t, 90, "a", "b", "c")
	tab := NewStrings()
	// Known says a row of b is known (its family and type not read), a
	// body is wanted every seventh row.
	known := func(w *Row) bool { return tab.Str(w.Target) == "b" }
	wantBody := func(w *Row) bool { return w.Seq%7 == 0 }
	line := func(w *Row) string {
		return fmt.Sprintf("%s %d %d %d %v %v %v %v %q %q|", tab.Str(w.Target), w.Seq, w.Scheduled, w.Start, w.Name, w.Labels, w.Value, w.Family, w.Body, w.Headers)
	}
	r := NewColumnReader(tab)
	r.Headers, r.Known, r.WantBody = true, known, wantBody
	key := func(w *Row) string { return fmt.Sprintf("%s %d %d %d", tab.Str(w.Target), w.Seq, w.Scheduled, w.Start) }
	var want, wantKeys []string
	var bodies [][]byte
	n, err := r.ReadSealed(seals, seg, func(w *Row) { want, wantKeys = append(want, line(w)), append(wantKeys, key(w)) })
	if err != nil || n < 100 {
		t.Fatalf("ReadSealed: %d rows, %v", n, err)
	}
	all := NewColumnReader(tab)
	all.WantBody = func(*Row) bool { return true }
	if _, err := all.ReadSealed(seals, seg, func(w *Row) { bodies = append(bodies, slices.Clone(w.Body)) }); err != nil {
		t.Fatal(err)
	}

	c, err := OpenCursor(tab, seals, seg, true, known, wantBody)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sealed() == nil {
		t.Fatal("an intact segment with its seal is not sealed")
	}
	var got []string
	for {
		w, err := c.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line(w))
		// A body read at any time is the row's, as a read of every body has it.
		if k := c.Rows() - 1; k%5 == 0 {
			b, err := c.BodyAt(k)
			if err != nil || string(b) != string(bodies[k]) || len(b) == 0 {
				t.Fatalf("BodyAt(%d): %d bytes, %v; want %d bytes", k, len(b), err, len(bodies[k]))
			}
		}
	}
	if !slices.Equal(got, want) || c.Rows() != n {
		t.Fatalf("the cursor's %d rows differ from ReadSealed's %d", len(got), len(want))
	}
	if _, err := c.BodyAt(n); !errors.Is(err, ErrDamaged) {
		t.Errorf("BodyAt past the last row: %v", err)
	}
	c.Close()
	c.Close() // a second Close does nothing

	var keys []string
	samples := 0
	if err := ReadKeys(tab, seg, func(w *Row) {
		keys, samples = append(keys, key(w)), samples+len(w.Name)+len(w.Body)+len(w.Headers)
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, wantKeys) || samples != 0 {
		t.Fatalf("ReadKeys: %d rows, %d samples, bodies and headers' bytes; want ReadSealed's %d rows", len(keys), samples, len(wantKeys))
	}

	// Closed halfway, a cursor lets its file go: it can be removed and
	// another cursor opens the same file anew.
	c, err = OpenCursor(tab, seals, seg, true, known, wantBody)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := c.Next(); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()

	flipMiddle(t, seg)
	_, want1 := NewColumnReader(tab).ReadSealed(seals, seg, func(*Row) {})
	if _, err := OpenCursor(tab, seals, seg, true, known, wantBody); err == nil || err.Error() != want1.Error() || !errors.Is(err, ErrDamaged) {
		t.Errorf("a damaged segment opened as %v, read as %v", err, want1)
	}
}
