package capture

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// A reader's Same hook is asked of a row of samples with its names and
// labels as dictionary indexes; a row it knows is delivered with its
// values only (no names, labels, family or type; Known not asked), any
// other as a reader without the hook delivers it. The indexes are the
// strings': the same indexes under one Dict are the same names.
func TestSameByIndexes(t *testing.T) {
	_, seg, _ := sealedSegment(t, 60, "a", "b")
	tab := NewStrings()
	type want struct {
		name, labels []int32
		values       []float64
	}
	var plain []want
	r := NewColumnReader(tab)
	if err := r.Read(seg, func(w *Row) {
		plain = append(plain, want{slices.Clone(w.Name), slices.Clone(w.Labels), slices.Clone(w.Value)})
	}); err != nil {
		t.Fatal(err)
	}
	r = NewColumnReader(tab)
	asked, known := 0, map[string][]int32{} // a Dict and index pair's string ids
	i := 0
	r.Same = func(w *Row) bool {
		asked++
		if len(w.Name) != 0 || len(w.Labels) != 0 || len(w.NameIdx) != len(w.LabelsIdx) || len(w.NameIdx) != len(plain[i].name) {
			t.Fatalf("row %d asked with %d names, %d labels, %d and %d indexes; %d samples", i, len(w.Name), len(w.Labels), len(w.NameIdx), len(w.LabelsIdx), len(plain[i].name))
		}
		for j, x := range w.NameIdx {
			k := fmt.Sprint(w.Dict, x, w.LabelsIdx[j])
			id := []int32{plain[i].name[j], plain[i].labels[j]}
			if was, ok := known[k]; ok && !slices.Equal(was, id) {
				t.Fatalf("row %d: indexes %s were %v, now %v", i, k, was, id)
			}
			known[k] = id
		}
		return i%2 == 0 // every other row known
	}
	r.Known = func(w *Row) bool {
		if i%2 == 0 && w.NameIdx != nil {
			t.Errorf("row %d: Known asked of a row Same knew", i)
		}
		return false
	}
	if err := r.Read(seg, func(w *Row) {
		p := plain[i]
		sameRow := w.NameIdx != nil && i%2 == 0
		switch {
		case !slices.Equal(w.Value, p.values):
			t.Errorf("row %d: values %v, want %v", i, w.Value, p.values)
		case sameRow && (len(w.Name) != 0 || len(w.Labels) != 0 || len(w.Family) != 0 || len(w.Type) != 0):
			t.Errorf("row %d known by Same: %d names, %d labels, %d families, %d types", i, len(w.Name), len(w.Labels), len(w.Family), len(w.Type))
		case !sameRow && (!slices.Equal(w.Name, p.name) || !slices.Equal(w.Labels, p.labels)):
			t.Errorf("row %d: names %v labels %v, want %v %v", i, w.Name, w.Labels, p.name, p.labels)
		case !sameRow && len(w.Name) > 0 && len(w.Family) != len(w.Name):
			t.Errorf("row %d: %d families for %d names", i, len(w.Family), len(w.Name))
		}
		i++
	}); err != nil {
		t.Fatal(err)
	}
	if i != len(plain) || asked < len(plain)/2 {
		t.Fatalf("%d rows of %d, Same asked of %d", i, len(plain), asked)
	}
}

// An index past its dictionary in a page of names or labels is an error
// of the row that holds it, never a panic, through every way a row's
// names are read: the Same hook's (asked of the unchecked indexes, it
// knows only those of rows delivered before: the analyzers' way), by
// strings (Known; the family and type then read from their pages' bytes,
// lazyCol), and whole rows. Every byte of the name, labels, family and
// type columns' data pages of an uncompressed segment is set to 0xff in turn;
// some of those copies must hold an index out of range, or the test
// missed what it is for.
func TestIndexOutOfRangeIsAnError(t *testing.T) {
	dir := t.TempDir()
	var rows []Scrape
	for i := range 6 {
		rows = append(rows, row(runR, []string{"a", "b"}[i%2], i/2))
	}
	path := writeWith(t, dir, &parquet.Uncompressed, rows)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	// The data page of each column: where its header starts, its length,
	// the header.
	type page struct {
		pos, hdr int64
		h        format.PageHeader
	}
	var pages []page
	for _, col := range []int{cName, cLabels, cFamily, cType} {
		leaf, _ := pf.Schema().Lookup(columns[col]...)
		pos := pf.Metadata().RowGroups[0].Columns[leaf.ColumnIndex].MetaData.DataPageOffset
		h, n, _, err := readPageHeader(bytes.NewReader(data), pos, int64(len(data)), make([]byte, 256))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page{pos, int64(n), h})
	}
	reads := map[string]func(*ColumnReader, string) error{
		"same": func(r *ColumnReader, p string) error {
			seen := map[[3]int64]bool{}
			r.Same = func(w *Row) bool {
				for j, x := range w.NameIdx {
					if !seen[[3]int64{int64(w.Dict), int64(x), int64(w.LabelsIdx[j])}] {
						return false
					}
				}
				return true
			}
			return r.Read(p, func(w *Row) {
				for j, x := range w.NameIdx {
					if len(w.Name) > 0 {
						seen[[3]int64{int64(w.Dict), int64(x), int64(w.LabelsIdx[j])}] = true
					}
				}
			})
		},
		"names": func(r *ColumnReader, p string) error {
			r.Known = func(*Row) bool { return false }
			return r.Read(p, func(*Row) {})
		},
		"whole": func(_ *ColumnReader, p string) error {
			return ReadScrapes(p, 0, func(*Scrape) error { return nil })
		},
	}
	out := map[string]int{}
	bad := filepath.Join(t.TempDir(), filepath.Base(path))
	for _, pg := range pages {
		start := pg.pos + pg.hdr
		for at := start; at < start+int64(pg.h.CompressedPageSize); at++ {
			b := slices.Clone(data)
			b[at] = 0xff
			// The page's checksum stated anew, in a header as long.
			h := pg.h
			h.CRC = int32(crc32.ChecksumIEEE(b[start : start+int64(h.CompressedPageSize)]))
			hb, err := thrift.Marshal(new(thrift.CompactProtocol), &h)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(hb)) != pg.hdr {
				continue
			}
			copy(b[pg.pos:], hb)
			if err := os.WriteFile(bad, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for how, read := range reads {
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("%s: byte %d set: panic %v", how, at, p)
						}
					}()
					err := read(NewColumnReader(NewStrings()), bad)
					if err != nil {
						out[how+" err"]++
					}
					if err != nil && strings.Contains(err.Error(), "dictionary index") {
						if !errors.Is(err, ErrDamaged) {
							t.Errorf("%s: byte %d set: %v is not damage", how, at, err)
						}
						out[how]++
					}
				}()
			}
		}
	}
	for how := range reads {
		if out[how] == 0 {
			t.Errorf("%s: no copy held an index out of range (%v)", how, out)
		}
	}
	t.Log(out)
}
