package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/damagetest"
)

// shippedSegment is a real merged segment, recorded by llmrec record
// (captures/findings): 120 s of two simulated engines.
const shippedSegment = "../../captures/findings/run/20261202T125444Z-2ff2b5ba-000001_000002.parquet"

// readDamaged reads the segment at path whole and as inspect's projection,
// failing t on a panic; it returns the rows and the error of the whole read.
func readDamaged(t testing.TB, path string) (n int, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s: ReadSegment panicked: %v", path, p)
		}
	}()
	err = ReadSegment(path, func(*Scrape) error { n++; return nil })
	if err != nil && !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
	if perr := ReadScrapes(path, OmitSamples|OmitHeaders, func(*Scrape) error { return nil }); perr != nil && !strings.Contains(perr.Error(), path) {
		t.Errorf("error %q does not name the file", perr)
	}
	return n, err
}

// A segment with random bytes flipped is read without a panic: an error
// that names the file, or rows. 300 damaged copies of a real segment, at
// positions from a fixed seed (before the recover, 5 of them panicked
// inside parquet-go: slice bounds out of range).
func TestReadSegmentDamagedNeverPanics(t *testing.T) {
	data, err := os.ReadFile(shippedSegment)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var failed int
	for seed := range uint64(300) {
		path := filepath.Join(dir, runR+"-000001.parquet")
		if err := os.WriteFile(path, damagetest.Flip(data, seed, 1+int(seed%8)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readDamaged(t, path); err != nil {
			failed++
		}
	}
	// Not every flip is seen by Parquet: that is what the seals are for.
	if failed == 0 {
		t.Fatal("no damaged copy failed to read: the flips missed the file")
	}
}

// sealedRun records rows of two targets into a run folder R, in two
// one-minute segments merged into one file (R-000001_000002.parquet), and
// returns the folder, the merged file and its rows.
func sealedRun(t *testing.T) (dir, merged string, rows int64) {
	t.Helper()
	dir = t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(2)
	for seg := range 2 {
		for i := range 20 {
			for _, target := range []string{"a", "b"} {
				if err := w.Append(row(runR, target, seg*20+i)); err != nil {
					t.Fatal(err)
				}
				rows++
			}
		}
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.CloseMerged(); err != nil {
		t.Fatal(err)
	}
	merged = filepath.Join(dir, runR+"-000001_000002.parquet")
	if _, err := os.Stat(merged); err != nil {
		t.Fatal(err)
	}
	return dir, merged, rows
}

// Every Parquet file written has a seal: the one-minute segments and the
// merged file, each with the rows it holds, its size and CRC-32C.
func TestSealsRecordEveryFile(t *testing.T) {
	dir, merged, rows := sealedRun(t)
	seals, err := ReadSeals(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{runR + "-000001.parquet", runR + "-000002.parquet"} {
		if s := seals[name]; len(s) != 1 || s[0].Rows != rows/2 {
			t.Errorf("seal of %s: %+v, want one of %d rows", name, s, rows/2)
		}
	}
	s, err := seals.Verify(merged)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(merged)
	if s == nil || s.Rows != rows || s.Bytes != st.Size() {
		t.Fatalf("merged file's seal %+v, want %d rows and %d bytes", s, rows, st.Size())
	}
	// A file without a seal (recorded before the ledger) is unverified.
	data, _ := os.ReadFile(merged)
	const oldRun = "20250101T000000Z-0000000f" // a recording made before seals
	old := filepath.Join(dir, oldRun+"-000001.parquet")
	if err := os.WriteFile(old, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := seals.Verify(old); s != nil || err != nil {
		t.Fatalf("unsealed file: %+v, %v; want unverified", s, err)
	}
}

// The seal is written before the file is put in place: a ledger that
// cannot be written leaves no file.
func TestSealBeforeRename(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, runR+sealsSuffix), 0o755); err != nil { // not a file: appends fail
		t.Fatal(err)
	}
	var e encoder
	_, err := e.writeSegment(filepath.Join(dir, runR+"-000001.parquet"), []Scrape{row(runR, "a", 0)})
	if err == nil {
		t.Fatal("sealing into a folder named like the ledger succeeded")
	}
	if names, _ := filepath.Glob(filepath.Join(dir, runR+"-000001.parquet*")); len(names) != 0 {
		t.Fatalf("left %v without a seal", names)
	}
}

// footerBits are single-bit positions in the footer of the Parquet file
// data (its thrift metadata, its length and the magic), drawn from a fixed
// seed, and always the footer's first and last bit.
func footerBits(data []byte, n int) []int {
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	start := len(data) - 8 - flen
	rng := rand.New(rand.NewPCG(7, 7))
	bits := []int{start * 8, len(data)*8 - 1}
	for range n {
		bits = append(bits, start*8+rng.IntN((flen+8)*8))
	}
	return bits
}

// One bit flipped anywhere in a sealed file's footer is detected: the file
// differs from its seal, and readers skip it whole.
func TestSealsDetectFooterFlips(t *testing.T) {
	dir, merged, _ := sealedRun(t)
	data, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	seals, err := ReadSeals(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, bit := range footerBits(data, 200) {
		bad := bytes.Clone(data)
		bad[bit/8] ^= 1 << (bit % 8)
		if err := os.WriteFile(merged, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := seals.Verify(merged); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), merged) {
			t.Fatalf("bit %d flipped: %v, want a damaged file named", bit, err)
		}
	}
	// A file cut short, or grown, differs by its size.
	if err := os.WriteFile(merged, data[:len(data)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := seals.Verify(merged); err == nil || !strings.Contains(err.Error(), "bytes, sealed with") {
		t.Fatalf("a file cut short: %v", err)
	}
}

// A crash inside a ledger append leaves a last line without its newline:
// dropped (its file never reached its name). A damaged line elsewhere is
// reported and its file is unverified; the other seals still hold.
func TestReadSealsDamagedLedger(t *testing.T) {
	dir, merged, rows := sealedRun(t)
	ledger := filepath.Join(dir, runR+sealsSuffix)
	f, err := os.OpenFile(ledger, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"file":"` + runR + `-000003.parq`)
	f.Close()
	seals, err := ReadSeals(dir)
	if err != nil {
		t.Fatalf("torn last line: %v", err)
	}
	if s, err := seals.Verify(merged); err != nil || s.Rows != rows {
		t.Fatalf("after a torn last line: %+v, %v", s, err)
	}
	data, _ := os.ReadFile(ledger)
	lines := strings.SplitAfter(string(data), "\n")
	lines[0] = "garbage\n"
	os.WriteFile(ledger, []byte(strings.Join(lines, "")), 0o644)
	seals, err = ReadSeals(dir)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), ledger+":1") {
		t.Fatalf("a damaged first line: %v, want it named", err)
	}
	if s, err := seals.Verify(merged); err != nil || s.Rows != rows {
		t.Fatalf("the other seals after a damaged line: %+v, %v", s, err)
	}
}

// inspect skips a file that differs from its seal (its rows not counted,
// the file listed under problems) and marks a file without a seal
// unverified.
func TestInspectSkipsDamaged(t *testing.T) {
	dir, merged, rows := sealedRun(t)
	data, _ := os.ReadFile(merged)
	const oldRun = "20250101T000000Z-0000000f" // a recording made before seals
	old := filepath.Join(dir, oldRun+"-000001.parquet")
	if err := os.WriteFile(old, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := Inspect(r)
	if len(rep.Problems) != 0 || rep.Rows != 2*rows || len(rep.Segments) != 2 {
		t.Fatalf("intact: %d rows, problems %v, segments %+v", rep.Rows, rep.Problems, rep.Segments)
	}
	for _, s := range rep.Segments {
		if want := s.File != oldRun+"-000001.parquet"; s.Verified != want {
			t.Errorf("%s verified %v, want %v", s.File, s.Verified, want)
		}
	}
	// One bit in a body: Parquet reads it fine, the seal does not.
	bad := bytes.Clone(data)
	bad[len(bad)/3] ^= 0x10
	os.WriteFile(merged, bad, 0o644)
	rep = Inspect(r)
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], merged) || rep.Rows != rows || len(rep.Segments) != 1 {
		t.Fatalf("damaged: %d rows, want %d; problems %v", rep.Rows, rows, rep.Problems)
	}
	// export finds a row in the intact copy, the damaged file skipped...
	if s, err := Find(r, "", "a", EndpointMetrics, 3); err != nil || s.Seq != 3 {
		t.Fatalf("the row in the intact copy: %v", err)
	}
	// ...and names the damaged file when no other has it.
	os.Remove(old)
	r.Segments = []string{merged}
	if _, err := Find(r, "", "a", EndpointMetrics, 3); err == nil || !strings.Contains(err.Error(), merged) {
		t.Fatalf("a row of the damaged file: %v, want the skipped file named", err)
	}
}

// Compaction reading a source back from its file checks it against its
// seal first: a damaged source stops the merge and stays as it is, rather
// than being laundered into a merged file with a fresh seal.
func TestCompactionRefusesDamagedSource(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(0)
	for seg := range 2 {
		for i := range 10 {
			if err := w.Append(row(runR, "a", seg*10+i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, runR+"-000001.parquet")
	data, _ := os.ReadFile(first)
	data[len(data)/2] ^= 1
	os.WriteFile(first, data, 0o644)
	var e encoder
	err = compact(&e, dir, runR, []int{1, 2}, nil, nil)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), first) {
		t.Fatalf("compact over a damaged source: %v", err)
	}
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("damaged source removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, runR+"-000001_000002.parquet")); err == nil {
		t.Fatal("merged a damaged source")
	}
}

// FuzzReadSegment reads mutated segments whole (ReadSegment: inspect,
// export, compaction), seeded with a real recording and a segment with
// headers: never a panic, and either an error naming the file or rows. A
// file read whole reads as analyze reads it too, the same rows: the two
// are one reader, which reads fewer columns for analyze.
//
//	go test ./record/capture -run X -fuzz FuzzReadSegment -fuzztime 10s
func FuzzReadSegment(f *testing.F) {
	intact := segmentSeeds(f)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, runR+"-000001.parquet")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := readDamaged(t, path)
		if err == nil && n == 0 && intact(b) {
			t.Fatal("the intact segment read no row")
		}
		if err == nil {
			r := NewColumnReader(NewStrings())
			r.Headers = true
			var m int
			if cerr := r.Read(path, func(*Row) { m++ }); cerr != nil || m != n {
				t.Fatalf("read whole: %d rows; as analyze reads it: %d rows, %v", n, m, cerr)
			}
		}
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("sealOf panicked: %v", p)
			}
		}()
		sealOf(path)
	})
}

