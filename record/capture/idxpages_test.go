package capture

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/format"
)

// seriesOf reads the segment at path as a replay does (not whole), with a
// Same hook that knows no row (every row's names and labels read through
// their indexes) or none, and returns every row's names and labels as
// strings, and whether every row group's name and labels columns were
// read by idxCol.
func seriesOf(t *testing.T, path string, same bool) (names, labels [][]string, own bool) {
	t.Helper()
	tab := NewStrings()
	r := NewColumnReader(tab)
	if same {
		r.Same = func(*Row) bool { return false }
	}
	own = true
	err := r.Read(path, func(w *Row) {
		var n, l []string
		for j := range w.Name {
			n, l = append(n, tab.Str(w.Name[j])), append(l, tab.Str(w.Labels[j]))
		}
		names, labels = append(names, n), append(labels, l)
		own = own && r.cur[cName].ixs != nil && r.cur[cLabels].ixs != nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, labels, own
}

// wholeSeries is every row's names and labels as a whole read
// (ReadSegment: parquet-go's pages) has them.
func wholeSeries(t *testing.T, path string) (names, labels [][]string, err error) {
	t.Helper()
	err = ReadSegment(path, func(s *Scrape) error {
		var n, l []string
		for _, x := range s.Samples {
			n, l = append(n, x.Name), append(l, x.Labels)
		}
		names, labels = append(names, n), append(labels, l)
		return nil
	})
	return names, labels, err
}

// pagesSeries is seriesOf with parquet-go reading every page.
func pagesSeries(t *testing.T, path string, same bool) (names, labels [][]string, err error) {
	t.Helper()
	readIdxPages = false
	defer func() { readIdxPages = true }()
	tab := NewStrings()
	r := NewColumnReader(tab)
	if same {
		r.Same = func(*Row) bool { return false }
	}
	err = r.Read(path, func(w *Row) {
		var n, l []string
		for j := range w.Name {
			n, l = append(n, tab.Str(w.Name[j])), append(l, tab.Str(w.Labels[j]))
		}
		names, labels = append(names, n), append(labels, l)
	})
	return names, labels, err
}

// checkSeries checks that a replay's read of path has the names and
// labels a whole read has, both ways, and returns whether idxCol read them.
func checkSeries(t *testing.T, path string) bool {
	t.Helper()
	wn, wl, err := wholeSeries(t, path)
	if err != nil {
		t.Fatal(err)
	}
	own := true
	for _, same := range []bool{false, true} {
		n, l, o := seriesOf(t, path, same)
		own = own && o
		if len(n) != len(wn) {
			t.Fatalf("%s: %d rows, a whole read %d", path, len(n), len(wn))
		}
		for k := range n {
			if !slices.Equal(n[k], wn[k]) || !slices.Equal(l[k], wl[k]) {
				t.Fatalf("%s (Same %v): row %d: %d names, %d labels differ from a whole read's %d, %d", path, same, k, len(n[k]), len(l[k]), len(wn[k]), len(wl[k]))
			}
		}
	}
	return own
}

// idxRows are rows of many shapes: histograms of 1 to 40 buckets (runs of
// one name), counters of many labels (bit-packed indexes of every width
// up to 10 bits), and rows without samples (a failed scrape: definition
// levels below the maximum).
func idxRows(n int) []Scrape {
	var rows []Scrape
	for i := range n {
		s := row(runR, []string{"a", "b", "c"}[i%3], i/3)
		switch {
		case i%17 == 5:
			msg := "connection refused"
			s.Outcome, s.Body, s.Samples, s.Error = OutcomeError, nil, nil, &msg
		default:
			var b bytes.Buffer
			fmt.Fprintf(&b, "# TYPE lat histogram\n")
			for k := range 1 + (i*7)%40 {
				fmt.Fprintf(&b, "lat_bucket{le=\"%d\"} %d\n", k, i+k)
			}
			fmt.Fprintf(&b, "lat_count %d\nlat_sum %d\n# TYPE req counter\n", i, i)
			for k := range (i * 13) % 300 {
				fmt.Fprintf(&b, "req_total{id=\"%d\"} %d\n", (k*31+i)%700, k)
			}
			s.Body = b.Bytes()
			Parse(&s)
		}
		rows = append(rows, s)
	}
	return rows
}

// The names and labels idxCol reads are parquet-go's: in the repository's
// segment, ../shared's real runs (and -valpages.dir's segments), and
// written segments of many shapes and small pages (a row's samples across
// pages); snappy and version 1 pages are read by parquet-go.
func TestIndexesAsParquetGo(t *testing.T) {
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
		if !checkSeries(t, path) {
			t.Errorf("%s: not read by idxCol", path)
		}
	}
	dir := t.TempDir()
	rows := idxRows(400)
	for _, c := range []struct {
		name  string
		opts  []parquet.WriterOption
		codec parquet.WriterOption
		own   bool
	}{
		{"one page", nil, parquet.Compression(zstdBetter), true},
		{"small pages", []parquet.WriterOption{parquet.PageBufferSize(2 << 10)}, parquet.Compression(zstdBetter), true},
		{"tiny pages", []parquet.WriterOption{parquet.PageBufferSize(256)}, parquet.Compression(zstdBetter), true},
		{"uncompressed", nil, parquet.Compression(&parquet.Uncompressed), true},
		{"uncompressed small pages", []parquet.WriterOption{parquet.PageBufferSize(2 << 10)}, parquet.Compression(&parquet.Uncompressed), true},
		{"snappy", nil, parquet.Compression(&parquet.Snappy), false},
		{"v1 pages", []parquet.WriterOption{parquet.DataPageVersion(1)}, parquet.Compression(zstdBetter), false},
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
		if got := checkSeries(t, path); got != c.own {
			t.Errorf("%s: read by idxCol %v, want %v", c.name, got, c.own)
		}
	}
}

// A name or labels page with any byte changed (its checksum stated anew)
// reads as parquet-go's pages read it (in the same replay's read) or is
// damage: never a panic, never other
// names or labels without an error. Every byte of each page of an
// uncompressed segment and of a zstd one.
func TestIndexPageDamageIsAnError(t *testing.T) {
	rows := idxRows(4)
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
		if !checkSeries(t, f.Name()) {
			t.Fatal("the intact segment is not read by idxCol")
		}
		for _, col := range []int{cName, cLabels} {
			leaf, _ := pf.Schema().Lookup(columns[col]...)
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
					for _, same := range []bool{false, true} {
						tab := NewStrings()
						r := NewColumnReader(tab)
						if same {
							r.Same = func(*Row) bool { return false }
						}
						var gn, gl [][]string
						gerr := r.Read(bad, func(w *Row) {
							var n, l []string
							for j := range w.Name {
								n, l = append(n, tab.Str(w.Name[j])), append(l, tab.Str(w.Labels[j]))
							}
							gn, gl = append(gn, n), append(gl, l)
						})
						wn, wl, werr := pagesSeries(t, bad, same)
						switch {
						case gerr != nil:
							if !errors.Is(gerr, ErrDamaged) {
								t.Fatalf("%s byte %d = %#x: %v, not damage", columns[col], at, x, gerr)
							}
							damaged++
							if werr == nil {
								refused++
								t.Logf("%s byte %d = %#x: %v; parquet-go's pages read %d rows", columns[col], at, x, gerr, len(wn))
							}
						case werr != nil:
							t.Fatalf("%s byte %d = %#x: read, parquet-go's read: %v", columns[col], at, x, werr)
						default:
							if len(gn) != len(wn) {
								t.Fatalf("%s byte %d = %#x: %d rows, parquet-go %d", columns[col], at, x, len(gn), len(wn))
							}
							for k := range gn {
								if !slices.Equal(gn[k], wn[k]) || !slices.Equal(gl[k], wl[k]) {
									t.Fatalf("%s byte %d = %#x: row %d differs from parquet-go's", columns[col], at, x, k)
								}
							}
							read++
						}
					}
				}
			}
			t.Logf("%s: %d changed pages read as parquet-go reads them, %d damaged (%d of which parquet-go read)", columns[col], read, damaged, refused)
			if damaged == 0 {
				t.Errorf("%s: no changed page was damage", columns[col])
			}
		}
	}
}

