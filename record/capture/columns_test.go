package capture

import (
	"bytes"
	"compress/gzip"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/damagetest"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	pqgzip "github.com/parquet-go/parquet-go/compress/gzip"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// readColumns reads the segment at path through the column reader, the
// headers column included and the body of some rows (each seeks its own
// pages: all of them made this test eight times slower), failing t on a
// panic; it returns the rows delivered and the error.
func readColumns(t testing.TB, path string) (n int, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s: the column reader panicked: %v", path, p)
		}
	}()
	r := NewColumnReader(NewStrings())
	r.Headers = true
	r.WantBody = func(w *Row) bool { return w.Seq%32 == 0 }
	err = r.Read(path, func(*Row) { n++ })
	if err != nil && !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
	return n, err
}

// readEvery reads the segment at path with every reader of the format:
// the row reader (inspect, export, compaction, find) whole and projected,
// and the column reader (analyze, render). It returns their errors.
func readEvery(t testing.TB, path string) []error {
	t.Helper()
	_, rerr := readDamaged(t, path)
	_, cerr := readColumns(t, path)
	return []error{rerr, cerr}
}

// The column reader reads a segment with random bytes flipped without a
// panic: an error naming the file, or rows. 300 damaged copies of a real
// segment at positions from a fixed seed.
func TestColumnReaderDamagedNeverPanics(t *testing.T) {
	data, err := os.ReadFile(shippedSegment)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), runR+"-000001.parquet")
	var failed int
	for seed := range uint64(300) {
		if err := os.WriteFile(path, damagetest.Flip(data, seed, 1+int(seed%8)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readColumns(t, path); err != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no damaged copy failed to read: the flips missed the file")
	}
}

// writeWith writes rows into a segment of dir through the recorder's
// Parquet writer with codec c, without a seal, and returns its path.
func writeWith(t testing.TB, dir string, c compress.Codec, rows []Scrape) string {
	t.Helper()
	path := filepath.Join(dir, runR+"-000001.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	pw := newParquetWriter(f, nil)
	if c != nil {
		pw = parquet.NewGenericWriter[Scrape](f, parquet.Compression(c), parquet.PageBufferSize(pageBufferSize))
	}
	if err := writeRows(pw, len(rows), func(i int) (Scrape, error) { return rows[i], nil }); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// rowsOfTwo are n rows of two targets.
func rowsOfTwo(n int) []Scrape {
	var rows []Scrape
	for i := range n {
		rows = append(rows, row(runR, []string{"a", "b"}[i%2], i/2))
	}
	return rows
}

// A row group's row count flipped by a bit in a file without a seal was
// read as a shorter file by analyze's reader (712 of 720 rows, exit 0)
// while inspect's said damaged. Both readers now refuse it, naming the
// file, whether the file's own count was flipped too or not.
func TestRowCountFlipIsDamaged(t *testing.T) {
	dir := t.TempDir()
	path := writeWith(t, dir, nil, rowsOfTwo(720))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), footerOf(data), &md); err != nil {
		t.Fatal(err)
	}
	if len(md.RowGroups) != 1 || md.RowGroups[0].NumRows != 720 {
		t.Fatalf("row groups %d, want one of 720 rows", len(md.RowGroups))
	}
	for _, both := range []bool{false, true} {
		md.RowGroups[0].NumRows = 712 // 720 with bit 3 flipped
		md.NumRows = 720
		if both {
			md.NumRows = 712
		}
		footer, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, withFooter(t, data, footer), 0o644); err != nil {
			t.Fatal(err)
		}
		for i, err := range readEvery(t, path) {
			if !errors.Is(err, ErrDamaged) {
				t.Errorf("file's count flipped too %v: reader %d: %v, want damaged", both, i, err)
			}
		}
	}
}

// appendCodec is a codec that puts extra bytes after the first page it
// encodes: what a crafted file holds.
type appendCodec struct {
	compress.Codec
	extra []byte
	done  *bool
}

func (c appendCodec) Encode(dst, src []byte) ([]byte, error) {
	out, err := c.Codec.Encode(dst, src)
	if *c.done {
		return out, err
	}
	*c.done = true
	return append(out, c.extra...), err
}

// rleFrame is a zstd frame of no stated size made of n RLE blocks of 128
// KiB each: 4 bytes a block, 128 KiB decoded.
func rleFrame(n int) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38} // magic, no content size, a 128 KiB window
	for i := range n {
		v := uint32(zstdBlockMax)<<3 | 1<<1
		if i == n-1 {
			v |= 1
		}
		b = append(b, byte(v), byte(v>>8), byte(v>>16), 'x')
	}
	return b
}