// segmentSeeds seeds f with a real recording, a segment with headers (one
// row's cut at the cap) and damaged copies of both; intact says whether b
// is one of the two intact.
func segmentSeeds(f *testing.F) (intact func(b []byte) bool) {
	data, err := os.ReadFile(shippedSegment)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for seed := range uint64(8) {
		f.Add(damagetest.Flip(data, seed, 1+int(seed)))
	}
	withHeaders := headersSegment(f)
	f.Add(withHeaders)
	for seed := range uint64(4) {
		f.Add(damagetest.Flip(withHeaders, seed, 1+int(seed)))
	}
	return func(b []byte) bool { return bytes.Equal(b, data) || bytes.Equal(b, withHeaders) }
}

// The seal's cost: CRC-32C over a file as large as a ten-minute merged file
// of eight vLLM engines at 2 s (2,400 scrapes at about 2 KB: 5 MB; a day
// is 144 of them), and the whole of sealOf (read back, CRC, footer) on the
// shipped 130 KB segment.
//
//	go test ./record/capture -run X -bench 'Seal|CRC' -benchtime 2s
func BenchmarkCRC32C(b *testing.B) {
	for _, size := range []int{600 << 10, 5 << 20, 64 << 20} {
		buf := make([]byte, size)
		rand.NewChaCha8([32]byte{1}).Read(buf)
		b.Run(byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				crc32.Checksum(buf, castagnoli)
			}
		})
	}
}

func BenchmarkSealOf(b *testing.B) {
	for _, size := range []int{0, 5 << 20, 64 << 20} {
		data, err := os.ReadFile(shippedSegment)
		if err != nil {
			b.Fatal(err)
		}
		name := "shipped"
		if size > 0 {
			data = paddedSegment(b, data, size)
			name = byteSize(size)
		}
		path := filepath.Join(b.TempDir(), runR+"-000001.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sealOf(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// paddedSegment is the shipped segment grown to size bytes by random
// filler after its leading magic: the CRC reads every byte, and the footer
// is found from the end (its offsets into the pages, now wrong, are not
// followed by sealOf).
func paddedSegment(b *testing.B, data []byte, size int) []byte {
	b.Helper()
	filler := make([]byte, size-len(data))
	rand.NewChaCha8([32]byte{2}).Read(filler)
	out := append(bytes.Clone(data[:4]), filler...)
	return append(out, data[4:]...)
}

func byteSize(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + "MiB"
	}
	return strconv.Itoa(n>>10) + "KiB"
}