// unpackIdx and unpackLevels read what parquet-go's encoders write: runs
// and bit-packed groups of every width, counts that end inside a group.
func TestUnpackReadsTheEncoding(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for width := 0; width <= 32; width++ {
		for _, n := range []int{0, 1, 7, 8, 9, 100, 3001} {
			vals := make([]int32, n)
			for i := range vals {
				switch {
				case rnd.IntN(3) == 0 || width == 0:
					vals[i] = vals[max(i-1, 0)]
				default:
					vals[i] = int32(uint32(rnd.Uint64()) & uint32(1<<width-1))
				}
				if rnd.IntN(50) == 0 { // a long run
					for j := i + 1; j < min(i+40, n); j++ {
						vals[j] = vals[i]
					}
				}
			}
			var enc rle.DictionaryEncoding
			b, err := enc.EncodeInt32(nil, vals)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 && int(b[0]) > width {
				t.Fatalf("width %d encoded as %d", width, b[0])
			}
			var got []int32
			if len(b) > 0 {
				src := append(make([]byte, 0, len(b)+idxPad), b...)
				got = make([]int32, n, n+8)
				if err := unpackIdx(got, src[1:], uint(src[0])); err != nil {
					t.Fatalf("width %d, %d values: %v", width, n, err)
				}
			}
			want, err := enc.DecodeInt32(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, vals) || !slices.Equal(got, want[:n]) {
				t.Fatalf("width %d, %d values: unpacked %v, want %v", width, n, got, vals)
			}
			if width < 1 || width > 8 {
				continue
			}
			levels := make([]byte, n)
			for i := range levels {
				levels[i] = byte(vals[i])
			}
			le := rle.Encoding{BitWidth: width}
			lb, err := le.EncodeLevels(nil, levels)
			if err != nil {
				t.Fatal(err)
			}
			gl := make([]byte, n)
			var lw byte // the level counted
			if n > 0 {
				lw = levels[n/2]
			}
			holes := make([]int32, 0)
			match, first, err := unpackLevels(gl, n, lb, uint(width), int(lw), &holes)
			if err != nil || !bytes.Equal(gl, levels) || match != bytes.Count(levels, []byte{lw}) || (n > 0 && first != levels[0]) {
				t.Fatalf("levels of width %d, %d values: %v, %v (%d of %d, first %d), want %v", width, n, err, gl, match, lw, first, levels)
			}
			// The levels other than lw, when few enough to keep.
			var wantHoles []int32
			for j, v := range levels {
				if v != lw {
					wantHoles = append(wantHoles, int32(j))
				}
			}
			if (len(wantHoles) <= n/16) != (holes != nil) || (holes != nil && !slices.Equal(holes, wantHoles) && len(wantHoles) > 0) {
				t.Fatalf("levels of width %d, %d values: holes %v, want %v", width, n, holes, wantHoles)
			}
			// Counted alone, the same.
			if m, f, err := unpackLevels(nil, n, lb, uint(width), int(lw), nil); err != nil || m != match || f != first {
				t.Fatalf("levels of width %d, %d values, counted: %v, %d, %d; unpacked %d, %d", width, n, err, m, f, match, first)
			}
			// More levels asked for than the runs hold: an error.
			if _, _, err := unpackLevels(make([]byte, n+9), n+9, lb, uint(width), 0, nil); err == nil {
				t.Fatalf("levels of width %d: %d read from runs of %d", width, n+9, n)
			}
		}
	}
}