// gzipMembers are n gzip members of size zero bytes each.
func gzipMembers(t *testing.T, n, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	zero := make([]byte, size)
	for range n {
		zw := gzip.NewWriter(&b)
		zw.Write(zero)
		zw.Close()
	}
	return b.Bytes()
}

// A page whose compressed data decodes to more than its header states (a
// zstd page with a second frame of no stated size, or gzip members after
// the first) is refused before it is decoded, by every reader, with
// little allocated. Before, parquet-go's decoders made all of it: here
// 512 MB for a zstd page, 160 MB for the gzip one, from files of some
// hundred KB (a 724 KB file made 2 GB, 5 MB ran out of memory).
func TestPagesDecodingPastTheirSizeRefused(t *testing.T) {
	cases := []struct {
		name  string
		codec compress.Codec
	}{
		{"zstd page with a second frame", appendCodec{zstdBetter, rleFrame(4096), new(bool)}},
		{"zstd page with a skippable frame, then one", appendCodec{zstdBetter, append([]byte{0x50, 0x2a, 0x4d, 0x18, 1, 0, 0, 0, 0}, rleFrame(4096)...), new(bool)}},
		{"gzip page with more members", appendCodec{&pqgzip.Codec{}, gzipMembers(t, 20, 8<<20), new(bool)}},
	}
	rows := rowsOfTwo(4)
	for _, c := range cases {
		dir := t.TempDir()
		path := writeWith(t, dir, c.codec, rows)
		st, _ := os.Stat(path)
		var errs []error
		var got uint64
		done := make(chan struct{})
		go func() {
			defer close(done)
			got = allocated(func() { errs = readEvery(t, path) })
		}()
		// Without the bounds the readers decoded for minutes.
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still reading after 30 s", c.name)
		}
		for i, err := range errs {
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s (%d bytes): reader %d: %v, want damaged naming the file", c.name, st.Size(), i, err)
			}
		}
		if got > 32<<20 {
			t.Errorf("%s: reading it allocated %d MB", c.name, got>>20)
		}
	}
	// Intact pages of each codec read.
	for _, c := range []compress.Codec{zstdBetter, zstdFast, &pqgzip.Codec{}} {
		path := writeWith(t, t.TempDir(), c, rows)
		for i, err := range readEvery(t, path) {
			if err != nil {
				t.Errorf("%v: reader %d: %v", c, i, err)
			}
		}
	}
}

// A sparse journal (a few records written, then the size set to 256 MiB:
// a crashed journal's trace, or a crafted one) is read by its data: the
// records come back, the rest counts as a torn tail, and reading it
// allocates about the data, where it read the whole stated size (8 GiB:
// out of memory).
func TestSparseJournalReadByData(t *testing.T) {
	dir := t.TempDir()
	rows := rowsOfTwo(6)
	path := crashJournal(t, dir, runR, 1, rows...)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	const apparent = 256 << 20
	if err := os.Truncate(path, apparent); err != nil {
		t.Fatal(err)
	}
	var got []Scrape
	var jst journalStats
	n := allocated(func() { got, jst, err = scanJournal(path) })
	if err != nil || len(got) != len(rows) {
		t.Fatalf("%d rows, %v; want %d", len(got), err, len(rows))
	}
	if jst.Torn != apparent-st.Size() {
		t.Errorf("torn %d, want the %d bytes past the data", jst.Torn, apparent-st.Size())
	}
	if n > 8<<20 {
		t.Errorf("reading a journal of %d bytes of data allocated %d MB", st.Size(), n>>20)
	}
	run, err := Open(dir)
	if err != nil || len(run.Crashed) != 1 {
		t.Fatalf("open: %v", err)
	}
	rep := Inspect(run)
	if rep.Rows != int64(len(rows)) {
		t.Errorf("inspect counts %d rows, want %d", rep.Rows, len(rows))
	}
}

