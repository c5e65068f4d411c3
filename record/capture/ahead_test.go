package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A segment opened ahead (ColumnReader.Ahead) reads as one opened by its
// read: the same rows, and for a damaged file the same error; a file
// opened ahead and never read, or one that cannot be opened, changes
// nothing for the read that follows.
func TestAheadReadsAsWithout(t *testing.T) {
	dir, seg, seals := sealedSegment(t, 60, "a", "b")
	// read reads seg after ahead (nil: none) and says what it delivered.
	read := func(seals Seals, ahead func(*ColumnReader)) string {
		tab := NewStrings()
		r := NewColumnReader(tab)
		r.Headers = true
		if ahead != nil {
			ahead(r)
		}
		out := ""
		n, err := r.ReadSealed(seals, seg, func(w *Row) {
			out += fmt.Sprintf("%s %d %d %v %v|", tab.Str(w.Target), w.Seq, len(w.Name), w.Value, w.Headers)
		})
		r.dropAhead()
		return fmt.Sprintf("%d rows, error %v: %s", n, err, out)
	}
	for _, damaged := range []bool{false, true} {
		if damaged {
			flipMiddle(t, seg)
		}
		want, unverified := read(seals, nil), read(nil, nil)
		// A sealed file read into memory once reads as one checked and
		// read from the disk (a file over memMax).
		memMax = 0
		streamed, streamedAhead := read(seals, nil), read(seals, func(r *ColumnReader) { r.Ahead(seals, seg) })
		memMax = 16 << 20
		if streamed != want || streamedAhead != want {
			t.Errorf("damaged %v, read from the file:\n%.300s\nahead:\n%.300s\nwant (from memory)\n%.300s", damaged, streamed, streamedAhead, want)
		}
		if !damaged && (want[:4] != "120 " || unverified != want) {
			t.Fatalf("intact segment read as %.200s, unverified as %.200s", want, unverified)
		}
		if got := read(nil, func(r *ColumnReader) { r.Ahead(seals, seg) }); got != unverified {
			t.Errorf("damaged %v, read unverified after a verified ahead:\n%.300s\nwant\n%.300s", damaged, got, unverified)
		}
		for name, ahead := range map[string]func(*ColumnReader){
			"ahead":             func(r *ColumnReader) { r.Ahead(seals, seg) },
			"another ahead":     func(r *ColumnReader) { r.Ahead(seals, filepath.Join(dir, runR+"-000099.parquet")) },
			"ahead, unverified": func(r *ColumnReader) { r.Ahead(nil, seg) },
		} {
			if got := read(seals, ahead); got != want {
				t.Errorf("damaged %v, %s: read\n%.300s\nwant\n%.300s", damaged, name, got, want)
			}
		}
	}
}

// A replay asks for the next file to be opened ahead before it reads the
// one it asked for last (analyze.Analyze), and not for the first: the
// files opened ahead stay through the reads before theirs, and each read
// takes its own. Each file is removed once opened ahead: a read that
// checked or opened it again would fail.
func TestAheadKeepsTheFileReadNext(t *testing.T) {
	var segs []string
	var seals []Seals
	for range 3 {
		_, seg, s := sealedSegment(t, 30, "a")
		segs, seals = append(segs, seg), append(seals, s)
	}
	r := NewColumnReader(NewStrings())
	defer r.dropAhead()
	// removed waits for the files opened ahead and removes them.
	removed := func() {
		for _, a := range r.next {
			<-a.done
			if err := os.Remove(a.path); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	for i, seg := range segs {
		if i+1 < len(segs) {
			r.Ahead(seals[i+1], segs[i+1])
		}
		removed()
		rows, err := r.ReadSealed(seals[i], seg, func(*Row) {})
		if rows != 30 || err != nil {
			t.Fatalf("file %d: %d rows, %v", i, rows, err)
		}
	}
	if len(r.next) != 0 {
		t.Errorf("%d files still opened ahead after the last read", len(r.next))
	}
}

// sealedSegment writes rounds rows of each target into a new folder, one
// segment, and returns the folder, the segment and the folder's seals.
func sealedSegment(t testing.TB, rounds int, targets ...string) (dir, seg string, seals Seals) {
	t.Helper()
	dir = t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rounds {
		for _, target := range targets {
			if err := w.Append(row(runR, target, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := Open(dir)
	if err != nil || len(run.Segments) != 1 {
		t.Fatalf("segments %v: %v", run, err)
	}
	seg = run.Segments[0]
	seals, err = ReadSeals(dir)
	if err != nil || seals[filepath.Base(seg)] == nil {
		t.Fatalf("seals %v: %v", seals, err)
	}
	return dir, seg, seals
}

// flipMiddle damages a file: one bit of its middle byte flipped.
func flipMiddle(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