// idxCol reads any bytes as a page without a panic, and allocates no more
// than the page's stated sizes allow: 3,000 random pages and random
// changes of a real one, read with random stated sizes.
func TestIdxColOnAnyBytes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 10))
	seed, _ := idxSeed(t)
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
		full, values := int32(rnd.IntN(4096)), int32(rnd.IntN(600))
		got := readIdxPage(t, b, full, values, int32(rnd.IntN(20)), rl, dl, i%3 != 0, i%5 != 0)
		// The raw page, its decompression, its indexes and levels; a
		// decoder's own state.
		if limit := uint64(2*frameLimit(int64(full))+int64(values)*6) + 1<<20; got > limit {
			t.Fatalf("page %d: %d bytes allocated for a page stated %d bytes, %d values", i, got, full, values)
		}
	}
}

// readIdxPage reads b as a page of the stated sizes through an idxCol,
// checks that it made no more indexes or levels than stated, and returns
// the bytes allocated.
func readIdxPage(t *testing.T, b []byte, full, values, nulls, rl, dl int32, compressed, levels bool) uint64 {
	x := idxCol{r: bytes.NewReader(b), zstd: true, maxDef: 3, maxRep: 1, levels: levels, hdr: make([]byte, 256),
		pages: []v2Page{{size: int32(len(b)), full: full, values: values, nulls: nulls, rl: rl, dl: dl, compressed: compressed}}}
	var p idxPage
	var err error
	got := allocated(func() { p, err = x.read() })
	if err == nil && (len(p.idx) > int(values) || len(p.reps) > int(values) || len(p.defs) > int(values) || p.n != int(values)) {
		t.Fatalf("%d indexes, %d and %d levels from a page stated %d values", len(p.idx), len(p.reps), len(p.defs), values)
	}
	if err != nil && !errors.Is(err, ErrDamaged) {
		t.Fatalf("%v, not damage", err)
	}
	p.drop()
	x.release()
	return got
}