// The writer never writes what its readers refuse: a segment holding the
// most each cap allows (every row's headers at MaxHeaderBytes, the headers
// a target sent over it cut to fit) reads back whole with every reader,
// and the healthy target's rows with it. The headers of a 6.8 MB answer
// are cut, with a note that says so.
func TestWorstCaseRowsReadBack(t *testing.T) {
	huge := map[string]string{}
	for i := range 100_000 {
		huge["X-Filler-"+strings.Repeat("f", 20)+string(rune('a'+i%26))+strings.Repeat("0", i%7)+strconv.Itoa(i)] = strings.Repeat("v", 40)
	}
	h := EncodeHeaders(huge)
	if len(*h) > MaxHeaderBytes || !strings.Contains(*h, HeadersOverCap) {
		t.Fatalf("headers of 100,000 fields: %d bytes, note %v", len(*h), strings.Contains(*h, HeadersOverCap))
	}
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const n = 400 // 25 MB of headers: several batches, pages and a row group's worth
	over := strings.Repeat("z", MaxHeaderBytes+1)
	for i := range n {
		bad, good := row(runR, "bad", i), row(runR, "good", i)
		hv := *h
		if i%2 == 1 {
			hv = over // a caller that did not cut them: the writer does
		}
		bad.Headers = &hv
		for _, s := range []Scrape{bad, good} {
			if err := w.Append(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	readBack(t, dir, 2*n, func(r *ColumnReader) { r.Headers = true }, func(w *Row) {
		if len(w.Headers) > MaxHeaderBytes {
			t.Fatalf("a row's headers of %d bytes", len(w.Headers))
		}
	})
}

// readBack reads every segment in dir with every reader (rows, columns,
// sealed columns as set by opt, inspect), each row through check, and
// wants n rows and no problem.
func readBack(t *testing.T, dir string, n int64, opt func(*ColumnReader), check func(*Row)) {
	t.Helper()
	run, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	seals, err := ReadSeals(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, seg := range run.Segments {
		for i, err := range readEvery(t, seg) {
			if err != nil {
				t.Fatalf("reader %d: %v", i, err)
			}
		}
		r := NewColumnReader(NewStrings())
		opt(r)
		got, err := r.ReadSealed(seals, seg, check)
		if err != nil {
			t.Fatal(err)
		}
		total += got
	}
	if total != n {
		t.Fatalf("%d rows read, want %d", total, n)
	}
	if rep := Inspect(run); rep.Rows != n || len(rep.Problems) != 0 {
		t.Fatalf("inspect: %d rows, problems %v", rep.Rows, rep.Problems)
	}
}

// FuzzColumnReader reads mutated segments through the column reader (the
// headers column and the bodies included), seeded with a real recording,
// a segment with headers and a crafted one: never a panic, and either an
// error naming the file or rows.
//
//	go test ./record/capture -run X -fuzz FuzzColumnReader -fuzztime 10s -fuzzminimizetime 0
func FuzzColumnReader(f *testing.F) {
	intact := segmentSeeds(f)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, runR+"-000001.parquet")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := readColumns(t, path)
		if err == nil && n == 0 && intact(b) {
			t.Fatal("an intact segment read no row")
		}
	})
}

// headersSegment is a small segment whose rows carry headers, one of them
// cut at the cap.
func headersSegment(t testing.TB) []byte {
	dir := t.TempDir()
	rows := rowsOfTwo(6)
	hs := []string{`{"Content-Type":"text/plain","Server":"llama.cpp"}`, `{"Date":"Thu, 03 Dec 2026 12:00:00 GMT","X-Process-Start":"<redacted sha256:0d08cfe0>"}`}
	for i := range rows {
		if i%3 != 2 {
			rows[i].Headers = &hs[i%3]
		}
	}
	many := map[string]string{}
	for i := range 3000 {
		many["X-H"+strconv.Itoa(i)] = strings.Repeat("v", 30)
	}
	rows[0].Headers = EncodeHeaders(many)
	path := filepath.Join(dir, runR+"-000001.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	pw := newParquetWriter(f, zstdFast)
	if err := writeRows(pw, len(rows), func(i int) (Scrape, error) { return rows[i], nil }); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The worst body each cap allows reads back too: two incompressible bodies
// of MaxBodyBytes, each beside a healthy target's rows, in one segment,
// read by every reader (rows, columns, sealed, inspect).
func TestWorstCaseBodiesReadBack(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 200 MiB of bodies")
	}
	big := make([]byte, MaxBodyBytes)
	rand.New(rand.NewSource(1)).Read(big)
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2
	for i := range n {
		bad, good := row(runR, "bad", i), row(runR, "good", i)
		bad.Body, bad.Samples = big, nil
		for _, s := range []Scrape{bad, good} {
			if err := w.Append(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var tab *Strings
	readBack(t, dir, 2*n, func(r *ColumnReader) {
		tab = r.Tab
		r.WantBody = func(*Row) bool { return true }
	}, func(w *Row) {
		if tab.Str(w.Target) == "bad" && len(w.Body) != MaxBodyBytes {
			t.Fatalf("a body of %d bytes read back, want %d", len(w.Body), MaxBodyBytes)
		}
	})
}
