package capture

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/rle"
)

// kindsOf reads the segment at path with a Known hook that knows the rows
// at which known says so, and returns each row's family and type strings
// (nil for a known row), and whether every row group's family and type
// were read through lazyCol to the end (no fallback to the pages).
func kindsOf(t *testing.T, path string, known func(k int) bool) (fam, typ [][]string, lazy bool) {
	t.Helper()
	tab := NewStrings()
	r := NewColumnReader(tab)
	k := 0
	lazy = true
	r.Known = func(*Row) bool { return known(k) }
	err := r.Read(path, func(w *Row) {
		var f, ty []string
		for j := range w.Family {
			f, ty = append(f, tab.Str(w.Family[j])), append(ty, tab.Str(w.Type[j]))
		}
		if len(w.Name) > 0 && !known(k) && len(w.Family) != len(w.Name) {
			t.Fatalf("row %d: %d families for %d samples", k, len(w.Family), len(w.Name))
		}
		fam, typ = append(fam, f), append(typ, ty)
		lazy = lazy && r.cur[cFamily].lazy != nil && r.cur[cType].lazy != nil
		k++
	})
	if err != nil {
		t.Fatal(err)
	}
	return fam, typ, lazy
}

// wholeKinds is every row's family and type strings as a whole read
// (ReadSegment, which never reads lazily) has them.
func wholeKinds(t *testing.T, path string) (fam, typ [][]string) {
	t.Helper()
	if err := ReadSegment(path, func(s *Scrape) error {
		var f, ty []string
		for _, x := range s.Samples {
			f, ty = append(f, x.Family), append(ty, x.Type)
		}
		fam, typ = append(fam, f), append(typ, ty)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return fam, typ
}

// checkKinds checks that the rows a replay asks the family and type of
// read them as a whole read does, for every row and for rows far apart
// (whole pages and runs passed over), and returns whether the reads were
// lazy.
func checkKinds(t *testing.T, path string) bool {
	t.Helper()
	wf, wt := wholeKinds(t, path)
	lazy := true
	for _, every := range []int{1, 2, 7, 60, 300} {
		fam, typ, l := kindsOf(t, path, func(k int) bool { return k%every != every-1 })
		lazy = lazy && l
		if len(fam) != len(wf) {
			t.Fatalf("%s: %d rows, a whole read %d", path, len(fam), len(wf))
		}
		for k := range fam {
			if k%every != every-1 {
				continue
			}
			if !slices.Equal(fam[k], wf[k]) || !slices.Equal(typ[k], wt[k]) {
				t.Fatalf("%s, every %d: row %d: families %v types %v, a whole read %v %v", path, every, k, fam[k], typ[k], wf[k], wt[k])
			}
		}
	}
	return lazy
}

// The family and type read from the pages' bytes (lazyCol) are those
// parquet-go decodes, in real segments (one page a column chunk) and in
// segments of many small pages (pages passed over whole), of version 2
// pages; version 1 pages are read by the cursor as before.
func TestLazyKindsAsParquetGo(t *testing.T) {
	real, _ := filepath.Glob("../../../shared/real-runs/*/*/rec/*.parquet")
	if len(real) == 0 {
		t.Log("no ../shared real runs: the repository's segment only")
	}
	for _, path := range append([]string{shippedSegment}, real...) {
		if !checkKinds(t, path) {
			t.Errorf("%s: not read lazily", path)
		}
	}
	dir := t.TempDir()
	var rows []Scrape
	for i := range 600 {
		rows = append(rows, row(runR, []string{"a", "b", "c"}[i%3], i/3))
	}
	for _, c := range []struct {
		name string
		opts []parquet.WriterOption
		lazy bool
	}{
		{"small pages", []parquet.WriterOption{parquet.PageBufferSize(2 << 10)}, true},
		{"tiny pages", []parquet.WriterOption{parquet.PageBufferSize(256)}, true},
		{"v1 pages", []parquet.WriterOption{parquet.DataPageVersion(1)}, false},
		{"v1 small pages", []parquet.WriterOption{parquet.DataPageVersion(1), parquet.PageBufferSize(2 << 10)}, false},
	} {
		path := filepath.Join(dir, c.name+".parquet")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		pw := parquet.NewGenericWriter[Scrape](f, append(c.opts, parquet.Compression(zstdBetter))...)
		if err := writeRows(pw, len(rows), func(i int) (Scrape, error) { return rows[i], nil }); err != nil {
			t.Fatal(err)
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if got := checkKinds(t, path); got != c.lazy {
			t.Errorf("%s: read lazily %v, want %v", c.name, got, c.lazy)
		}
	}
}

// rleReader never panics on bytes that are not the encoding (a crafted
// page restates its checksum): it reads, passes over and counts, or
// errs. 20,000 random byte strings of random widths, from a fixed seed.
func TestRLEReaderOnAnyBytes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		width := uint(rnd.IntN(33))
		d := rleReader{b: b, width: width}
		var err error
		switch rnd.IntN(3) {
		case 0:
			var got []int32
			got, err = d.read(nil, rnd.IntN(100))
			for _, v := range got {
				if width < 32 && uint32(v) >= 1<<width {
					t.Fatalf("%x, width %d: value %d", b, width, v)
				}
			}
		case 1:
			err = d.skip(rnd.IntN(100))
		default:
			_, err = d.count(rnd.IntN(100), 1)
		}
		_ = err
	}
}

// rleReader reads what parquet-go's RLE encoding wrote: runs and
// bit-packed groups of every width, read whole, passed over in steps and
// read in pieces.
func TestRLEReaderReadsTheEncoding(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for width := 1; width <= 20; width++ {
		vals := make([]int32, 3000)
		for i := range vals {
			switch rnd.IntN(3) {
			case 0: // a run
				vals[i] = vals[max(i-1, 0)]
			default:
				vals[i] = int32(rnd.Uint32() & (1<<width - 1))
			}
		}
		enc := &rle.Encoding{BitWidth: width}
		b, err := enc.EncodeInt32(nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		d := rleReader{b: b, width: uint(width)}
		got, err := d.read(nil, len(vals))
		if err != nil || !slices.Equal(got, vals) {
			t.Fatalf("width %d: %v, read %d values differing", width, err, len(got))
		}
		d = rleReader{b: b, width: uint(width)}
		for at := 0; at < len(vals); {
			pass, n := rnd.IntN(50), 1+rnd.IntN(20)
			if at+pass+n > len(vals) {
				break
			}
			if err := d.skip(pass); err != nil {
				t.Fatal(err)
			}
			got, err := d.read(nil, n)
			if err != nil || !slices.Equal(got, vals[at+pass:at+pass+n]) {
				t.Fatalf("width %d at %d+%d: %v %v, want %v", width, at, pass, err, got, vals[at+pass:at+pass+n])
			}
			at += pass + n
		}
	}
}
