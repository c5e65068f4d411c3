package capture

import (
	"bytes"
	"errors"
	"flag"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

var valpagesDir = flag.String("valpages.dir", "",
	"a recording whose segments TestValuesAsParquetGo reads too (its *.parquet)")

// valuesOf reads the segment at path as a replay does (not whole) and
// returns every row's values as bits, and whether every row group's value
// column was read by valCol.
func valuesOf(t *testing.T, path string) (vals [][]uint64, own bool) {
	t.Helper()
	r := NewColumnReader(NewStrings())
	own = true
	err := r.Read(path, func(w *Row) {
		v := make([]uint64, len(w.Value))
		for j, x := range w.Value {
			v[j] = math.Float64bits(x)
		}
		vals = append(vals, v)
		own = own && r.cur[cValue].vals != nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return vals, own
}

// wholeValues is every row's values as bits, as a whole read (ReadSegment:
// parquet-go's pages) has them.
func wholeValues(t *testing.T, path string) (vals [][]uint64) {
	t.Helper()
	if err := ReadSegment(path, func(s *Scrape) error {
		v := make([]uint64, len(s.Samples))
		for j, x := range s.Samples {
			v[j] = math.Float64bits(x.Value)
		}
		vals = append(vals, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return vals
}

// checkValues checks that a replay's read of path has the values a whole
// read has, bit for bit, and returns whether valCol read them.
func checkValues(t *testing.T, path string) bool {
	t.Helper()
	got, own := valuesOf(t, path)
	want := wholeValues(t, path)
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, a whole read %d", path, len(got), len(want))
	}
	for k := range got {
		if !slices.Equal(got[k], want[k]) {
			t.Fatalf("%s: row %d: %d values differ from a whole read's %d", path, k, len(got[k]), len(want[k]))
		}
	}
	return own
}

// The doubles valCol reads are parquet-go's, bit for bit: in the
// repository's segment, ../shared's real runs (and -valpages.dir's
// segments), and segments of many small pages (a row's values across
// pages), uncompressed ones; version 1 pages are read by parquet-go.
func TestValuesAsParquetGo(t *testing.T) {
	real, _ := filepath.Glob("../../../shared/real-runs/*/*/rec/*.parquet")
	if len(real) == 0 {
		t.Log("no ../shared real runs: the repository's segment only")
	}
	if *valpagesDir != "" {
		more, _ := filepath.Glob(filepath.Join(*valpagesDir, "*.parquet"))
		t.Logf("%d segments of %s", len(more), *valpagesDir)
		real = append(real, more...)
	}
	for _, path := range append([]string{shippedSegment}, real...) {
		if !checkValues(t, path) {
			t.Errorf("%s: not read by valCol", path)
		}
	}
	dir := t.TempDir()
	var rows []Scrape
	for i := range 600 {
		rows = append(rows, row(runR, []string{"a", "b", "c"}[i%3], i/3))
	}
	for i := range rows {
		for j := range rows[i].Samples {
			// Values of every kind: NaN, infinities, signed zeros.
			rows[i].Samples[j].Value = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0,
				float64(i*j) / 7, -1e300, 5e-324}[(i+j)%8]
		}
	}
	for _, c := range []struct {
		name  string
		opts  []parquet.WriterOption
		codec parquet.WriterOption
		own   bool
	}{
		{"small pages", []parquet.WriterOption{parquet.PageBufferSize(2 << 10)}, parquet.Compression(zstdBetter), true},
		{"tiny pages", []parquet.WriterOption{parquet.PageBufferSize(256)}, parquet.Compression(zstdBetter), true},
		{"uncompressed", nil, parquet.Compression(&parquet.Uncompressed), true},
		{"uncompressed small pages", []parquet.WriterOption{parquet.PageBufferSize(2 << 10)}, parquet.Compression(&parquet.Uncompressed), true},
		{"snappy", nil, parquet.Compression(&parquet.Snappy), false},
		{"v1 pages", []parquet.WriterOption{parquet.DataPageVersion(1)}, parquet.Compression(zstdBetter), false},
		{"v1 small pages", []parquet.WriterOption{parquet.DataPageVersion(1), parquet.PageBufferSize(2 << 10)}, parquet.Compression(zstdBetter), false},
	} {
		path := filepath.Join(dir, c.name+".parquet")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		pw := parquet.NewGenericWriter[Scrape](f, append(c.opts, c.codec)...)
		if err := writeRows(pw, len(rows), func(i int) (Scrape, error) { return rows[i], nil }); err != nil {
			t.Fatal(err)
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if got := checkValues(t, path); got != c.own {
			t.Errorf("%s: read by valCol %v, want %v", c.name, got, c.own)
		}
	}
}

// A value page with any byte changed (its checksum stated anew) reads as
// parquet-go reads it or is damage: never a panic, never different
// values without an error. Every byte of an uncompressed segment's value
// page, and of a zstd one's.
func TestValuePageDamageIsAnError(t *testing.T) {
	var rows []Scrape
	for i := range 6 {
		rows = append(rows, row(runR, []string{"a", "b"}[i%2], i/2))
	}
	for _, codec := range []parquet.WriterOption{parquet.Compression(&parquet.Uncompressed), parquet.Compression(zstdBetter)} {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "seg.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		pw := parquet.NewGenericWriter[Scrape](f, codec)
		if err := writeRows(pw, len(rows), func(i int) (Scrape, error) { return rows[i], nil }); err != nil {
			t.Fatal(err)
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		data, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if _, own := valuesOf(t, f.Name()); !own {
			t.Fatal("the intact segment is not read by valCol")
		}
		leaf, _ := pf.Schema().Lookup(columns[cValue]...)
		pos := pf.Metadata().RowGroups[0].Columns[leaf.ColumnIndex].MetaData.DataPageOffset
		h0, hn, _, err := readPageHeader(bytes.NewReader(data), pos, int64(len(data)), make([]byte, 256))
		if err != nil {
			t.Fatal(err)
		}
		start := pos + int64(hn)
		bad := filepath.Join(t.TempDir(), "seg.parquet")
		var read, damaged, refused int
		for at := start; at < start+int64(h0.CompressedPageSize); at++ {
			for _, x := range []byte{0xff, 0x00, data[at] ^ 0x01} {
				b := slices.Clone(data)
				b[at] = x
				h := h0
				h.CRC = int32(crc32.ChecksumIEEE(b[start : start+int64(h.CompressedPageSize)]))
				hb, err := thriftMarshal(&h)
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(hb)) != int64(hn) {
					continue
				}
				copy(b[pos:], hb)
				if err := os.WriteFile(bad, b, 0o644); err != nil {
					t.Fatal(err)
				}
				var got, want [][]float64
				r := NewColumnReader(NewStrings())
				gerr := r.Read(bad, func(w *Row) { got = append(got, slices.Clone(w.Value)) })
				werr := ReadSegment(bad, func(s *Scrape) error {
					var v []float64
					for _, x := range s.Samples {
						v = append(v, x.Value)
					}
					want = append(want, v)
					return nil
				})
				switch {
				case gerr != nil:
					if !errors.Is(gerr, ErrDamaged) {
						t.Fatalf("byte %d = %#x: %v, not damage", at, x, gerr)
					}
					damaged++
					if werr == nil {
						refused++
						t.Logf("byte %d = %#x: %v; parquet-go read %d rows", at, x, gerr, len(want))
					}
				case werr != nil:
					t.Fatalf("byte %d = %#x: read, parquet-go's read: %v", at, x, werr)
				default:
					for k := range got {
						if k >= len(want) || !slices.EqualFunc(got[k], want[k], func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
							t.Fatalf("byte %d = %#x: row %d differs from parquet-go's", at, x, k)
						}
					}
					read++
				}
			}
		}
		t.Logf("%d changed pages read as parquet-go reads them, %d damaged (%d of which parquet-go read)", read, damaged, refused)
		if damaged == 0 {
			t.Error("no changed page was damage")
		}
	}
}

// valCol reads any bytes as a page without a panic, and allocates no more
// than the page's stated size allows (frameLimit): 3,000 random pages, and
// random changes of a real one, read with random stated sizes.
func TestValColOnAnyBytes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	seed, _ := valueSeed(t)
	for i := range 3000 {
		var b []byte
		if i%2 == 0 {
			b = slices.Clone(seed)
			for range 1 + rnd.IntN(4) {
				b[rnd.IntN(len(b))] = byte(rnd.Uint32())
			}
		} else {
			b = make([]byte, rnd.IntN(200))
			for j := range b {
				b[j] = byte(rnd.Uint32())
			}
		}
		rl, dl := int32(rnd.IntN(min(len(b), 8)+1)), int32(rnd.IntN(min(len(b), 8)+1))
		if rl+dl > int32(len(b)) {
			rl, dl = 0, 0
		}
		full := int32(rnd.IntN(4096))
		v := valCol{r: bytes.NewReader(b), zstd: true, maxDef: 3, maxRep: 1, hdr: make([]byte, 256),
			pages: []v2Page{{size: int32(len(b)), full: full, values: int32(rnd.IntN(600)), rl: rl, dl: dl, compressed: i%3 != 0}}}
		var f []float64
		var err error
		got := allocated(func() { f, err = v.read() })
		if err == nil && int64(len(f))*8 > frameLimit(int64(full)) {
			t.Fatalf("page %d: %d doubles from a page stated %d bytes", i, len(f), full)
		}
		// The raw page, its decompression and its doubles, each with a
		// quarter's room; a decoder's own state.
		if limit := uint64(3*frameLimit(int64(full))) + 1<<20; got > limit {
			t.Fatalf("page %d: %d bytes allocated for a page stated %d", i, got, full)
		}
	}
}

// thriftMarshal is a page header's bytes.
func thriftMarshal(h *format.PageHeader) ([]byte, error) {
	return thrift.Marshal(new(thrift.CompactProtocol), h)
}

// BenchmarkValueChunk reads a segment's value column chunk, held in
// memory as a replay holds a sealed segment, two ways: through
// parquet-go's pages (its decompression, levels and split into its page
// buffers, released after each page) and through valCol (its free lists'
// buffers). The segment is -zstd.segment's, else the first of ../shared's
// real run a-baseline.
func BenchmarkValueChunk(b *testing.B) {
	path := *zstdSegment
	if path == "" {
		m, _ := filepath.Glob("../../../shared/real-runs/llamacpp-b4748/a-baseline/rec/*-000001.parquet")
		if len(m) == 0 {
			b.Skip("../shared's real runs are absent")
		}
		path = m[0]
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	leaf, _ := pf.Schema().Lookup(columns[cValue]...)
	rg := pf.RowGroups()[0]
	md := &pf.Metadata().RowGroups[0].Columns[leaf.ColumnIndex].MetaData
	b.Logf("%s: %d values, %d bytes stored", filepath.Base(path), md.NumValues, md.TotalCompressedSize)
	for _, c := range []struct {
		name string
		read func() (n int)
	}{
		{"parquet-go", func() (n int) {
			pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
			defer pages.Close()
			for {
				p, err := pages.ReadPage()
				if err != nil {
					return n
				}
				d := p.Data()
				n += len(d.Double())
				parquet.Release(p)
			}
		}},
		{"valCol", func() (n int) {
			var v valCol
			if !v.reset(pf, md, leaf) {
				b.Fatal("not read by valCol")
			}
			defer v.release()
			for {
				f, err := v.read()
				if err != nil {
					return n
				}
				n += len(f)
				f64Free.put(f)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU(b)
			var n int
			for b.Loop() {
				n = c.read()
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(n), "values")
		})
	}
}

// valueSeed is the stored bytes of the value page of a 40-row segment the
// recorder's writer makes (zstd), and its header.
func valueSeed(tb testing.TB) ([]byte, format.PageHeader) {
	tb.Helper()
	var rows []Scrape
	for i := range 40 {
		rows = append(rows, row(runR, "a", i))
	}
	path := writeWith(tb, tb.TempDir(), zstdBetter, rows)
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		tb.Fatal(err)
	}
	leaf, _ := pf.Schema().Lookup(columns[cValue]...)
	pos := pf.Metadata().RowGroups[0].Columns[leaf.ColumnIndex].MetaData.DataPageOffset
	h, n, _, err := readPageHeader(bytes.NewReader(data), pos, int64(len(data)), make([]byte, 256))
	if err != nil {
		tb.Fatal(err)
	}
	return data[pos+int64(n) : pos+int64(n)+int64(h.CompressedPageSize)], h
}

// FuzzValCol reads any bytes as a value page with any stated sizes: no
// panic, and no more doubles than its stated size allows.
func FuzzValCol(f *testing.F) {
	f.Add([]byte{}, int32(0), int32(0), int32(0), int32(0), true)
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd}, int32(100), int32(3), int32(0), int32(0), true)
	seed, h := valueSeed(f)
	d := h.DataPageHeaderV2.V
	f.Add(seed, h.UncompressedPageSize, d.NumValues, d.RepetitionLevelsByteLength, d.DefinitionLevelsByteLength, true)
	f.Fuzz(func(t *testing.T, b []byte, full, values, rl, dl int32, compressed bool) {
		if rl < 0 || dl < 0 || int64(rl)+int64(dl) > int64(len(b)) || full < 0 || full > maxPageBytes || values < 0 || values > maxPageValues {
			return // what checkPage refuses before a page is read
		}
		v := valCol{r: bytes.NewReader(b), zstd: true, maxDef: 3, maxRep: 1, hdr: make([]byte, 256),
			pages: []v2Page{{size: int32(len(b)), full: full, values: values, rl: rl, dl: dl, compressed: compressed}}}
		got, err := v.read()
		if err == nil && int64(len(got))*8 > frameLimit(int64(full)) {
			t.Fatalf("%d doubles from a page stated %d bytes", len(got), full)
		}
	})
}