// idxSeed is the stored bytes of the name page of a 40-row segment the
// recorder's writer makes (zstd), and its header.
func idxSeed(tb testing.TB) ([]byte, format.PageHeader) {
	tb.Helper()
	path := writeWith(tb, tb.TempDir(), zstdBetter, idxRows(40))
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		tb.Fatal(err)
	}
	leaf, _ := pf.Schema().Lookup(columns[cName]...)
	pos := pf.Metadata().RowGroups[0].Columns[leaf.ColumnIndex].MetaData.DataPageOffset
	h, n, _, err := readPageHeader(bytes.NewReader(data), pos, int64(len(data)), make([]byte, 256))
	if err != nil {
		tb.Fatal(err)
	}
	return data[pos+int64(n) : pos+int64(n)+int64(h.CompressedPageSize)], h
}

// FuzzIdxCol reads any bytes as a page of indexes with any stated sizes:
// no panic, no more indexes or levels than stated.
func FuzzIdxCol(f *testing.F) {
	f.Add([]byte{}, int32(0), int32(0), int32(0), int32(0), int32(0), true, true)
	seed, h := idxSeed(f)
	d := h.DataPageHeaderV2.V
	f.Add(seed, h.UncompressedPageSize, d.NumValues, d.NumNulls, d.RepetitionLevelsByteLength, d.DefinitionLevelsByteLength, true, true)
	f.Add(seed, h.UncompressedPageSize, d.NumValues, d.NumNulls, d.RepetitionLevelsByteLength, d.DefinitionLevelsByteLength, true, false)
	f.Fuzz(func(t *testing.T, b []byte, full, values, nulls, rl, dl int32, compressed, levels bool) {
		if rl < 0 || dl < 0 || int64(rl)+int64(dl) > int64(len(b)) || full < 0 || full > maxPageBytes || values < 0 || values > maxPageValues {
			return // what checkPage refuses before a page is read
		}
		readIdxPage(t, b, full, values, nulls, rl, dl, compressed, levels)
	})
}

// BenchmarkIndexChunk reads a segment's name and labels column chunks,
// held in memory as a replay holds a sealed segment, two ways: through
// parquet-go's pages (its decompression, levels and indexes into its page
// buffers, released after each page) and through idxCol (the names'
// repetition levels unpacked, the labels' counted, as a replay reads
// them). The segment is -zstd.segment's, else the first of ../shared's
// real run a-baseline.
func BenchmarkIndexChunk(b *testing.B) {
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
	rg := pf.RowGroups()[0]
	type chunk struct {
		leaf parquet.LeafColumn
		md   *format.ColumnMetaData
	}
	var chunks []chunk
	for _, col := range []int{cName, cLabels} {
		leaf, _ := pf.Schema().Lookup(columns[col]...)
		md := &pf.Metadata().RowGroups[0].Columns[leaf.ColumnIndex].MetaData
		b.Logf("%s %s: %d values, %d bytes stored", filepath.Base(path), columns[col], md.NumValues, md.TotalCompressedSize)
		chunks = append(chunks, chunk{leaf, md})
	}
	for _, c := range []struct {
		name string
		read func() (n int)
	}{
		{"parquet-go", func() (n int) {
			for _, ch := range chunks {
				pages := rg.ColumnChunks()[ch.leaf.ColumnIndex].Pages()
				for {
					p, err := pages.ReadPage()
					if err != nil {
						break
					}
					d := p.Data()
					n += len(d.Int32())
					parquet.Release(p)
				}
				pages.Close()
			}
			return n
		}},
		{"idxCol", func() (n int) {
			for k, ch := range chunks {
				var x idxCol
				if !x.reset(pf, ch.md, ch.leaf, k == 0) {
					b.Fatal("not read by idxCol")
				}
				for {
					p, err := x.read()
					if err != nil {
						break
					}
					n += len(p.idx)
					p.drop()
				}
				x.release()
			}
			return n
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
